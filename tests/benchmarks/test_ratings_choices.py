"""The rating choices of issue 26: ``--ties exclude|split`` in every rating, the released code's
online Elo (K = 32) beside the BT fit, and role-conditioned gaps flagged where the data cannot
identify them (a two-policy tournament) and recovered where they can (three policies)."""
import itertools
import json

import matplotlib.figure
from matplotlib.backends.backend_agg import FigureCanvasAgg
import numpy as np
import pytest
from typer.testing import CliRunner

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.cli import app
from socialgym_benchmarks.leaderboard.summary import summarize
from socialgym_benchmarks.leaderboard.render import build_leaderboard, plot_role_gap
from socialgym_env.env import LOG_SCHEMA
from socialgym_env.logs import append_episode

LOGGED = {"schema": LOG_SCHEMA, "seed": 0, "turns": []}      # what a log line needs besides the outcome


def ffa(values: dict, game="skull") -> dict:
    """A free-for-all record: seat i -> (policy, reward)."""
    roster = [{"agent": f"player_{i}", "policy": p, "role": "Player", "team": ""} for i, (p, _) in enumerate(values.items())]
    return {**LOGGED, "episode_id": json.dumps(values), "game": game, "roster": roster, "finished": True,
            "rewards": {f"player_{i}": r for i, (_, r) in enumerate(values.items())}, "scores": {}}


def werewolves(wolves: str, village: str, wolves_win: bool, index: int) -> dict:
    """A Werewolves record with one policy per team (2 wolves, 4 villagers)."""
    roles = [("Werewolf", "werewolves")] * 2 + [("Seer", "village"), ("Witch", "village")] + [("Villager", "village")] * 2
    roster = [{"agent": f"player_{i}", "policy": wolves if team == "werewolves" else village, "role": role, "team": team}
              for i, (role, team) in enumerate(roles)]
    rewards = {s["agent"]: (1.0 if (s["team"] == "werewolves") == wolves_win else -1.0) for s in roster}
    return {**LOGGED, "episode_id": f"ww-{wolves}-{village}-{index}", "game": "werewolves", "roster": roster,
            "finished": True,
            "rewards": rewards, "scores": {}}


# ----------------------------------------------------------------------------- ties
def test_ties_are_left_out_or_split_one_win_each_way():
    record = ffa({"a": 1, "b": 1, "c": -1})
    assert sorted(bt.episode_pairs(record)) == [("a", "c"), ("b", "c")]
    assert sorted(bt.episode_pairs(record, ties="split")) == [("a", "b"), ("a", "c"), ("b", "a"), ("b", "c")]
    with pytest.raises(ValueError, match="ties must be one of exclude, split"):
        bt.episode_pairs(record, ties="half")


def test_split_ties_fit_as_the_released_code_counts_them():
    """The released code adds each tie as one a-wins and one b-wins row: the BT fit of the win
    matrix plus the tie counts in both cells."""
    records = [ffa({"a": 1, "b": -1})] * 3 + [ffa({"a": -1, "b": 1})] + [ffa({"a": 0, "b": 0})] * 4
    wins = np.array([[0, 3.0], [1, 0]])             # wins[i, j]: times i beat j
    ties = np.array([[0, 4.0], [4, 0]])
    split = bt.rate_records(records, ties="split", n_boot=0, players=["a", "b"])
    assert split.elo == pytest.approx(bt.fit_bt(wins + ties), abs=1e-6)
    exclude = bt.rate_records(records, n_boot=0, players=["a", "b"])
    assert exclude.elo == pytest.approx(bt.fit_bt(wins), abs=1e-6)
    assert abs(split.elo[0] - split.elo[1]) < abs(exclude.elo[0] - exclude.elo[1])   # ties pull towards equal


