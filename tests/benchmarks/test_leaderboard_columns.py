"""Issue 67 item 1: every leaderboard table is one declaration (socialgym_benchmarks.leaderboard.tables: a Table of Columns)
that the CSV, Markdown, HTML and console writers walk; the written files and the console show each
declared table with its declared headers and a cell per header in every row, and a column added
to a declaration reaches every output with its values."""
import csv
import dataclasses
import io
import re
from html.parser import HTMLParser

import pytest
from rich.console import Console

from socialgym_benchmarks.leaderboard import render, tables
from socialgym_benchmarks.leaderboard.render import md_cell
from socialgym_benchmarks.markup import md_text
from socialgym_benchmarks.leaderboard.tables import Column
from socialgym_benchmarks.tournament import plan_tournament, run_tournament

AGENTS = ["scripted:heuristic", "scripted:random", "scripted:tit_for_tat"]
# two competitive games (one with hidden roles) and a cooperative one: every table has rows
GAMES = ["prisoners_dilemma", "undercover", "stag_hunt"]


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("columns")
    jobs = plan_tournament(GAMES, AGENTS, episodes=2, seed=3)
    run_tournament(jobs, out / "t", progress=False, leaderboard=False)
    summary = render.build_leaderboard(out / "t" / "logs", out / "board", n_boot=20)
    return summary, out / "board"


def file_header(table) -> list:
    return [field if isinstance(field, str) else field[0] for column in table.columns for field in column.csv]


def page_header(table) -> list:
    return [column.title for column in table.columns if column.title is not None]


def console_header(table) -> list:
    return [column.console for column in table.columns if column.console is not None]


def read_csv(path) -> list:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def markdown_tables(text: str) -> dict:
    """{title: [header cells, *row cells]} of every ``## title`` table (cells split on unescaped |)."""
    tables, title = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:]
            tables[title] = []
        elif title and line.startswith("|") and not line.startswith("|---"):
            tables[title].append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return tables


class HtmlTables(HTMLParser):
    """{h2 title: [header cells, *row cells]} of the tables that follow an h2."""

    def __init__(self, text: str):
        super().__init__()
        self.tables, self.title, self.cell, self.tag = {}, None, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tag = tag
        if tag == "tr" and self.title is not None:
            self.tables.setdefault(self.title, []).append([])
        elif tag in ("th", "td"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self.tables[self.title][-1].append(self.cell)
            self.cell = None
        self.tag = None

    def handle_data(self, data):
        if self.tag == "h2":
            self.title = data
        elif self.cell is not None:
            self.cell += data


def console_tables(text: str) -> dict:
    """{title: [header cells, *row cells]} of every rich table (a title line, then its box)."""
    tables, lines, title = {}, text.splitlines(), None
    for before, line in zip([""] + lines, lines):
        if line.startswith("┏"):
            title = before.strip()
            tables[title] = []
        elif title and line[:1] in ("┃", "│"):
            tables[title].append([cell.strip() for cell in line.strip()[1:-1].split(line[0])])
    return tables


def printed(summary: dict) -> str:
    out = io.StringIO()
    render.print_leaderboard(summary, Console(file=out, width=400))
    return out.getvalue()


def test_every_file_holds_its_declared_fields_in_every_row(board):
    summary, outdir = board
    declared = tables.file_tables()
    assert [table.file for table in declared] == [name for name in summary["files"] if name.endswith(".csv")]
    for table in declared:
        header, *rows = read_csv(outdir / table.file)
        assert header == file_header(table), table.file
        assert rows and all(len(row) == len(header) for row in rows), table.file
        assert len(rows) == len((table.file_rows or table.rows)(summary)), table.file


def test_every_page_table_shows_its_declared_titles_in_every_row(board):
    summary, outdir = board
    page = markdown_tables((outdir / "leaderboard.md").read_text())
    html = HtmlTables((outdir / "leaderboard.html").read_text()).tables
    declared = tables.page_tables(summary)
    titles = [tables.heading(table.title, summary) for table in declared]
    assert list(page) == [md_text(t) for t in titles] and [t for t in html if t in titles] == titles
    for table, title in zip(declared, titles):
        for (header, *rows), titles_as_written in ((page[md_text(title)], map(md_cell, page_header(table))),
                                                   (html[title], page_header(table))):
            assert header == list(titles_as_written), title
            assert rows and all(len(row) == len(header) for row in rows), title
            assert len(rows) == len(table.rows(summary)), title


def test_the_console_shows_the_declared_console_columns_in_every_row(board):
    summary, _ = board
    shown = console_tables(printed(summary))
    for table in (tables.OVERALL, tables.DECISIONS):
        header, *rows = shown[tables.heading(table.console_title, summary)]
        assert header == console_header(table)
        assert rows and all(len(row) == len(header) for row in rows)
        assert len(rows) == len(table.rows(summary)) == len(summary["policies"])


@pytest.mark.parametrize("name", ["OVERALL", "DECISIONS"])
def test_a_column_added_to_a_declaration_reaches_every_output(board, name, monkeypatch, tmp_path):
    summary, _ = board
    # shown as the policy reversed, filed as the policy itself: each output's own value
    planted = Column("planted", lambda row: row["policy"][::-1], (("planted_field", "policy"),), "planted")
    table = dataclasses.replace(getattr(tables, name), columns=getattr(tables, name).columns + (planted,))
    monkeypatch.setattr(tables, name, table)
    render.write_csvs(summary, tmp_path)
    render.write_markdown(summary, tmp_path / "board.md", [])
    render.write_html(summary, tmp_path / "board.html", {}, [])

    header, *rows = read_csv(tmp_path / table.file)
    assert header[-1] == "planted_field" and all(row[-1] == row[header.index("policy")] for row in rows)
    title = tables.heading(table.title, summary)
    for header, *rows in (markdown_tables((tmp_path / "board.md").read_text())[md_text(title)],
                          HtmlTables((tmp_path / "board.html").read_text()).tables[title]):
        assert header[-1] == "planted" and all(row[-1] == row[header.index("policy")][::-1] for row in rows)
    header, *rows = console_tables(printed(summary))[tables.heading(table.console_title, summary)]
    assert header[-1] == "planted"
    assert sorted(row[-1] for row in rows) == sorted(p[::-1] for p in summary["policies"])
