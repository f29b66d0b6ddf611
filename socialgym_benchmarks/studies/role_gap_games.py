"""Planted role gaps on the registered hidden-role games, played for real.

Three policies play every hidden-role game with the tournament's balanced rosters (every policy
on every side equally often; the demo preset's short configs): ``scripted:heuristic``,
``scripted:random`` and ``side:split``, which plays the heuristic on the game's alt side and
random on its main side (planted: its Elo-Alt − Elo-Main is positive). The leaderboard's own
role-conditioned fit (:func:`socialgym_benchmarks.leaderboard.summarize`) then gives each policy's gap
and its 95% interval; the side-split policy should get a positive gap whose interval excludes 0.

    python -m socialgym_benchmarks.studies.role_gap_games --episodes 40

prints one row per game (the side-blind policies' gaps beside it).
"""
from __future__ import annotations

import argparse
from typing import Sequence

import socialgym_env
from socialgym_agents.base import BasePolicy, Request
from socialgym_agents.jobs import PolicyPool
from socialgym_agents.registry import make_policy
from socialgym_agents.runner import run_jobs

from socialgym_benchmarks.leaderboard.tables import GAP_MARKS, gap_status
from socialgym_benchmarks.leaderboard.summary import is_hidden_role, side_label, summarize
from socialgym_benchmarks.ratings import game_info
from socialgym_benchmarks.tournament.plan import demo_config, plan_game

SPLIT = "side:split"
AGENTS = ("scripted:heuristic", "scripted:random", SPLIT)


class SideSplitPolicy(BasePolicy):
    """The heuristic on the game's alt side, uniform random on its main side (and elsewhere)."""

    policy_id = SPLIT
    instant = True

    def __init__(self, game: str, seed: int = 0):
        super().__init__(seed)
        self.alt = make_policy("scripted:heuristic", seed=seed)
        self.main = make_policy("scripted:random", seed=seed)
        self.label = side_label(game_info(game))

    def reset(self, key: tuple, seed=None) -> None:
        self.alt.reset(key, seed)
        self.main.reset(key, seed)

    def release(self, key: tuple) -> None:
        for policy in (self.alt, self.main):
            if hasattr(policy, "release"):
                policy.release(key)

    def act_batch(self, requests: Sequence[Request]) -> list:
        out = []
        for request in requests:
            side = self.label({"policy": SPLIT, "role": request.info.get("role"), "team": request.info.get("team")})
            delegate = self.alt if side == f"{SPLIT}|alt" else self.main
            out.append(delegate.act_batch([request])[0])
        return out


def hidden_role_games() -> list:
    return [g for g in socialgym_env.game_ids() if is_hidden_role(game_info(g)) and not game_info(g).get("cooperative")]


def play_game(game: str, episodes: int, seed: int = 0) -> dict:
    """The role table of one game: {policy: row of summarize()["roles"][game]}."""
    pool = PolicyPool(seed=seed, prebuilt={SPLIT: SideSplitPolicy(game, seed)})
    jobs = plan_game(game, AGENTS, episodes, seed=seed, config=demo_config(game))
    records = [r for r in run_jobs(jobs, pool) if not r.get("failed")]
    return summarize(records, n_boot=200, seed=seed)["roles"].get(game, {})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per policy combination")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", default=None, help="comma-separated (default: every hidden-role game)")
    args = parser.parse_args(argv)
    games = args.games.split(",") if args.games else hidden_role_games()

    def cell(row):
        if row.get("gap") is None:
            return "-"
        lo, hi = row.get("gap_lo"), row.get("gap_hi")
        return (f"{row['gap']:+.0f} [{'-inf' if lo is None else f'{lo:.0f}'}, {'inf' if hi is None else f'{hi:.0f}'}]"
                + (f" {GAP_MARKS['table'][gap_status(row)]}" if gap_status(row) in GAP_MARKS["table"] else ""))
    print(f"role gap Alt − Main [95% profile interval], {args.episodes} episodes per combination, seed {args.seed}")
    print(f"{'game':<22} {'side:split (planted > 0)':>28} {'heuristic':>24} {'random':>24}")
    for game in games:
        table = play_game(game, args.episodes, args.seed)
        print(f"{game:<22} {cell(table.get(SPLIT, {})):>28} {cell(table.get('scripted:heuristic', {})):>24} "
              f"{cell(table.get('scripted:random', {})):>24}")


if __name__ == "__main__":
    main()
