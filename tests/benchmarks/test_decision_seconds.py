"""Issue 42 item 4's seconds column: each decision's wall time is kept beside the logs (never in
the records, whose bytes must stay a function of the seed) and shown per policy in every output."""
import csv
import json
import time

import pytest

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.runner import PolicyPool
from socialgym_benchmarks.tournament import backends
from socialgym_benchmarks.leaderboard.summary import decision_stats
from socialgym_benchmarks.leaderboard.render import print_leaderboard
from socialgym_benchmarks.tournament import plan_tournament, run_tournament
from socialgym_env.journal import read_timing


class SlowPolicy(BasePolicy):
    """Defects after a planted delay per call (batched: one delay for the whole batch)."""

    policy_id = "slow"
    DELAY = 0.05

    def act_batch(self, requests):
        time.sleep(self.DELAY)
        return [Decision("defect") for _ in requests]


def _pool(seed=0):
    return PolicyPool(seed, prebuilt={"slow": SlowPolicy()})


def test_decision_stats_average_the_kept_times_per_policy():
    roster = [{"agent": "x", "policy": "A"}, {"agent": "y", "policy": "B"}]
    record = {"episode_id": "e", "game": "chess", "roster": roster,
              "turns": [{"agent": "x"}, {"agent": "y"}, {"agent": "x"}, {"agent": "y"}]}
    timing = {"e": {0: (2.0, 4), 1: (0.001, 1), 2: (4.0, 2)}}        # turn 3 has no time kept
    stats = decision_stats([record], timing=timing)
    assert stats["A"]["seconds"] == 3.0 and stats["A"]["batch"] == 3.0
    assert stats["B"]["seconds"] == 0.001 and stats["B"]["batch"] == 1.0
    assert decision_stats([record])["A"]["seconds"] is None            # logs without times: no figure


def test_a_tournament_keeps_times_beside_the_logs_and_every_output_shows_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(backends, "PolicyPool", _pool)
    jobs = plan_tournament(["prisoners_dilemma"], ["slow", "scripted:random"], episodes=4, seed=1,
                           configs={"prisoners_dilemma": {"rounds": 3}})
    result = run_tournament(jobs, tmp_path / "t", progress=False, n_boot=0)
    timing = read_timing(result.log_dir)
    assert set(timing) == {job.episode_id for job in jobs}
    log_text = (result.log_dir / "prisoners_dilemma.jsonl").read_text()
    assert "seconds" not in log_text                                  # the records hold no wall time
    summary = json.loads((tmp_path / "t" / "leaderboard.json").read_text())
    for table in (summary["decisions"]["overall"], summary["decisions"]["per_game"]["prisoners_dilemma"]):
        slow, scripted = table["slow"], table["scripted:random"]
        # the 4 episodes run together: one call decides all of them, so each decision waits the delay
        assert SlowPolicy.DELAY <= slow["seconds"] < SlowPolicy.DELAY * 20 and slow["batch"] == pytest.approx(4)
        # a simultaneous game: the scripted seats answer in the same tick, one call for all 4
        assert scripted["seconds"] < SlowPolicy.DELAY / 5 and scripted["batch"] == pytest.approx(4)
    rows = list(csv.DictReader(open(tmp_path / "t" / "decisions.csv")))
    assert {r["policy"]: float(r["seconds"]) for r in rows if r["game"] == "ALL"}["slow"] >= SlowPolicy.DELAY
    for name in ("leaderboard.md", "leaderboard.html"):
        assert "s/decision" in (tmp_path / "t" / name).read_text()
    from rich.console import Console
    console = Console(width=240, record=True)
    print_leaderboard(summary, console=console)
    assert "s/decision" in console.export_text()
