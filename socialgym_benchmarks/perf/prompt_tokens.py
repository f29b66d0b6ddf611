"""Prompt tokens per decision of the embedded model, the paper's template against the compact one,
on the same decisions.

The same episodes are laid out both ways: each seat's chats are rebuilt from the episode logs
(:func:`socialgym_agents.llm.transcript.rebuild_conversations`, the policy's own layout and
trimming, SmolLM2's tokenizer and make demo's 2,048-token context), once with the demo's model
spec and once with ``template=compact`` added. Per decision it counts the chat-template tokens of
the whole chat and the *new* ones: those after the longest prefix shared with the seat's previous
chat and the reply it kept (what the seat's KV cache does not cover, so what the local backend
encodes; its sharing of the game's description across seats is not counted). Printed per game
and in all, with the share compact / paper.

    python socialgym_benchmarks/perf/prompt_tokens.py                      # demo preset, stand-in play
    python socialgym_benchmarks/perf/prompt_tokens.py --logs runs/demo/logs --seats smollm2

Default episodes: make demo's main-job plan (the demo preset's games and configs but Liar's Dice,
which the demo plays with its own roster; 2 episodes per combination with the model, seed 0),
with ``scripted:random`` in the model's seat (no model runs: the deals, seats and opponents are
the demo's, the model's moves are a stand-in's). ``--logs`` reads logged episodes instead and
measures the seats whose policy spec starts with ``--seats``. Token counts do not depend on the
host; its CPU flags are printed all the same.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from socialgym_agents.specs import AgentSpec  # noqa: E402
from socialgym_benchmarks.studies.prompt_layouts import DEMO_MODEL, SKIPPED_GAMES, arm_specs  # noqa: E402
from socialgym_benchmarks.tournament import plan as tour  # noqa: E402

STAND_IN = "scripted:random"
HOST_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def host_line() -> str:
    """The CPU model and which of HOST_FLAGS it has."""
    from socialgym_agents.llm.loading import cpu_flags
    text = cpu_flags()
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    words = set(text.split())
    return f"host: {model}; flags: " + ", ".join(f"{flag} {'yes' if flag in words else 'no'}" for flag in HOST_FLAGS)


def stand_in_logs(out: Path, episodes: int, seed: int) -> Path:
    """The demo's main-job plan played with STAND_IN in the model's seat; its log folder."""
    games = [g for g in tour.available_games(None) if g not in SKIPPED_GAMES]
    configs = tour.game_configs(games, {}, preset="demo")
    marker = "model-seat"            # no known kind (not scripted: the model's episode count); replaced below
    jobs = tour.plan_tournament(games, [marker, "scripted:heuristic", STAND_IN], episodes, seed, configs,
                                scripted_episodes=1)
    jobs = [job for job in jobs if marker in job.seats]
    for job in jobs:
        job.tags["measured"] = [i for i, seat in enumerate(job.seats) if seat == marker]
        job.seats = [STAND_IN if seat == marker else seat for seat in job.seats]
        job.specs = tuple(AgentSpec.of(seat) for seat in job.seats)
    tour.run_tournament(jobs, out, workers=1, pool_seed=seed, leaderboard=False, progress=False)
    return out / "logs"


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def measure(records: list, seats_of, spec: str) -> dict:
    """{game: [decisions, whole-chat tokens, new tokens]} of ``spec``'s chats for the seats
    ``seats_of(record)`` names."""
    from socialgym_agents.llm.hf_backend import chat_ids
    from socialgym_agents.llm.transcript import rebuild_conversations, tokenizer_and_context
    tokenizer, _ = tokenizer_and_context("smollm2")
    totals: dict = defaultdict(lambda: [0, 0, 0])
    policies: dict = {}
    for record in records:
        seats = seats_of(record)
        if not seats:
            continue
        roster = [{**seat, "policy": spec} if seat["agent"] in seats else seat for seat in record["roster"]]
        chats = rebuild_conversations({**record, "roster": roster}, spec, seats, policies)
        previous: dict = {}
        for index in sorted(chats):
            messages, reply = chats[index]
            agent = record["turns"][index]["agent"]
            ids = chat_ids(tokenizer, messages)
            new = len(ids) - _shared_prefix(ids, previous.get(agent, ()))
            previous[agent] = chat_ids(tokenizer, messages + [{"role": "assistant", "content": reply}])
            row = totals[record["game"]]
            row[0] += 1
            row[1] += len(ids)
            row[2] += new
    return dict(totals)


def _model_seats(prefix: str):
    def seats_of(record: dict) -> set:
        measured = (record.get("tags") or {}).get("measured")
        if measured is not None:
            return {record["roster"][i]["agent"] for i in measured}
        return {seat["agent"] for seat in record["roster"] if (seat.get("policy") or "").startswith(prefix)}
    return seats_of


def report(paper: dict, compact: dict) -> list:
    """The table's lines: per game and in all, decisions, whole-chat and new tokens a decision."""
    lines = ["| game | decisions | whole chat: paper | compact | new tokens: paper | compact | compact / paper (new) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    total_p, total_c = [0, 0, 0], [0, 0, 0]
    for game in sorted(paper):
        p, c = paper[game], compact[game]
        lines.append(_row(game, p, c))
        total_p = [x + y for x, y in zip(total_p, p)]
        total_c = [x + y for x, y in zip(total_c, c)]
    lines.append(_row("**all**", total_p, total_c))
    return lines


def _row(name: str, p: list, c: list) -> str:
    return (f"| {name} | {p[0]} | {p[1] / p[0]:.0f} | {c[1] / c[0]:.0f} | {p[2] / p[0]:.0f} | {c[2] / c[0]:.0f} | "
            f"{c[2] / p[2]:.2f} |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEMO_MODEL, help="the paper arm's spec (compact adds template=compact)")
    parser.add_argument("--logs", type=Path, default=None, help="measure these logs instead of stand-in play")
    parser.add_argument("--seats", default="smollm2", help="with --logs: the seats whose spec starts with this")
    parser.add_argument("--episodes", type=int, default=tour.DEMO_EPISODES)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        specs = arm_specs(args.model)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.logs is not None and not args.logs.exists():
        print(f"error: --logs {args.logs}: no such folder", file=sys.stderr)
        return 2
    from socialgym_benchmarks.ratings import load_records
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.logs or stand_in_logs(Path(tmp), args.episodes, args.seed)
        records, _ = load_records(logs)
    records.sort(key=lambda r: r["episode_id"])
    seats_of = _model_seats(args.seats)
    paper, compact = (measure(records, seats_of, specs[arm]) for arm in ("paper", "compact"))
    print(host_line())
    print(f"paper: {specs['paper']}\ncompact: {specs['compact']}")
    print("\n".join(report(paper, compact)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
