"""The replay page, as a person sees it in (headless) Chromium."""
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_benchmarks.leaderboard.replay import write_replay
from socialgym_env.errors import LogFormatError

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


def dump_dom(page: Path, fragment: str, tmp_path: Path) -> str:
    """The DOM after the page's scripts ran (``--dump-dom``)."""
    assert Path(CHROMIUM).exists(), "chromium is required (apt-get install -y chromium)"
    profile = tmp_path / f"profile{abs(hash(fragment))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri() + fragment]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def lines(dom: str, cls: str) -> list:
    """Text of the rendered elements with class ``cls`` (not the embedded JSON)."""
    dom = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    found = re.findall(r'<div class="line ' + cls + r'[^"]*">(.*?)</div>', dom, flags=re.S)
    return [unescape(re.sub(r"<[^>]+>", "", x)) for x in found]


@pytest.fixture(scope="module")
def episode(tmp_path_factory, toy_spy):
    log = tmp_path_factory.mktemp("replay") / "toy.jsonl"
    job = EpisodeJob(toy_spy, seed=3, seats=["scripted:random", "scripted:constant:nonsense",
                                              "scripted:random", "scripted:random"], episode_id="toy-replay")
    record = run_jobs([job], log_path=log)[0]
    return log, record


def test_replay_in_headless_chromium(episode, tmp_path):
    log, record = episode
    page = write_replay(log, "toy-replay", tmp_path / "replay.html")
    spy = next(s for s in record["roster"] if s["role"] == "spy")
    civilian = next(s for s in record["roster"] if s["role"] == "civilian")
    public_text = [m["text"] for m in record["messages"] if m["visibility"] == "public"]

    dom = dump_dom(page, "", tmp_path)
    shown = lines(dom, "public-line")
    assert len(shown) == len(public_text) and all(t in l for t, l in zip(public_text, shown))
    assert "One of you is the spy." in " ".join(shown)
    assert not lines(dom, "seat-line")                               # no seat chosen: no private lines
    assert "Choose a seat" in dom

    spy_view = lines(dump_dom(page, f"#seat={spy['agent']}", tmp_path), "seat-line")
    assert any("SECRET: you are the spy." in l for l in spy_view)
    assert not any("you are a civilian" in l for l in spy_view)
    assert any("One of you is the spy." in l for l in spy_view)      # public lines are in the seat view too

    civ_dom = dump_dom(page, f"?seat={civilian['agent']}", tmp_path)  # the query form works too
    civ_view = lines(civ_dom, "seat-line")
    assert any("SECRET: you are a civilian." in l for l in civ_view)
    assert not any("you are the spy" in l for l in civ_view)

    # invalid attempts and fallbacks are marked; roles are revealed at the end
    bad = next(s for s in record["roster"] if s["policy"] == "scripted:constant:nonsense")
    assert any(not t["valid"] for t in record["turns"])
    bad_dom = dump_dom(page, f"#seat={bad['agent']}", tmp_path)
    assert "invalid" in " ".join(lines(bad_dom, "seat-action")) and "fallback" in " ".join(lines(bad_dom, "seat-action"))
    assert re.search(r"<tr class=\"invalid\">.*?nonsense.*?</tr>", dom, flags=re.S)
    reveal = dom[dom.index('id="reveal"'):]
    assert re.search(r"<td>" + re.escape(spy["name"]) + r"</td><td>" + spy["agent"] + r"</td><td>spy</td>", reveal)
    assert dom.index('id="reveal"') > dom.index('id="turns"') > dom.index('id="public"')


def test_replay_unknown_episode(episode, tmp_path):
    log, _ = episode
    with pytest.raises(LogFormatError, match="episode 'nope' is not in"):
        write_replay(log, "nope", tmp_path / "x.html")


def test_replay_command_defaults_to_the_first_episode(tmp_path, toy_spy):
    import typer
    from typer.testing import CliRunner

    from socialgym_benchmarks.cli import app
    log = tmp_path / "two.jsonl"
    seats = ["scripted:random"] * 4
    run_jobs([EpisodeJob(toy_spy, seed=s, seats=seats, episode_id=f"ep{s}") for s in (1, 2)], log_path=log)
    runner = CliRunner()
    assert isinstance(app, typer.Typer)
    first = runner.invoke(app, ["replay", str(log), "--out", str(tmp_path / "a.html")])
    assert first.exit_code == 0, first.output
    assert '"episode_id": "ep1"' in (tmp_path / "a.html").read_text()
    second = runner.invoke(app, ["replay", str(log), "--index", "1", "--out", str(tmp_path / "b.html")])
    assert second.exit_code == 0 and '"episode_id": "ep2"' in (tmp_path / "b.html").read_text()
    bad = runner.invoke(app, ["replay", str(log), "--index", "5", "--out", str(tmp_path / "c.html")])
    assert bad.exit_code == 2 and "valid: 0 to 1" in bad.output and "Traceback" not in bad.output
