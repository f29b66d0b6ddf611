"""The reference pool (socialgym_benchmarks.tournament.reference): the shipped pool matches its manifest,
the anchored fit covers planted strengths (and a null), agrees with a full round robin, and
``socialgym rate`` refuses bad input with one line and exit 2."""
import json
import re
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.tournament import reference as ref
from socialgym_benchmarks.cli import app

NEWCOMER = "scripted:win_stay_lose_shift"


def test_shipped_pool_matches_its_manifest_and_its_logs_give_its_ratings():
    pool = ref.load_pool()
    assert sorted(pool.ratings) == sorted(ref.POLICIES) and pool.manifest["games"] == list(ref.GAMES)
    assert pool.ratings == pytest.approx(ref.pool_ratings(pool.log_dir))
    assert np.mean(list(pool.ratings.values())) == pytest.approx(bt.ANCHOR)


def simulated(planted_new: float, anchors: dict, per_anchor: int, rng) -> bt.Battles:
    players = ["new"] + sorted(anchors)
    win, lose = [], []
    for j, name in enumerate(players[1:], start=1):
        p = 1 / (1 + 10 ** (-(planted_new - anchors[name]) / 400))
        for _ in range(per_anchor):
            newcomer_wins = rng.random() < p
            win.append(0 if newcomer_wins else j)
            lose.append(j if newcomer_wins else 0)
    n = len(win)
    return bt.Battles(players, np.array(win), np.array(lose), np.arange(n), n)


@pytest.mark.parametrize("planted", [1000.0, 1250.0])
def test_anchored_interval_covers_planted_strength(planted):
    """Planted newcomer strengths (1000: the anchors' mean, the null; 1250: above every anchor):
    the estimate is unbiased to within noise and the 95% interval covers about 95%."""
    anchors = {"a": 1150.0, "b": 1000.0, "c": 850.0}
    rng = np.random.default_rng(7)
    fits = [ref.anchored_fit(simulated(planted, anchors, 40, rng), "new", anchors) for _ in range(300)]
    coverage = np.mean([f["lo"] <= planted <= f["hi"] for f in fits])
    assert 0.92 <= coverage <= 0.98, coverage
    assert abs(np.mean([f["elo"] for f in fits]) - planted) < 15


def test_anchored_fit_stays_finite_and_wide_when_the_newcomer_never_loses():
    """Separation: the plain MLE is infinite; Firth's penalty keeps the estimate finite and the
    interval wide on the open side."""
    anchors = {"a": 1050.0, "b": 950.0}
    battles = bt.Battles(["new", "a", "b"], np.zeros(10, int), np.array([1, 2] * 5), np.arange(10), 10)
    fit = ref.anchored_fit(battles, "new", anchors)
    assert 1000 < fit["lo"] < fit["elo"] < fit["hi"] and fit["hi"] - fit["elo"] > 2 * (fit["elo"] - fit["lo"])


def test_rating_against_the_pool_agrees_with_a_full_round_robin(tmp_path):
    pool = ref.load_pool()
    rated = ref.rate_against(NEWCOMER, pool, out=tmp_path / "rate", progress=False)
    assert rated["episodes"] == rated["planned"] == len(ref.GAMES) * len(ref.POLICIES) * ref.EPISODES
    full = ref.full_round_robin_elo(pool, tmp_path / "rate" / "logs", NEWCOMER)
    assert rated["lo"] <= full <= rated["hi"], (rated, full)
    assert rated["hi"] - rated["lo"] < 200          # informative, not trivially wide


def test_rate_command_prints_the_anchored_rating(tmp_path):
    result = CliRunner().invoke(app, ["rate", NEWCOMER, "--against", "reference", "--episodes", "4",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert f"{NEWCOMER}: Elo" in result.output and "references held fixed" in result.output
    # Issue 65.2: a copy of its log in the rating's folder counts once, and the command says so.
    logs = sorted((tmp_path / "r" / "logs").glob("*.jsonl"))
    copied = sum(len(log.read_text().splitlines()) for log in logs)
    for log in logs:
        shutil.copy(log, log.with_name("copy-" + log.name))
    again = CliRunner().invoke(app, ["rate", NEWCOMER, "--against", "reference", "--episodes", "4",
                                     "--out", str(tmp_path / "r")])
    assert again.exit_code == 0, again.output
    rating = re.search(f"{NEWCOMER}: Elo .* episodes", result.output)
    assert rating and rating.group(0) in again.output                   # the same rating from the same episodes
    assert f"Skipped {copied} duplicate copies of episodes already read" in again.output


def broken_pool(tmp_path, how):
    folder = tmp_path / "pool"
    shutil.copytree(ref.POOL_DIR, folder)
    log = sorted((folder / "logs").glob("*.jsonl"))[0]
    if how == "missing":
        log.unlink()
    elif how == "altered":
        log.write_text(log.read_text()[:-200])
    elif how == "manifest":
        (folder / ref.MANIFEST).write_text("{not json")
    elif how == "no manifest":
        (folder / ref.MANIFEST).unlink()
    return folder


@pytest.mark.parametrize("how, message", [("missing", "is missing"), ("altered", "does not match"),
                                          ("manifest", "not a reference manifest"),
                                          ("no manifest", "no reference pool")])
def test_rate_refuses_a_broken_pool(tmp_path, how, message):
    result = CliRunner().invoke(app, ["rate", NEWCOMER, "--against", str(broken_pool(tmp_path, how)),
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("spec, message", [("scripted:nope", "unknown scripted policy"),
                                           ("scripted:random", "is a reference already")])
def test_rate_refuses_a_bad_spec(tmp_path, spec, message):
    result = CliRunner().invoke(app, ["rate", spec, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r" / "logs").exists() or not any((tmp_path / "r" / "logs").iterdir())


def test_manifest_records_how_the_pool_was_made():
    manifest = json.loads((ref.POOL_DIR / ref.MANIFEST).read_text())
    assert manifest["command"] == ref.BUILD_COMMAND and manifest["episodes_per_combination"] == ref.EPISODES
