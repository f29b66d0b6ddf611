"""The docs site builds with ``mkdocs build --strict`` and not one warning (every nav page exists, every
relative link and anchor resolves, the API reference renders), the README stays a front page, the docs use one form
for the training scripts, their game counts are the registry's, and the game-author guide's example module runs."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def mkdocs_problems(config_dir: Path, site_dir: Path) -> list[str]:
    """Build the site of ``config_dir/mkdocs.yml`` with ``--strict`` and return every warning and
    error line mkdocs printed (none: a clean build). Not ``-q``: it hides the warnings, and then
    a broken link passes."""
    try:
        import material, mkdocs, mkdocstrings  # noqa: F401
    except ImportError as err:     # a missing feature, not a skip: `make test` installs the docs extra
        raise AssertionError(f"the docs extra is not installed (pip install -e '.[docs]'): {err}") from None
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site_dir)],
                            cwd=config_dir, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    output = (result.stdout + result.stderr).splitlines()
    problems = [line for line in output if line.startswith(("WARNING", "ERROR"))]
    if result.returncode != 0 and not problems:
        problems = [f"mkdocs exited {result.returncode}: " + "\n".join(output[-20:])]
    return problems


def test_mkdocs_builds_strictly_without_a_warning(tmp_path):
    assert mkdocs_problems(ROOT, tmp_path / "site") == []
    assert (tmp_path / "site" / "games" / "werewolves" / "index.html").is_file()
    assert "check_game" in (tmp_path / "site" / "api" / "testing" / "index.html").read_text()


def test_the_docs_check_catches_a_planted_broken_link_and_anchor(tmp_path):
    """The same check on a copy of the docs with three planted faults: each is reported."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    for package in ROOT.glob("socialgym_*"):          # the API pages render the code (paths: [.])
        (tmp_path / package.name).symlink_to(package)
    page = tmp_path / "docs" / "getting-started.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md), "
                    "[no anchor](agents_servers.md#no-such-section), [outside](../../Dockerfile)\n",
                    encoding="utf-8")
    problems = "\n".join(mkdocs_problems(tmp_path, tmp_path / "site"))
    for planted in ("no-such-page.md", "#no-such-section", "../../Dockerfile"):
        assert planted in problems, f"the planted {planted!r} was not reported:\n{problems}"


def test_readme_is_a_front_page_whose_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 15_000
    assert "make demo" in readme and "make test" in readme
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links {target}, which is not in the repository"


def test_docs_run_the_training_scripts_as_modules():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files = [str(p.relative_to(ROOT)) for p in pages if re.search(r"python3? socialgym_training/\w+\.py", p.read_text(encoding="utf-8"))]
    assert not files, f"use `python -m socialgym_training.NAME` in {files}"


def _doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


# Counts that claim the whole catalogue, or its competitive or cooperative part, and so must be
# the registry's: "all 25 games", "episodes on 25 games", "the 21 competitive games", "4
# cooperative games", and a bare "all 25" (no noun after it) on a line about games, as in
# "`--games all` for all 25". A line break may fall inside any of them. Not claims: "All 4
# games ended" (capital: one study's episodes), "all 7 held-out games" and "the 7 games" (a
# subset named before), "all 16 episodes", "all 18 of the 18 battles".
CATALOGUE_COUNTS = (
    ("registered", re.compile(r"\b(?:all|episodes on)\s+(\d+)\s+games\b")),
    ("competitive", re.compile(r"\b(\d+)\s+competitive\s+games\b")),
    ("cooperative", re.compile(r"\b(\d+)\s+cooperative\s+games\b")),
    ("registered", re.compile(r"\ball\s+(\d+)(?=\s*(?:[|).,;:]|\Z))")),
)


def catalogue_counts() -> dict:
    import socialgym_env

    games = socialgym_env.list_games()
    cooperative = sum(bool(game["cooperative"]) for game in games)
    return {"registered": len(games), "competitive": len(games) - cooperative, "cooperative": cooperative}


def stale_game_counts(root: Path, counts: dict) -> list[str]:
    """``FILE:LINE: 'phrase' (N registered games)`` for every catalogue count in README.md and
    docs/ under ``root`` that is not ``counts[kind]``."""
    stale = []
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        lines = text.splitlines()
        for kind, pattern in CATALOGUE_COUNTS:
            for match in pattern.finditer(text):
                line_no = text.count("\n", 0, match.start()) + 1
                bare = "games" not in match.group(0)
                if int(match.group(1)) == counts[kind] or (bare and "game" not in lines[line_no - 1].lower()):
                    continue
                phrase = " ".join(match.group(0).split())
                stale.append(f"{page.relative_to(root)}:{line_no}: {phrase!r} ({counts[kind]} {kind} games)")
    return sorted(stale)


