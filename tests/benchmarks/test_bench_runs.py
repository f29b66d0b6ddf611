"""Running tournaments: SIGKILL + resume (no episode lost or duplicated), the Ray backend,
and the leaderboard rebuilt from the logs."""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from socialgym_benchmarks.tournament import plan as tour
from socialgym_benchmarks.leaderboard.render import build_leaderboard, print_leaderboard
from socialgym_env.logs import append_episode, iter_log_dir

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ["scripted:heuristic", "scripted:random", "scripted:tit_for_tat"]
GAMES = ["prisoners_dilemma", "chicken", "rock_paper_scissors", "minority_game", "public_goods"]
KEYS = ("episode_id", "game", "seed", "config", "roster", "messages", "scores", "rewards", "outcomes", "finished")


def plan():
    return tour.plan_tournament(GAMES, AGENTS, episodes=4, seed=5)


def comparable(record):
    out = {k: record.get(k) for k in KEYS}
    out["actions"] = [(t.get("agent"), t.get("action"), t.get("valid")) for t in record.get("turns", [])]
    return out


def by_id(logdir):
    records = list(iter_log_dir(logdir))
    counts = Counter(r["episode_id"] for r in records)
    return {r["episode_id"]: comparable(r) for r in records}, counts


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean")
    tour.run_tournament(plan(), out, workers=1, progress=False, leaderboard=False)
    return by_id(out / "logs")


SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from socialgym_benchmarks.tournament import plan as tour
sys.path.insert(0, {here!r})
from test_bench_runs import plan
tour.run_tournament(plan(), {out!r}, workers=2, progress=False, leaderboard=False)
"""


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path, clean_run):
    out = tmp_path / "run"
    script = tmp_path / "run_tournament.py"
    script.write_text(SCRIPT.format(root=str(ROOT), here=str(Path(__file__).parent), out=str(out)))
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    planned = {j.episode_id for j in plan()}
    deadline = time.time() + 120
    logged = 0
    while time.time() < deadline and proc.poll() is None:
        logs = list((out / "logs").glob("*.jsonl")) if (out / "logs").exists() else []
        logged = sum(p.read_bytes().count(b"\n") for p in logs)
        if logged >= 6:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    os.killpg(proc.pid, signal.SIGKILL)                  # the tournament and its workers
    proc.wait()
    time.sleep(0.5)                                      # orphans (if any) would write now
    partial, counts = by_id(out / "logs")
    assert 0 < len(partial) < len(planned), len(partial)
    assert max(counts.values()) == 1

    result = tour.run_tournament(plan(), out, workers=2, progress=False, leaderboard=False)
    assert result.already_logged == len(partial) and result.played == len(planned) - len(partial)
    records, counts = by_id(out / "logs")
    assert set(counts) == planned and set(counts.values()) == {1}
    clean, _ = clean_run
    assert records == clean


def test_ray_backend_local_instance(tmp_path, clean_run, local_ray):
    jobs = [j for j in plan() if j.game in ("prisoners_dilemma", "minority_game")]
    result = tour.run_tournament(jobs, tmp_path, backend="ray", workers=2, progress=False, leaderboard=False)
    assert result.played == len(jobs)
    records, counts = by_id(tmp_path / "logs")
    assert set(counts) == {j.episode_id for j in jobs} and set(counts.values()) == {1}
    clean, _ = clean_run
    assert records == {k: clean[k] for k in records}


def test_leaderboard_rebuilt_from_logs(tmp_path, toy_spy, capsys):
    games = ["prisoners_dilemma", "stag_hunt", "minority_game", toy_spy]
    jobs = tour.plan_tournament(games, AGENTS, episodes=2, seed=1)
    tour.run_tournament(jobs, tmp_path, workers=1, progress=False, leaderboard=False)
    append_episode(tmp_path / "logs" / "prisoners_dilemma.jsonl",
                   {"schema": "socialgym.episode/1", "episode_id": "broken", "game": "prisoners_dilemma",
                    "seed": 0, "roster": [], "turns": [], "scores": None, "rewards": None, "failed": True,
                    "error": "RuntimeError: model server down"})
    summary = build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=100)
    board = tmp_path / "board"
    for name in ("leaderboard.csv", "per_game_elo.csv", "win_rates.csv", "cooperative.csv", "profiles.csv",
                 "role_elo.csv", "leaderboard.json", "leaderboard.md", "leaderboard.html"):
        assert (board / name).stat().st_size > 0, name
    for name in ("elo_heatmap.png", "role_gap.png"):
        data = (board / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert (board / "leaderboard.csv").read_text().splitlines()[0].split(",") == [
        "rank", "policy", "elo", "elo_lo", "elo_hi", "elo_games_equal", "games_equal_lo", "games_equal_hi", "battles",
        "win_rate", "win_lo", "win_hi", "seats", "wins", "episodes"]
    assert (board / "role_elo.csv").read_text().splitlines()[0].startswith("game,policy,elo_main,main_lo,main_hi,elo_alt")
    data = json.loads((board / "leaderboard.json").read_text())
    for key in ("overall", "per_game", "win_rates", "cooperative", "profiles", "roles", "roles_overall", "policies",
                "skipped", "settings", "game_info"):
        assert key in data, key
    assert data["skipped"] == {"failed": 1, "unfinished": 0, "bad_lines": 0, "bad_line_reasons": {}, "duplicates": 0,
                               "not_regular_files": 0}
    assert data["episodes"] == len(jobs)
    assert set(data["policies"]) == set(AGENTS)
    # one replay page per game, linked from the HTML leaderboard
    html_page = (board / "leaderboard.html").read_text()
    for game in games:
        assert (board / "replays" / f"{game}.html").stat().st_size > 0
        assert f"href='replays/{game}.html'" in html_page
    assert data["competitive_games"] and "stag_hunt" in data["cooperative_games"]
    assert "stag_hunt" not in data["per_game"]
    assert abs(sum(v["elo"] for v in data["overall"].values()) / 3 - 1000) < 1e-6
    assert set(data["roles"][toy_spy]) == set(AGENTS)
    assert all({"elo_main", "elo_alt", "gap"} <= set(v) for v in data["roles"][toy_spy].values())
    assert set(data["profiles"]) == {"category", "skill", "information", "communication", "players", "horizon"}
    assert "coordination" in next(iter(data["cooperative"]["stag_hunt"].values()))
    page = (board / "leaderboard.html").read_text()
    assert "<img" in page and "src='data:image/png;base64," in page         # self-contained
    assert "src='http" not in page and "<link" not in page
    again = build_leaderboard(tmp_path / "logs", tmp_path / "board2", n_boot=100)
    assert again["overall"] == summary["overall"]        # rebuilt from logs alone, deterministic
    print_leaderboard(summary)
    assert "scripted:heuristic" in capsys.readouterr().out
