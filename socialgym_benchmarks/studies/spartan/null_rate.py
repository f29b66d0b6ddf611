"""How often SPaRTan's paired test calls a playbook effect significant, over repeated seeds.

    python -m socialgym_benchmarks.studies.spartan.null_rate --repeats 100 --eval-games 20

Each repeat is one ``distill`` evaluation (no reflection: a fixed playbook file holding the
planted keyword) with its own experiment seed, so new evaluation seeds, for each student:

* ``scripted:heuristic`` and ``scripted:random``: playbook-blind. With common random numbers
  their baseline, playbook and placebo games replay identically: the share of identical
  replays must be 100% and the rejection rate 0.
* ``planted:noise``: reads its playbook only to re-seed its draws (same law, other draws): a
  true null without identical replays; the rejection rate must not exceed the nominal 5%
  beyond chance (its Wilson 95% interval is printed).
* ``planted:keyword``: defects in the last round when the playbook says so: the playbook arm
  must be rejected (power), its placebo arm behaves as the null.

The opponent (the unarmed "teacher") is ``scripted:tit_for_tat``; the game is the 5-round
Prisoner's Dilemma with its two seats pooled (the sign-flip test over seeds). Every number
printed is a count over the repeats of this one run.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from socialgym_benchmarks.ratings import wilson_interval
from socialgym_env.logs import iter_log_dir

from .experiment import Experiment, SpartanConfig, arm_of
from .planted import KEYWORD
from .protocols import run_distill


@dataclass
class Config:
    repeats: int = 50                    # experiment seeds (each a fresh set of evaluation seeds)
    eval_games: int = 20                 # K seeds per side and arm
    game: str = "prisoners_dilemma"
    teacher: str = "scripted:tit_for_tat"
    students: list = field(default_factory=lambda: ["scripted:heuristic", "scripted:random", "planted:noise",
                                                    "planted:keyword"])
    alpha: float = 0.05


def parse_args() -> Config:
    defaults = Config()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=defaults.repeats)
    p.add_argument("--eval-games", type=int, default=defaults.eval_games)
    p.add_argument("--game", default=defaults.game)
    p.add_argument("--students", default=",".join(defaults.students))
    a = p.parse_args()
    return Config(repeats=a.repeats, eval_games=a.eval_games, game=a.game,
                  students=[s for s in a.students.split(",") if s])


def replays_identically(exp: Experiment) -> dict:
    """{(student, arm): [identical replays, seeds x sides]}: each armed game's moves and
    rewards against the baseline game of the same seed and seats."""
    by_game = defaultdict(dict)
    for record in iter_log_dir(exp.log_root / "logs"):
        if record["tags"].get("spartan") == "eval":
            key = (record["seed"], tuple(s["policy"] for s in record["roster"]))
            by_game[key][arm_of(record)] = ([(t["agent"], t.get("action")) for t in record["turns"]], record["rewards"])
    same = defaultdict(lambda: [0, 0])
    for (_, policies), arms in by_game.items():
        student = next((p for p in policies if p != exp.config.model), policies[0])
        for arm in ("playbook", "placebo"):
            if arm in arms and "baseline" in arms:
                same[(student, arm)][0] += arms[arm] == arms["baseline"]
                same[(student, arm)][1] += 1
    return same


def main(cfg: Config) -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="spartan-null-") as folder:
        report(cfg, Path(folder))
    print(f"{time.perf_counter() - started:.0f} s")


def report(cfg: Config, work: Path) -> None:
    playbook = work / "keyword.md"
    playbook.write_text(f"Cooperate early and {KEYWORD}.", encoding="utf-8")
    rejected = defaultdict(int)
    tests = defaultdict(int)
    deltas = defaultdict(list)
    same = defaultdict(lambda: [0, 0])
    names = set()
    for seed in range(cfg.repeats):
        config = SpartanConfig(protocol="distill", model=cfg.teacher, students=list(cfg.students), games=[cfg.game],
                               playbook=str(playbook), eval_games=cfg.eval_games, seed=seed)
        exp = Experiment(config, work / f"seed{seed}")
        rows = run_distill(exp)["rows"]
        for key, (k, n) in replays_identically(exp).items():
            same[key][0] += k
            same[key][1] += n
        for row in rows:
            if row["condition"] == "baseline":
                continue
            key = (row["student"], row["condition"])
            tests[key] += 1
            rejected[key] += row["p_value"] < cfg.alpha
            deltas[key].append(row["delta_points"])
            names.add(row["test"])
    print(f"{cfg.repeats} repeats x {cfg.eval_games} seeds per side, {cfg.game}, teacher {cfg.teacher}; "
          f"test: {', '.join(sorted(names))}; alpha {cfg.alpha}")
    print(f"{'student':22} {'arm':9} {'rejected':>9} {'rate [Wilson 95%]':>22} {'mean delta':>11} {'identical replays':>18}")
    for key in sorted(tests):
        lo, hi = wilson_interval(rejected[key], tests[key])
        k, n = same[key]
        mean = sum(deltas[key]) / len(deltas[key])
        print(f"{key[0]:22} {key[1]:9} {rejected[key]:>4}/{tests[key]:<4} "
              f"{rejected[key] / tests[key]:>8.3f} [{lo:.3f}-{hi:.3f}] {mean:>+10.1f}p {k:>8}/{n:<8}")


if __name__ == "__main__":
    main(parse_args())
