"""What a self-play run learnt, counted from its evaluation logs: each player's choices by role and phase.

    python -m socialgym_benchmarks.studies.selfplay_learned runs/selfplay_resistance/evaluation.jsonl [--players selfplay:step0,selfplay:step40]
    python -m socialgym_benchmarks.studies.selfplay_learned runs/selfplay_werewolves/evaluation.jsonl --targets   # whom it kills, votes
    ... --against scripted:heuristic     # only the episodes against the heuristic (the same deals before and after)

Reads episode records (``socialgym_training/selfplay/``'s ``evaluation.jsonl`` or
``tournament.jsonl``) and counts, per player (the roster's ``policy``), role and phase, how often
each action word (the action's first word: ``fail``, ``approve``, ``say``...) was played, and
in how many episodes the player held that role; with ``--targets``, an action whose argument
names one player counts as the word and that player's role (``kill Seer``, ``vote Werewolf``: a
wolf voting out its partner), read from the roster after the fact. With ``--players A,B`` it prints the two side by
side, as shares of the player's turns in that role and phase. The counts are turns, several per
episode, so they describe; the before/after test of the run is its win rate paired by seed
(``metrics.json``).
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def count(paths, targets: bool = False, against: str = "") -> dict:
    """{"turns": Counter((player, role, phase, word)), "episodes": Counter((player, role))};
    ``targets``: the word of an action on one named player is followed by that player's role;
    ``against``: only the episodes in which that policy holds a seat (players met on the same
    deals and opponents, e.g. before and after both against the heuristic)."""
    turns, episodes = Counter(), Counter()
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            if against and all(s["policy"] != against for s in record["roster"]):
                continue
            seats = {s["agent"]: (s["policy"], s["role"]) for s in record["roster"]}
            role_of_name = {s.get("name"): s["role"] for s in record["roster"] if s.get("name")}
            for player_role in set(seats.values()):
                episodes[player_role] += 1
            for turn in record["turns"]:
                player, role = seats[turn["agent"]]
                word, _, rest = (turn["action"] or "").partition(" ")
                if targets and rest in role_of_name:
                    word = f"{word} {role_of_name[rest]}"
                turns[player, role, turn["phase"], word] += 1
    return {"turns": turns, "episodes": episodes}


def side_by_side(counts: dict, players: list) -> list:
    """Rows (role, phase, word, then per player: count, share of its turns in that role and phase)."""
    turns = counts["turns"]
    totals = Counter()
    for (player, role, phase, _), n in turns.items():
        totals[player, role, phase] += n
    keys = sorted({(role, phase, word) for (player, role, phase, word) in turns if player in players})
    rows = []
    for role, phase, word in keys:
        row = [role, phase, word]
        for player in players:
            n, total = turns[player, role, phase, word], totals[player, role, phase]
            row += [n, round(n / total, 3) if total else None]
        rows.append(row)
    return rows


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", help="episode logs (JSONL)")
    parser.add_argument("--players", default="", help="comma-separated players to set side by side (default: all)")
    parser.add_argument("--targets", action="store_true", help="an action on one named player counts by that player's role")
    parser.add_argument("--against", default="", help="count only the episodes in which this policy holds a seat")
    args = parser.parse_args(argv)
    missing = [p for p in args.logs if not Path(p).is_file()]
    if missing:
        parser.exit(2, f"no such log: {missing[0]}\n")
    counts = count(args.logs, args.targets, args.against)
    players = [p for p in args.players.split(",") if p] or sorted({k[0] for k in counts["episodes"]})
    rows = side_by_side(counts, players)
    print("\t".join(["role", "phase", "action"] + [f"{p} {x}" for p in players for x in ("n", "share")]))
    for row in rows:
        print("\t".join("" if v is None else str(v) for v in row))
    print("episodes by player and role:", {f"{p} as {r}": n for (p, r), n in sorted(counts["episodes"].items())
                                           if p in players})
    return rows


if __name__ == "__main__":
    main()
