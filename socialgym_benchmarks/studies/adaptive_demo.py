"""Would the adaptive tournament's stop (``--until-resolved``) have cut make demo's main job short?

Read a round robin's logs (a make demo run's ``logs``, or one arm of
:mod:`socialgym_benchmarks.studies.prompt_layouts`) and apply the adaptive rule's look to all of
its episodes (:func:`socialgym_benchmarks.tournament.adaptive.assess`): the pooled fit's order, and
per adjacent pair the gap, whether its interval excludes 0 at the level an adaptive run with a
budget of this many episodes would use at every look (Bonferroni over its planned looks and the
pairs), and about how many more episodes of that pair it would need. An adaptive run stops
early only when every adjacent pair is resolved at some look; a pair still open with all the
round robin's episodes, and needing many more, means an adaptive run with this budget plays it
all (nothing saved) and a larger budget plays more.

    python -m socialgym_benchmarks.studies.adaptive_demo runs/demo/logs --exclude-game liars_dice
    python -m socialgym_benchmarks.studies.adaptive_demo runs/prompt_layouts/logs --arm paper

Plays nothing; seconds.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament import adaptive


def round_robin_look(records: Sequence[dict], level: float = adaptive.LEVEL) -> dict:
    """The adaptive look at the round robin's size: {episodes, looks, pair_level, pairs: [...]}
    (each pair: upper, lower, gap, resolved at the corrected level, resolved at ``level``, need)."""
    records = [r for r in records if not bt.game_info(r["game"]).get("cooperative")]
    battles = bt.collect_battles(records)
    competitors = len(battles.players)
    if competitors < 2:
        raise ValueError("fewer than two policies played: nothing to resolve")
    first = competitors * (competitors - 1) // 2 * adaptive.FIRST_PER_PAIR
    looks = adaptive.look_schedule(min(first, len(records)), len(records))
    levels = adaptive.Levels.of(level, len(looks), competitors)
    corrected = adaptive.assess(battles, levels.pairs)
    plain = {(p.upper, p.lower): p.resolved for p in adaptive.assess(battles, level).pairs}
    return {"episodes": len(records), "looks": len(looks), "pair_level": levels.pairs, "elo": corrected.elo,
            "pairs": [{"upper": p.upper, "lower": p.lower, "gap": p.gap, "resolved": p.resolved,
                       "resolved_uncorrected": plain.get((p.upper, p.lower)), "need": p.need}
                      for p in corrected.pairs]}


def _records(logs: Path, arm: Optional[str], exclude: Sequence[str]) -> list:
    """The round robin's records: games not excluded; with ``arm`` (a prompt_layouts run) that
    arm's episodes and the shared scripted ones."""
    from socialgym_benchmarks.studies.prompt_layouts import ARMS, _unit_of
    records, _ = bt.load_records(logs)
    out = []
    for record in records:
        if record["game"] in exclude:
            continue
        own = _unit_of(record["episode_id"])[0]
        if arm is not None and own is not None and own != arm:
            continue
        if arm is None and own in ARMS:
            raise ValueError(f"{logs} holds a paired run (episode {record['episode_id']}); give --arm")
        out.append(record)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path)
    parser.add_argument("--arm", default=None, help="a prompt_layouts run: read this arm (paper | compact)")
    parser.add_argument("--exclude-game", action="append", default=[], help="leave a game out (repeatable)")
    args = parser.parse_args(argv)
    if not args.logs.exists():
        print(f"error: {args.logs}: no such log folder", file=sys.stderr)
        return 2
    try:
        look = round_robin_look(_records(args.logs, args.arm, args.exclude_game))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{look['episodes']} episodes of competitive games; an adaptive run with this budget plans "
          f"{look['looks']} looks, pair level {100 * look['pair_level']:.3f}%")
    for pair in look["pairs"]:
        state = "resolved" if pair["resolved"] else f"open (needs about {pair['need']:.0f} more of its episodes)"
        print(f"  {pair['upper']} > {pair['lower']}: {pair['gap']:+.0f} Elo, {state}; at the uncorrected 95%: "
              f"{'resolved' if pair['resolved_uncorrected'] else 'open'}")
    stops = all(pair["resolved"] for pair in look["pairs"])
    print("the adaptive stop would come at or before this size" if stops else
          "the adaptive stop would not come within this budget: it plays the whole budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
