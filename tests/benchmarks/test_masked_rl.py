"""socialgym_benchmarks/studies/masked_rl.py: a tiny run trains and evaluates every game; its estimators."""
import random

import pytest

pytest.importorskip("sb3_contrib")

from socialgym_benchmarks.studies.masked_rl import GAMES, paired_difference, win_rate  # noqa: E402
from socialgym_benchmarks.studies import masked_rl  # noqa: E402


def test_a_tiny_run_trains_and_evaluates_every_game(capsys):
    rows = masked_rl.main(["--steps", "256", "--episodes", "8", "--n-steps", "128", "--batch-size", "64"])
    assert [row["game"] for row in rows] == [game for game, *_ in GAMES]
    for row in rows:
        for name in ("before", "after", "heuristic"):
            p, lo, hi = row[name]
            assert 0.0 <= lo <= p <= hi <= 1.0
    printed = capsys.readouterr().out
    assert printed.count("beats heuristic, intervals apart:") == len(GAMES)


def test_paired_difference_planted_and_null():
    rng = random.Random(0)
    better = [1.0 if rng.random() < 0.8 else -1.0 for _ in range(400)]
    worse = [1.0 if rng.random() < 0.3 else -1.0 for _ in range(400)]
    mean, lo, hi = paired_difference(better, worse)
    assert 0.4 < mean < 0.6 and lo > 0                      # planted +0.5: found, interval excludes 0
    same = [1.0 if rng.random() < 0.5 else 0.0 for _ in range(400)]
    assert paired_difference(same, same) == (0.0, 0.0, 0.0)
    other = [1.0 if rng.random() < 0.5 else 0.0 for _ in range(400)]
    mean, lo, hi = paired_difference(same, other)
    assert lo < 0 < hi                                      # null: no difference claimed
    with pytest.raises(ValueError):
        paired_difference(same, other[:-1])                 # unpaired inputs are refused


def test_win_rate_counts_only_strict_wins():
    p, lo, hi = win_rate([1.0, 0.0, -1.0, 1.0])
    assert p == 0.5 and lo < 0.5 < hi
