"""Names read from logs and configs are text in every Markdown and HTML output (issue 65.3): the
leaderboard's Markdown note "Played only some of the ... games" once put policy names in raw, so
MkDocs rendered a name as a live ``<img onerror>``. Each output is rendered as its readers would
(Python-Markdown with MkDocs' tables, CommonMark via markdown-it, the browser's HTML) and must show
every hostile name as exactly its text, with no element the name made."""
import html
import re

import pytest

from socialgym_agents.runner import EpisodeJob, run_jobs
from socialgym_benchmarks.leaderboard.render import build_leaderboard
from socialgym_benchmarks.markup import md_cell, md_text
from socialgym_benchmarks.studies.spartan.report import write_report
from socialgym_env.logs import append_episode

markdown = pytest.importorskip("markdown")
markdown_it = pytest.importorskip("markdown_it")

IMG = "<img src=x onerror=alert(1)>"
HOSTILE = [IMG, "pipe|in|name", "`tick` name", "[link](javascript:alert(1))", "![pic](x.png)", "*star* _under_",
           "# heading", "- item", "1. first", "back\\slash & <b>bold</b>", "<script>alert(2)</script>"]
# Elements only markup written by the project makes; one made from a name is an injection.
MADE_BY_NAMES = ("<img", "<a ", "<code", "<em", "<strong", "<script", "<b>", "<li", "<ol", "<ul", "<h1>x", "<del")


def rendered(md: str) -> list:
    return [markdown.markdown(md, extensions=["tables"]),
            markdown_it.MarkdownIt("commonmark").enable("table").render(md)]


def assert_text_only(page: str, names, allowed=()):
    """No element a name could have made (but those in ``allowed``, the page's own), and each name as its text."""
    tags = set(re.findall(r"<[a-z0-9]+", page)) - set(allowed)
    made = [tag for tag in MADE_BY_NAMES if tag.split(" ")[0].rstrip(">") in tags]
    assert made == [], made
    visible = html.unescape(re.sub(r"<[^>]+>", "", page))
    for name in names:
        assert name in visible, name


def test_markdown_text_renders_as_exactly_the_text():
    for name in HOSTILE + ["prisoners_dilemma", "a_b_c", "x\ny"]:
        for page in rendered(f"Before {md_text(name)} after.\n\n| h |\n|---|\n| {md_cell(name)} |\n"):
            assert_text_only(page, [name.replace("\n", " ")] if "\n" in name else [name], allowed={"<p", "<table",
                                                                                                  "<thead", "<tr", "<th",
                                                                                                  "<tbody", "<td", "<br"})
    assert md_text("prisoners_dilemma") == "prisoners_dilemma"       # nothing escaped that needs none


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A leaderboard of hostile policy and player names, one of them playing only some of the games
    (so the "Played only some of the ... games" note names it)."""
    root = tmp_path_factory.mktemp("hostile")
    names = {"scripted:constant:defect": HOSTILE[0], "scripted:constant:cooperate": HOSTILE[1],
             "scripted:random": HOSTILE[3], "scripted:tit_for_tat": HOSTILE[2]}
    jobs = [EpisodeJob(game, seed, seats) for seed in range(3) for game in ("prisoners_dilemma", "chicken")
            for seats in (["scripted:constant:defect", "scripted:random"], ["scripted:random", "scripted:constant:cooperate"])]
    jobs += [EpisodeJob("chicken", seed, ["scripted:tit_for_tat", "scripted:random"]) for seed in range(3)]
    for record in run_jobs(jobs, log_path=root / "raw.jsonl"):
        for index, seat in enumerate(record["roster"]):
            seat["policy"] = names[seat["policy"]]
            seat["name"] = HOSTILE[4 + index]
        append_episode(root / "logs" / f"{record['game']}.jsonl", record)
    build_leaderboard(root / "logs", root / "board", n_boot=20)
    return root / "board", list(names.values())


def test_the_leaderboard_markdown_shows_names_as_text(board):
    folder, names = board
    md = (folder / "leaderboard.md").read_text(encoding="utf-8")
    assert "Played only some of the 2 competitive games" in md
    figures = "![per-game Elo](elo_heatmap.png)\n\n![role gap](role_gap.png)\n"
    assert md.endswith(figures)                                   # the page's own images, then nothing
    for page in rendered(md[:-len(figures)]):
        assert_text_only(page, names, allowed={"<p", "<h1", "<h2", "<table", "<thead", "<tr", "<th", "<tbody", "<td",
                                               "<br"})


def test_the_leaderboard_html_and_replay_pages_show_names_as_text(board):
    folder, names = board
    page = (folder / "leaderboard.html").read_text(encoding="utf-8")
    assert IMG not in page and "<script" not in page
    assert html.escape(IMG) in page
    own = {"<html", "<head", "<meta", "<title", "<style", "<body", "<h1", "<h2", "<p", "<a", "<br", "<img", "<table",
           "<tr", "<th", "<td"}
    images = re.findall(r"<img [^>]*>", page)
    assert all("data:image/png;base64," in tag for tag in images)            # only the embedded figures
    assert all(re.fullmatch(r"<a href='replays/[a-z_]+\.html'>", tag) for tag in re.findall(r"<a [^>]*>", page))
    assert_text_only(re.sub(r"<img [^>]*>", "", page), names, allowed=own)
    for replay in (folder / "replays").glob("*.html"):
        text = replay.read_text(encoding="utf-8")
        body = text.split("<script type='application/json'")[0]
        assert IMG not in body and "<b>bold</b>" not in text and "</script>alert" not in text
        assert_text_only(body, [n for n in names if n in html.unescape(body)] + HOSTILE[4:6],
                         allowed=own | {"<div", "<label", "<select", "<option", "<details", "<summary", "<span"})


def test_spartan_reports_show_names_as_text(tmp_path):
    row = {"game": HOSTILE[6], "side": HOSTILE[1], "condition": "playbook", "round": 1, "source": HOSTILE[3],
           "student": HOSTILE[2], "teacher": HOSTILE[0], "armed_model": HOSTILE[0], "playbook_id": HOSTILE[10],
           "wins": 3, "n": 4, "win_rate": 0.75, "ci_low": 0.3, "ci_high": 0.95, "delta_points": 25.0,
           "significant": False}
    base = {**row, "condition": "baseline", "win_rate": 0.5, "delta_points": None}
    paths = write_report(tmp_path, "distill", {"rows": [row, base]}, {"model": IMG})
    md = paths["md"].read_text(encoding="utf-8")
    for page in rendered(md):
        assert_text_only(page, [IMG, HOSTILE[1], HOSTILE[2], HOSTILE[6], HOSTILE[10]],
                         allowed={"<p", "<h1", "<h2", "<table", "<thead", "<tr", "<th", "<tbody", "<td", "<code"})
