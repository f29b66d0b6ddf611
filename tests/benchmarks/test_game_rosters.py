"""A game played by its own roster (``tournament --roster GAME=SPECS --game-episodes GAME=N``, issue
42): the run, its resume, and a leaderboard with policies that play one game only -- rated there,
separated from whom they met, never compared with a policy they share no game with."""
import csv
import json
from collections import Counter
from io import StringIO

import numpy as np
import pytest
from rich.console import Console

from socialgym_benchmarks.leaderboard.render import build_leaderboard, print_leaderboard
from socialgym_env import cli
from socialgym_env.logs import append_episode, iter_log_dir
from socialgym_env.env import LOG_SCHEMA

from tests.helpers import duel


def werewolves(wolves: str, village: str, wolves_win: bool, index: int) -> dict:
    roles = [("Werewolf", "werewolves")] * 2 + [("Seer", "village"), ("Witch", "village")] + [("Villager", "village")] * 2
    roster = [{"agent": f"player_{i}", "policy": wolves if team == "werewolves" else village, "role": role,
               "team": team} for i, (role, team) in enumerate(roles)]
    rewards = {s["agent"]: 1.0 if (s["team"] == "werewolves") == wolves_win else -1.0 for s in roster}
    return {"schema": LOG_SCHEMA, "seed": index, "turns": [], "episode_id": f"ww|{wolves}~{village}|{index}",
            "game": "werewolves", "roster": roster, "finished": True, "rewards": rewards, "scores": {}}


def one_game_policies(rng) -> list:
    """A and B play chess, Werewolves and Kuhn poker, evenly matched; C plays Kuhn poker only and
    wins 90% of its games there (planted); D plays the Prisoner's Dilemma only, against A."""
    records = [duel("chess", *(("A", "B") if i % 2 else ("B", "A")), bool(i % 4 < 2), i) for i in range(40)]
    records += [werewolves(w, v, bool(i % 2), i) for w, v in (("A", "B"), ("B", "A")) for i in range(10)]
    records += [duel("kuhn_poker", "A", "B", bool(i % 2), i) for i in range(20)]
    records += [duel("kuhn_poker", "C", other, bool(rng.random() < 0.9), 100 * k + i)
                for k, other in enumerate("AB") for i in range(40)]
    records += [duel("prisoners_dilemma", "A", "D", bool(i % 2), i) for i in range(20)]
    return records


def test_a_one_game_policy_is_separated_from_whom_it_met_and_compared_with_no_one_else(tmp_path):
    for record in one_game_policies(np.random.default_rng(4)):
        append_episode(tmp_path / "logs" / f"{record['game']}.jsonl", record)
    summary = build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=20)
    assert summary["games_played"]["C"] == ["kuhn_poker"] and summary["games_played"]["D"] == ["prisoners_dilemma"]
    assert len(summary["games_played"]["A"]) == 4
    separated = summary["separated"]
    kuhn = {(r["higher"], r["lower"]): r["separated"] for r in separated["per_game"]["kuhn_poker"]}
    assert kuhn[("C", "A")] and kuhn[("C", "B")] and len(kuhn) == 3
    overall = {frozenset((r["higher"], r["lower"])): r for r in separated["overall"]}
    assert overall[frozenset("AC")]["separated"] and overall[frozenset("AC")]["higher"] == "C"
    # C and D share no game: compared only through A's strength in other games, so not at all
    assert separated["no_common_game"] == [["B", "D"], ["C", "D"]]
    assert frozenset("CD") not in overall and frozenset("BD") not in overall
    # the families count the pairs compared: overall AB, AC, BC, AD; per game 1 + 1 + 3 + 1
    assert separated["level_overall"] == pytest.approx(1 - 0.05 / 4)
    assert separated["level_per_game"] == pytest.approx(1 - 0.05 / 6)
    # rated where it played, absent elsewhere: per game, per category, role tables
    assert set(summary["per_game"]["chess"]) == {"A", "B"} and "C" in summary["per_game"]["kuhn_poker"]
    assert "C" in summary["game_weighted"]["per_category"]["control"]
    assert all("C" not in table for category, table in summary["game_weighted"]["per_category"].items()
               if category not in ("control",))
    assert set(summary["roles"]["werewolves"]) == {"A", "B"}
    assert summary["overall"]["C"]["elo"] > summary["overall"]["A"]["elo"]
    assert summary["overall"]["C"]["elo_games_equal"] is not None
    # every output says it
    rows = list(csv.DictReader(open(tmp_path / "board" / "separated_pairs.csv")))
    assert {(r["game"], r["higher"], r["lower"], r["separated"]) for r in rows} >= {("ALL", "C", "A", "True"),
                                                                                ("kuhn_poker", "C", "B", "True")}
    for page in ("leaderboard.md", "leaderboard.html"):
        assert "Played only some of the 4 competitive games" in (tmp_path / "board" / page).read_text()
    console = Console(file=StringIO(), width=200)
    print_leaderboard(summary, console=console)
    printed = " ".join(console.file.getvalue().split())
    assert "C > A" in printed.split("Per game")[0] and "kuhn_poker: C > " in printed
    assert "not compared (no game in common): B / D, C / D" in printed
    assert "C (kuhn_poker); D (prisoners_dilemma)" in printed


