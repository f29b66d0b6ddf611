"""Leaderboard and replay edge cases from the audit (issue 11): a clean sweep, odd names, and
message text that would break the replay page's script."""
import json
import re

import pytest

from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_benchmarks.leaderboard.render import build_leaderboard
from socialgym_benchmarks.leaderboard.replay import render_replay
from socialgym_env.logs import append_episode

ODD = "evil|<b>bold</b>"


def test_a_clean_sweep_still_writes_every_file_and_names_are_escaped(tmp_path):
    jobs = [EpisodeJob("prisoners_dilemma", seed, seats)
            for seed in range(6)
            for seats in (["scripted:constant:defect", "scripted:constant:cooperate"],
                          ["scripted:constant:cooperate", "scripted:constant:defect"])]
    log = tmp_path / "logs" / "prisoners_dilemma.jsonl"
    records = run_jobs(jobs, log_path=tmp_path / "raw.jsonl")
    for record in records:
        for seat in record["roster"]:
            if seat["policy"] == "scripted:constant:defect":
                seat["policy"] = ODD
        append_episode(log, record)
    summary = build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=50)
    assert summary["overall"][ODD]["elo"] > 1000
    for name in ("leaderboard.md", "leaderboard.html", "elo_heatmap.png", "role_gap.png", "leaderboard.csv"):
        assert (tmp_path / "board" / name).stat().st_size > 0, name
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "evil\\|&lt;b&gt;bold&lt;/b&gt;" in markdown and ODD not in markdown
    assert "<b>" not in (tmp_path / "board" / "leaderboard.html").read_text()


def test_replay_page_script_cannot_be_broken_by_message_text(tmp_path):
    job = EpisodeJob("survivor", 0, ["scripted:constant:say <!--<script>alert(1)</script>"] + ["scripted:random"] * 5)
    record = run_jobs([job], log_path=tmp_path / "log.jsonl")[0]
    assert any("<!--<script>" in line for line in record["transcript"])
    page = render_replay(record)
    data = re.search(r"<script type='application/json' id='episode-data'>(.*?)</script>", page, flags=re.S).group(1)
    assert "<" not in data and ">" not in data
    lines = [m["line"] for m in json.loads(data)["messages"] if m["visibility"] == "public"]
    assert any("<!--<script>alert(1)</script>" in line for line in lines)
    assert "<!--" not in page


def test_resume_retries_failed_episodes_by_default(tmp_path):
    from socialgym_agents.runner import failed_record
    from socialgym_benchmarks.tournament import plan as tour

    agents = ["scripted:random", "scripted:heuristic"]
    jobs = tour.plan_tournament(["prisoners_dilemma"], agents, episodes=2, seed=0)
    log_dir = tmp_path / "logs"
    # An earlier run: every episode but the first ended as a failure (say, a server went down).
    for job in jobs[1:]:
        append_episode(log_dir / "prisoners_dilemma.jsonl", failed_record(job, RuntimeError("server down")))
    kept = tour.run_tournament(jobs, tmp_path, workers=1, progress=False, leaderboard=False, retry_failed=False)
    assert (kept.played, kept.retried) == (1, 0)
    result = tour.run_tournament(jobs, tmp_path, workers=1, progress=False, n_boot=20)
    assert result.retried == len(jobs) - 1 and result.played == len(jobs) - 1
    assert result.summary["skipped"]["failed"] == 0 and result.summary["episodes"] == len(jobs)
    again = tour.run_tournament(jobs, tmp_path, workers=1, progress=False, leaderboard=False)
    assert (again.played, again.retried, again.already_logged) == (0, 0, len(jobs))


@pytest.mark.parametrize("policies, why", [
    (["scripted:random", "scripted:random"], "these logs hold one"),
    (["scripted:constant:cooperate", "scripted:tit_for_tat"], "ended with a winner (all draws")])
def test_a_leaderboard_says_why_an_elo_cell_is_empty(tmp_path, policies, why):
    """One policy, or only draws: the Elo cells are empty, and the printed board says why."""
    import io

    from rich.console import Console

    from socialgym_benchmarks.leaderboard.render import print_leaderboard
    jobs = [EpisodeJob("prisoners_dilemma", seed, list(order), config={"rounds": 2})
            for seed in range(3) for order in (policies, policies[::-1])]
    run_jobs(jobs, log_path=tmp_path / "logs" / "pd.jsonl")
    summary = build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=20)
    assert all(summary["overall"][p]["elo"] is None for p in summary["policies"])
    printed = io.StringIO()
    print_leaderboard(summary, Console(file=printed, width=200))
    assert f"Elo is empty for {', '.join(summary['policies'])}" in printed.getvalue() and why in printed.getvalue()