def test_every_rating_of_the_summary_follows_ties():
    records = [ffa({"a": 1, "b": -1, "c": -1})] * 2 + [ffa({"a": 0, "b": 0, "c": 1})] * 3
    excluded, split = summarize(records, n_boot=0), summarize(records, n_boot=0, ties="split")
    assert excluded["settings"]["ties"] == "exclude" and split["settings"]["ties"] == "split"
    for key in ("overall", "per_game"):
        assert json.dumps(excluded[key], sort_keys=True) != json.dumps(split[key], sort_keys=True), key
    # a: 2 x 2 wins, 3 losses to c; split adds the 3 ties with b, each a battle both ways
    assert excluded["overall"]["a"]["battles"] == 4 + 3 and split["overall"]["a"]["battles"] == 4 + 3 + 6
    assert excluded["online_elo"]["overall"] != split["online_elo"]["overall"]


# ----------------------------------------------------------------------------- online Elo
def test_online_elo_is_the_k32_update_in_a_seeded_order():
    one_episode = bt.collect_battles([{"episode_id": "e", "game": "skull", "finished": True,
                                       "roster": [{"agent": "x", "policy": "a"}, {"agent": "y", "policy": "b"}],
                                       "rewards": {"x": 1, "y": -1}}])
    assert bt.online_elo(one_episode) == {"a": 1016.0, "b": 984.0}        # E = 0.5: 32 x 0.5 each way
    # A then B wins within one episode: the second update starts from 1016 / 984
    battles = bt.Battles(["a", "b"], np.array([0, 1]), np.array([1, 0]), np.array([0, 0]), 1)
    second = 32 * (1 - 1 / (1 + 10 ** ((1016 - 984) / 400)))
    assert bt.online_elo(battles) == pytest.approx({"a": 1016 - second, "b": 984 + second})
    many = bt.collect_battles([ffa({"a": 1, "b": -1})] * 5 + [ffa({"a": -1, "b": 1})] * 5)
    orders = {json.dumps(bt.online_elo(many, seed=s)) for s in range(6)}
    assert len(orders) > 1                                                 # path-dependent: the order matters
    assert bt.online_elo(many, seed=3) == bt.online_elo(many, seed=3)      # and is fixed by the seed
    assert sum(bt.online_elo(many, seed=3).values()) == pytest.approx(2000)


# ----------------------------------------------------------------------------- role-conditioned gaps
def _tournament(strength: dict, episodes: int, rng) -> list:
    """Every ordered pair of policies (wolves, village): the wolves win with the logistic of
    the planted alt strength of the wolves' policy minus the main strength of the village's."""
    records = []
    for wolves, village in itertools.permutations(strength, 2):
        p = 1 / (1 + np.exp(-(strength[wolves]["alt"] - strength[village]["main"])))
        records += [werewolves(wolves, village, bool(rng.random() < p), i) for i in range(episodes)]
    return records


def test_two_policies_cannot_identify_per_policy_gaps_and_say_so():
    rng = np.random.default_rng(0)
    strength = {"A": {"alt": 2.0, "main": 0.0}, "B": {"alt": -1.0, "main": 0.0}}   # planted: A's gap >> B's
    table = summarize(_tournament(strength, 60, rng), n_boot=0)["roles"]["werewolves"]
    assert table["A"]["gap"] == pytest.approx(table["B"]["gap"])          # the fit cannot tell them apart
    assert not table["A"]["gap_identified"] and not table["B"]["gap_identified"]


def test_three_policies_identify_per_policy_gaps():
    rng = np.random.default_rng(1)
    strength = {"A": {"alt": 2.0, "main": 0.0}, "B": {"alt": -1.0, "main": 0.0}, "C": {"alt": 0.5, "main": 0.5}}
    table = summarize(_tournament(strength, 80, rng), n_boot=0)["roles"]["werewolves"]
    assert all(row["gap_identified"] for row in table.values())
    gaps = {p: table[p]["gap"] for p in strength}
    assert gaps["A"] > gaps["C"] > gaps["B"] and gaps["A"] - gaps["B"] > 300      # planted 3 logits ~ 520 Elo


def _board_with_figures(records, tmp_path, monkeypatch):
    """build_leaderboard over ``records`` (bootstrap 20), and every figure it drew."""
    for record in records:
        append_episode(tmp_path / "logs" / "werewolves.jsonl", record)
    figures = []
    real_savefig = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), real_savefig(fig, *a, **k))[1])
    return build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=20), figures