def test_game_counts_in_the_docs_match_the_registry():
    stale = stale_game_counts(ROOT, catalogue_counts())
    assert not stale, "game counts that disagree with the registry:\n" + "\n".join(stale)


def test_the_game_count_check_reports_planted_wrong_counts(tmp_path):
    """Wrong counts of every form planted in a copy of the docs are reported by file and line;
    the phrases that count something else are not."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    counts = catalogue_counts()
    n, competitive, cooperative = counts["registered"], counts["competitive"], counts["cooperative"]
    page = tmp_path / "docs" / "getting-started.md"
    text = page.read_text(encoding="utf-8").rstrip("\n") + "\n"
    before = len(text.splitlines())
    page.write_text(text + (
        f"Checked for all {n - 2} games.\n"                          # +1
        f"`--games all` runs all {n + 1} |\n"                         # +2: bare, on a line about games
        f"240 episodes on {n - 1}\ngames; the {competitive + 1} competitive games\n"   # +3 (wrapped), +4
        f"All 4 games ended; all 7 held-out games; the base model lost all 16\nepisodes; "
        f"all {n - 3}. of the seats\n"                               # +5, +6: not claims (no game on +6)
        f"all {n} games, the {competitive} competitive games, {cooperative} cooperative games\n"),
        encoding="utf-8")
    readme = tmp_path / "README.md"
    text = readme.read_text(encoding="utf-8").rstrip("\n") + "\n"
    readme_lines = len(text.splitlines())
    readme.write_text(text + f"The {cooperative + 2} cooperative games.\n", encoding="utf-8")
    assert stale_game_counts(tmp_path, counts) == sorted([
        f"README.md:{readme_lines + 1}: '{cooperative + 2} cooperative games' ({cooperative} cooperative games)",
        f"docs/getting-started.md:{before + 1}: 'all {n - 2} games' ({n} registered games)",
        f"docs/getting-started.md:{before + 2}: 'all {n + 1}' ({n} registered games)",
        f"docs/getting-started.md:{before + 3}: 'episodes on {n - 1} games' ({n} registered games)",
        f"docs/getting-started.md:{before + 4}: '{competitive + 1} competitive games' ({competitive} competitive games)",
    ])


@pytest.mark.filterwarnings("ignore::UserWarning")      # api_test: Text spaces are not Box/Discrete
def test_the_guides_example_module_is_a_game_the_engine_runs():
    """The module on Adding a game, with its elisions as written, passes PettingZoo's API test and
    plays a round: its GameInfo fields, config, phase, grammar and State calls are the API's."""
    from pettingzoo.test import api_test

    from socialgym_env.env import SocialGymEnv
    from socialgym_env.registry import resolve_config

    page = (ROOT / "docs" / "adding-a-game.md").read_text(encoding="utf-8")
    module = {"__name__": "adding_a_game_example"}
    exec(re.search(r"```python\n(.*?)```", page, re.S).group(1), module)
    game = module["GAME"]
    api_test(SocialGymEnv(game, resolve_config(game, {})), num_cycles=30)
    env = SocialGymEnv(game, resolve_config(game, {}))
    env.reset(seed=0)
    for agent in list(env.agents):
        env.step("bid 2")
    turns = env.episode_record()["turns"]
    assert env.state.phase == "bid" and len(turns) == 3 and all(turn["valid"] for turn in turns)


def test_the_readme_table_and_the_docs_nav_list_every_registered_game():
    import socialgym_env

    registered = sorted(socialgym_env.game_ids())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert sorted(re.findall(r"^\| \[`(\w+)`\]\(docs/games/\1\.md\)", readme, re.M)) == registered
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert sorted(set(re.findall(r"^\s+- [^:]+: games/(\w+)\.md$", nav, re.M)) - {"index"}) == registered


def _calls(text: str, function: str) -> list[str]:
    """The source of every ``function(...)`` call in ``text`` (parentheses balanced)."""
    calls = []
    for match in re.finditer(rf"\b{function}\(", text):
        depth = 0
        for end in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                calls.append(text[match.start():end + 1])
                break
    return calls


def binds_to(call: str, function) -> bool:
    """Whether ``call`` (source text) passes arguments ``function``'s signature accepts."""
    import ast
    import inspect

    node = ast.parse(call, mode="eval").body
    try:
        inspect.signature(function).bind(*node.args, **{k.arg: k.value for k in node.keywords})
    except TypeError:
        return False
    return True


