"""The rulebook ships with the project: each game's module docstring is its complete rules,
``socialgym rules`` prints them, docs/games/ is generated from them (and fails here when it
drifts), and nothing in the repository points outside it."""
import re
import subprocess
from pathlib import Path

import pytest

from socialgym_env import cli, docgen

ROOT = Path(__file__).resolve().parents[1]
GAMES = docgen.builtin_game_ids()

# What each game's rules state (a pattern per topic): how to create it, what each seat sees,
# how it ends, the reward, the turn cap, the invalid-action fallbacks and its version.
TOPICS = {"create": r"Create: ``socialgym_env\.make\(", "observation": r"(?i)observation|sees?\b|visib|private",
          "end": r"(?i)\bends?\b|\bwins?\b|after ``", "reward": r"(?i)reward", "turn cap": r"(?i)\bcap\b",
          "fallback": r"(?i)fallback", "version": r"Version history: v\d"}


@pytest.mark.parametrize("game_id", GAMES)
def test_each_docstring_states_the_rules(game_id):
    rules = docgen.game_rules(game_id)
    missing = [topic for topic, pattern in TOPICS.items() if not re.search(pattern, rules)]
    assert not missing, f"{game_id}'s module docstring does not state: {', '.join(missing)}"
    players = docgen.game_class(game_id).info.num_players
    assert f"{players} players" in rules.splitlines()[0]


def test_the_generated_game_pages_match_the_docstrings():
    stale = docgen.drifted(ROOT / "docs" / "games")
    assert not stale, f"docs/games drifted from the docstrings ({stale}): run python -m socialgym_env.docgen"


def test_drift_is_detected(tmp_path):
    assert docgen.main(["--out", str(tmp_path)]) == 0
    assert docgen.drifted(tmp_path) == []
    page = tmp_path / "chess.md"
    page.write_text(page.read_text().replace("python-chess", "pychess"))
    assert docgen.drifted(tmp_path) == ["chess.md"]
    assert docgen.main(["--out", str(tmp_path), "--check"]) == 1


def test_rules_command_prints_a_games_rules_and_the_shared_ones(capsys):
    for args, expected in ((["rules", "liars_dice"], docgen.game_rules("liars_dice")), (["rules"], docgen.common_rules())):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(args)
        assert exit_info.value.code == 0
        assert capsys.readouterr().out.strip() == expected
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rules", "liars_dic"])
    assert exit_info.value.code == 2
    assert "unknown game 'liars_dic'. Did you mean liars_dice?" in capsys.readouterr().err


def test_nothing_in_the_repository_points_outside_it():
    outside = ["../" + "shared", "shared" + "/", "GAMES" + ".md", "DESIGN" + ".md", "seeds" + "/"]
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix in (".png", ".gz", ".pt", ".bin") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        hits += [f"{name}: {needle}" for needle in outside if needle in text]
    assert not hits, hits