def test_role_gap_table_plot_and_csv_label_what_is_not_identified(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    records = _tournament({"A": {"alt": 1.0, "main": 0.0}, "B": {"alt": 0.0, "main": 0.0}}, 20, rng)
    summary, figures = _board_with_figures(records, tmp_path, monkeypatch)
    csv_text = (tmp_path / "board" / "role_elo.csv").read_text()
    assert csv_text.splitlines()[0].endswith(",gap,gap_lo,gap_hi,gap_boot_lo,gap_boot_hi,gap_identified,gap_status") and ",False" in csv_text
    assert "(n.i.)" in (tmp_path / "board" / "leaderboard.md").read_text()
    assert "online_elo" in json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    role_fig = next(f for f in figures if "Role gap" in f.axes[0].get_title())
    renderer = FigureCanvasAgg(role_fig).get_renderer()
    title = role_fig.axes[0].title.get_window_extent(renderer)
    box = role_fig.bbox
    assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1    # the title is not clipped
    assert "not id." in role_fig.axes[0].get_title()
    plot_role_gap(summary, tmp_path / "again.png")                             # and renders again
    _assert_every_output_marks(tmp_path / "board", summary, "not identified", "(n.i.)", "not id.", role_fig)


def _assert_every_output_marks(board, summary, status, table_mark, figure_mark, role_fig):
    """JSON, CSV, Markdown, HTML, the console and the role-gap figure all say ``status``."""
    from io import StringIO

    from rich.console import Console

    from socialgym_benchmarks.leaderboard.render import print_leaderboard

    rows = json.loads((board / "leaderboard.json").read_text())["roles"]["werewolves"]
    assert {row["gap_status"] for row in rows.values()} == {status}
    assert f",{status}" in (board / "role_elo.csv").read_text()
    assert table_mark in (board / "leaderboard.md").read_text()
    assert table_mark in (board / "leaderboard.html").read_text()
    console = Console(file=StringIO(), width=300)
    print_leaderboard(summary, console=console)
    assert any(status in line and "werewolves" in line for line in console.file.getvalue().splitlines())
    cells = [text.get_text() for text in role_fig.axes[0].texts]
    assert cells and all(figure_mark in cell for cell in cells)


def test_separated_role_gaps_are_marked_in_every_output(tmp_path, monkeypatch):
    # three policies (every gap identified by rank), and the wolves win every episode: each
    # policy's alt side beats every main side, so no gap has a finite upper bound
    records = [werewolves(w, v, True, i) for w, v in itertools.permutations("ABC", 2) for i in range(6)]
    summary, figures = _board_with_figures(records, tmp_path, monkeypatch)
    rows = summary["roles"]["werewolves"]
    assert all(row["gap_identified"] and None in (row["gap_lo"], row["gap_hi"]) for row in rows.values())
    role_fig = next(f for f in figures if "Role gap" in f.axes[0].get_title())
    assert "sep. = outcomes separated" in role_fig.axes[0].get_title()
    _assert_every_output_marks(tmp_path / "board", summary, "separated", "(sep.)", "sep.", role_fig)
    # the bootstrap's interval cannot show the separation; the status still does
    boot = summarize(records, n_boot=50, interval="bootstrap")["roles"]["werewolves"]
    assert {row["gap_status"] for row in boot.values()} == {"separated"}


def test_ties_option_on_the_cli(tmp_path):
    append_episode(tmp_path / "logs" / "skull.jsonl", ffa({"a": 1, "b": 0, "c": 0}))
    runner = CliRunner()
    bad = runner.invoke(app, ["leaderboard", str(tmp_path / "logs"), "--out", str(tmp_path / "b"), "--ties", "half"])
    assert bad.exit_code == 2 and "ties must be one of exclude, split" in bad.output
    good = runner.invoke(app, ["leaderboard", str(tmp_path / "logs"), "--out", str(tmp_path / "b"), "--ties", "split",
                               "--bootstrap", "10"])
    assert good.exit_code == 0, good.output
    assert json.loads((tmp_path / "b" / "leaderboard.json").read_text())["settings"]["ties"] == "split"