def test_talk_phase_in_the_docs_is_called_as_it_is_defined():
    from socialgym_env.patterns import talk_phase

    assert not binds_to('talk_phase(visibility=TEAM, team="werewolves")', talk_phase)      # no name, no next phase
    calls = [call for page in _doc_pages() for call in _calls(page.read_text(encoding="utf-8"), "talk_phase")]
    assert len(calls) >= 3
    assert [call for call in calls if not binds_to(call, talk_phase)] == []


def test_the_readme_leaderboard_figure_and_caption_are_what_their_command_makes(tmp_path):
    """Runs the caption's command (about 15 s) and compares: the caption's counts, and the counts,
    per-game Elo and overall Elo with its interval the figure was drawn from (its PNG text fields)."""
    import importlib.util

    from PIL import Image

    spec = importlib.util.spec_from_file_location("readme_leaderboard", ROOT / "docs" / "scripts" / "readme_leaderboard.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    summary = script.run_tournament(tmp_path / "run")
    for page in script.FRONT_PAGES:
        assert script.page_caption(page) == script.caption(summary), f"{page.name}'s caption is stale"
    with Image.open(script.FIGURE) as image:
        drawn = {key.removeprefix("socialgym:"): value for key, value in image.text.items()}
    fresh = script.figure_fields(summary)
    assert {k: drawn.get(k) for k in ("command", "episodes", "games", "competitive_games")} == \
           {k: fresh[k] for k in ("command", "episodes", "games", "competitive_games")}
    drawn_elo, fresh_elo = json.loads(drawn["per_game_elo"]), json.loads(fresh["per_game_elo"])
    assert drawn_elo.keys() == fresh_elo.keys()
    # the same seeded run; a last-digit difference in the fit on another CPU is not a stale figure
    off = {(game, policy): (drawn_elo[game].get(policy), elo) for game in fresh_elo for policy, elo in fresh_elo[game].items()
           if drawn_elo[game].get(policy) is None or abs(drawn_elo[game][policy] - elo) > 2}
    assert not off, f"the figure is stale; regenerate it with python docs/scripts/readme_leaderboard.py: {off}"
    # the overall panel: each policy's Elo and both ends of its interval (an unbounded end on both or neither)
    drawn_overall = json.loads(drawn.get("overall_elo_interval", "{}"))
    fresh_overall = json.loads(fresh["overall_elo_interval"])
    assert drawn_overall.keys() == fresh_overall.keys(), "the figure's overall panel is stale"
    off = {policy: (drawn_overall[policy], values) for policy, values in fresh_overall.items()
           if any((a is None) != (b is None) or (a is not None and abs(a - b) > 2)
                  for a, b in zip(drawn_overall[policy], values))}
    assert not off, f"the figure's overall intervals are stale; regenerate it with python docs/scripts/readme_leaderboard.py: {off}"


def test_the_readme_shows_training_rating_and_adaptive_runs_and_keeps_two_setup_commands():
    """What a newcomer of this field looks for first (issue 65 item 16): the route that learns on a
    CPU, ``socialgym rate`` and ``--until-resolved`` as examples, make demo's time per CPU kind
    (its block, which the lead fills), and still exactly two setup commands."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = re.search(r"## The two commands\n+(?:<!-- commands: .*? -->\n)?```bash\n(.*?)```", readme, re.S).group(1)
    assert re.findall(r"^(make \w+)", setup, re.M) == ["make demo", "make test"]
    examples = re.search(r"## Train, rate, stop when resolved\n(.*?)\n## ", readme, re.S).group(1)
    block = re.search(r"```bash\n(.*?)```", examples, re.S).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith(("#", " "))]
    assert [c.split()[:3] for c in commands] == [["python", "-m", "socialgym_training.selfplay"],
                                                 ["socialgym", "rate", "smollm2"], ["socialgym", "tournament", "--until-resolved"]]
    assert "--game liars_dice" in examples and "--device cpu" in examples
    assert re.search(r"<!-- demo-time -->\n.*make demo.*CPU kind.*\n<!-- /demo-time -->", readme)


def test_every_page_that_mentions_torchrl_names_classic_infos():
    pages = [page for page in _doc_pages() if "TorchRL" in page.read_text(encoding="utf-8")]
    assert ROOT / "docs" / "integrations" / "masked.md" in pages
    assert [p.name for p in pages if "classic_infos=True" not in p.read_text(encoding="utf-8")] == []
