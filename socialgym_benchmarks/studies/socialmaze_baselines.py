"""Accuracy of the Hidden Role Deduction baselines per variant and per Player 1 true role.

    python socialgym_benchmarks/studies/socialmaze_baselines.py --n 200 --seed 0 --preset easy

For each variant it generates ``--n`` certified instances and scores two solvers
through the same answer parser a model would face:

* exact — the verifier as a solver (must be 100%: every instance has one answer);
* heuristic — "most accused player is the Criminal; Player 1's told role is true".

Columns: instances, then accuracy of both parts (the reward), criminal only and
role only, for each solver; the last column splits heuristic reward by the
paper's high/low-evidence tag.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

# Let `python socialgym_benchmarks/studies/socialmaze_baselines.py` work from a checkout without installing.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from socialgym_env.socialmaze import VARIANTS, MazeConfig, Role, generate_dataset, score_answer  # noqa: E402
from socialgym_env.socialmaze.baselines import SOLVERS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="instances per variant (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preset", default="easy", choices=["easy", "hard"])
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    # (variant, p1 role) -> solver -> [both, criminal, role] counts; plus counts and evidence
    cells: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    sizes: dict[tuple[str, str], int] = defaultdict(int)
    evid: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for variant in VARIANTS:
        config = MazeConfig.from_preset(args.preset, variant)
        for inst in generate_dataset(args.n, args.seed, config):
            for key in ((variant, inst.player1_role.value), (variant, "all")):
                sizes[key] += 1
                for name, solver in SOLVERS.items():
                    r = score_answer(solver(inst.puzzle), inst)
                    c = cells[key][name]
                    c[0] += r.reward == 1.0
                    c[1] += r.criminal_correct
                    c[2] += r.role_correct
                    if name == "heuristic":
                        e = evid[key][inst.evidence]
                        e[0] += r.reward == 1.0
                        e[1] += 1

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:5.1f}" if b else "    -"

    header = (
        f"{'variant':<12} {'P1 role':<13} {'n':>5} | {'exact':>5} {'crim':>5} {'role':>5} | "
        f"{'heur':>5} {'crim':>5} {'role':>5} | {'heur hi/lo evidence':>19}"
    )
    print(f"Hidden Role Deduction baselines: preset={args.preset}, n={args.n} per variant, seed={args.seed}")
    print("accuracy in %; 'exact'/'heur' = both parts right (the reward)")
    print(header)
    print("-" * len(header))
    order = [r.value for r in Role] + ["all"]
    for variant in VARIANTS:
        for role in order:
            key = (variant, role)
            if key not in sizes:
                continue
            n = sizes[key]
            ex, he = cells[key]["exact"], cells[key]["heuristic"]
            hi, lo = evid[key]["high"], evid[key]["low"]
            print(
                f"{variant:<12} {role:<13} {n:>5} | {pct(ex[0], n)} {pct(ex[1], n)} {pct(ex[2], n)} | "
                f"{pct(he[0], n)} {pct(he[1], n)} {pct(he[2], n)} | "
                f"{pct(hi[0], hi[1])} ({hi[1]:>4}) / {pct(lo[0], lo[1])} ({lo[1]:>3})"
            )
        print("-" * len(header))
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