def test_a_run_with_a_game_s_own_roster_plays_it_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["tournament", "--games", "prisoners_dilemma,kuhn_poker", "--agents", "scripted:heuristic,scripted:random",
            "--roster", "kuhn_poker=scripted:heuristic,scripted:random,scripted:tit_for_tat",
            "--game-episodes", "kuhn_poker=3", "--episodes", "2", "--bootstrap", "10", "--out", "run"]
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    printed = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0, printed
    records = list(iter_log_dir(tmp_path / "run" / "logs"))
    kuhn = Counter(r["tags"]["matchup"] for r in records if r["game"] == "kuhn_poker")
    assert kuhn == {"scripted:heuristic~scripted:random": 4, "scripted:heuristic~scripted:tit_for_tat": 4,
                    "scripted:random~scripted:tit_for_tat": 4}           # 3 a combination, rounded up to 2 seats
    assert Counter(r["tags"]["matchup"] for r in records if r["game"] == "prisoners_dilemma") == {
        "scripted:heuristic~scripted:random": 2}
    board = json.loads((tmp_path / "run" / "leaderboard.json").read_text())
    assert board["games_played"]["scripted:tit_for_tat"] == ["kuhn_poker"]
    assert "Played only some of the 2 competitive games" in printed and "scripted:tit_for_tat (kuhn_poker)" in printed
    assert "episodes: 14 planned, 0 already logged, 14 played now" in printed
    with pytest.raises(SystemExit) as again:                 # the same command: the same plan, all logged
        cli.main(argv)
    assert again.value.code == 0
    assert "episodes: 14 planned, 14 already logged, 0 played now" in capsys.readouterr().out


def test_the_overall_table_ranks_a_policy_only_among_those_that_played_its_games(tmp_path):
    """C (Kuhn poker only) out-rates A and B, who played three and four games: it is not ranked
    among them, but shown apart with its game, ranked among its own kind (issue 65 item 13); the
    groups apart in the order of their games (the Prisoner's Dilemma, normal-form, first)."""
    from socialgym_benchmarks.leaderboard.tables import overall_groups

    for record in one_game_policies(np.random.default_rng(4)):
        append_episode(tmp_path / "logs" / f"{record['game']}.jsonl", record)
    summary = build_leaderboard(tmp_path / "logs", tmp_path / "board", n_boot=20)
    assert summary["policies"][0] == "C"                       # the pooled fit puts C first
    assert overall_groups(summary) == [(None, ["A", "B"] if summary["policies"].index("A") < summary["policies"].index("B")
                                        else ["B", "A"]), (["prisoners_dilemma"], ["D"]), (["kuhn_poker"], ["C"])]
    ranked = [(row["rank"], row["policy"]) for row in csv.DictReader(open(tmp_path / "board" / "leaderboard.csv"))]
    assert [policy for _, policy in ranked[:2]] == overall_groups(summary)[0][1]
    assert ranked == [("1", ranked[0][1]), ("2", ranked[1][1]), ("1", "D"), ("1", "C")]
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    overall = md.split("## Overall (competitive games)")[1].split("##")[0]
    assert "| C |" not in overall and "| D |" not in overall
    assert "## Played only kuhn_poker (ranked among themselves, not against the overall table)" in md
    assert "Played only prisoners_dilemma (ranked among themselves" in (tmp_path / "board" / "leaderboard.html").read_text()
    console = Console(file=StringIO(), width=200)
    print_leaderboard(summary, console=console)
    printed = console.file.getvalue()
    first = printed.split("Played only kuhn_poker")[0]
    assert "│ 1 │ A" in first or "│ 1 │ B" in first
    assert "│ C" not in first and "│ 1 │ C" in printed.split("Played only kuhn_poker")[1]


def test_one_group_when_every_policy_played_every_game():
    from socialgym_benchmarks.leaderboard.tables import OVERALL, overall_groups

    summary = {"competitive_games": ["chess", "kuhn_poker"], "policies": ["B", "A", "E"],
               "games_played": {"A": ["chess", "kuhn_poker"], "B": ["chess", "kuhn_poker"], "E": []},
               "overall": {p: {"elo": None} for p in "ABE"}}
    assert overall_groups(summary) == [(None, ["B", "A", "E"])]
    assert [row["rank"] for row in OVERALL.rows(summary)] == [1, 2, 3]
    assert OVERALL.file_rows(summary) == OVERALL.rows(summary)
