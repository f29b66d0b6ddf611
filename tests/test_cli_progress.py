"""What a user sees on long runs (issue 30): the bar moves with the logs, a status line inside
long episodes, an interrupted run says how to resume (and does), and the small display fixes."""
import errno
import json
import os
import re
import signal

import pytest

import socialgym_env
from socialgym_benchmarks.tournament import backends
from socialgym_env import cli
from socialgym_env.cli_errors import explain_os_error, run_command

GAMES = "prisoners_dilemma,stag_hunt"
AGENTS = "scripted:random,scripted:heuristic"


def _run(capsys, *argv):
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def _logged(log_dir):
    lines = [line for path in sorted(log_dir.glob("*.jsonl")) for line in path.read_text().splitlines() if line]
    return [json.loads(line)["episode_id"] for line in lines]


def test_the_bar_counts_what_is_logged_and_an_interrupted_run_resumes(tmp_path, monkeypatch, capsys):
    out = tmp_path / "t"
    argv = ["tournament", "--games", GAMES, "--agents", AGENTS, "--episodes", "2", "--workers", "1",
            "--bootstrap", "10", "--out", str(out)]
    real = backends._progress_callback
    seen = []                                   # (bar position, episodes in the logs) at each record

    def watching(stop_after=None):
        def make(ep_bar, game_bar, shards, *estimate):
            update = real(ep_bar, game_bar, shards, *estimate)

            def on_record(record):
                update(record)
                shown = re.findall(r"episodes:[^|]*\|[^|]*\| *(\d+)/\d+", capsys.readouterr().err)
                seen.append((int(shown[-1]) if shown else None, len(_logged(out / "logs"))))
                if stop_after is not None and len(seen) == stop_after:
                    raise KeyboardInterrupt          # as Ctrl-C (or SIGTERM under the CLI) would
            return on_record
        return make

    monkeypatch.setattr(backends, "_progress_callback", watching(stop_after=3))
    code, _, err = _run(capsys, *argv)
    assert code == 130
    first = _logged(out / "logs")
    assert len(first) == 3
    assert "interrupted: 3 of" in err and "run the same command again to resume" in err
    planned = int(err.split("interrupted: 3 of ")[1].split()[0])
    assert planned > 3

    monkeypatch.setattr(backends, "_progress_callback", watching())
    code, stdout, _ = _run(capsys, *argv)
    assert code == 0
    assert f"{planned} planned, 3 already logged, {planned - 3} played now" in " ".join(stdout.split())
    ids = _logged(out / "logs")
    assert len(ids) == len(set(ids)) == planned and set(first) <= set(ids)   # resumed: nothing lost or repeated
    assert seen and all(bar == logged for bar, logged in seen), seen       # what the bar shows = what is logged
    assert seen[3][0] == 4                        # the resumed bar starts from the 3 already logged


def test_the_status_line_shows_decisions_and_the_games_in_play():
    from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
    from socialgym_benchmarks.tournament.progress import ProgressEstimate, in_play
    ticks = []
    jobs = [EpisodeJob(game, seed, ["scripted:random"] * n) for game, n in (("prisoners_dilemma", 2), ("stag_hunt", 4))
            for seed in (0, 1)]
    records = run_jobs(jobs, PolicyPool(), on_tick=lambda live, decisions: ticks.append((list(live), decisions)))
    assert ticks[-1] == ([], sum(len(r["turns"]) for r in records))
    # before the first decision: every episode in play, named by its episode id for the bar's plan
    assert sorted(entry.episode_id for entry in ticks[0][0]) == sorted(job.episode_id for job in jobs)
    assert all(a[1] <= b[1] for a, b in zip(ticks, ticks[1:]))              # decisions only grow
    assert in_play(["werewolves", "coup", "werewolves"]) == "werewolves x2, coup"
    assert in_play(["a", "b", "c", "d", "a", "e"]) == "a x2, b, c +2 more"

    class Bar:
        postfix = None

        def set_postfix_str(self, text, refresh=True):
            self.postfix = text
    bar = Bar()
    plan = {f"coup-{i}": ("coup", 1.0) for i in range(3)}
    backends._tick_callback(bar, ProgressEstimate(plan), every_s=0)([("coup", 5, 5, "coup-0"), ("coup", 12, 12, "coup-1")], 17)
    assert bar.postfix.startswith("17 decisions") and "in play: coup x2" in bar.postfix
    assert "ETA once a coup episode ends" in bar.postfix       # no episode ended: no basis for an ETA


def test_sigterm_is_an_interrupt_with_exit_130(capsys):
    def body():
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt")
    assert run_command(body, "socialgym") == 130
    assert capsys.readouterr().err.strip() == "socialgym: interrupted"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_errors_name_the_file_and_what_was_expected(tmp_path, capsys):
    log = tmp_path / "good.jsonl"
    log.write_text("{}\n")
    message = explain_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", str(log / "logs")))
    assert message.startswith(f"{log} is a file, expected a folder")
    assert explain_os_error(IsADirectoryError(errno.EISDIR, "Is a directory", str(tmp_path))) == \
        f"{tmp_path} is a folder, expected a file"

    def bug():
        raise KeyError("oops")
    assert run_command(bug, "socialgym") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: KeyError" in err and "--debug" in err
    with pytest.raises(KeyError):
        run_command(bug, "socialgym", debug=True)


def test_debug_env_var_shows_the_traceback(monkeypatch):
    monkeypatch.setenv("SOCIALGYM_DEBUG", "1")
    with pytest.raises(socialgym_env.SocialGymError):
        cli.main(["rules", "nope"])


def test_list_keeps_game_ids_whole_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(cli, "console", cli.OutputConsole(width=80))
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert all(len(line) <= 80 for line in out.splitlines())
    for game in socialgym_env.list_games():
        assert f"│ {game['id']} " in out, game["id"]


def test_spaces_print_short():
    env = socialgym_env.make("werewolves")
    agent = env.possible_agents[0]
    assert len(repr(env.observation_space(agent))) < 120 and len(repr(env.action_space(agent))) < 100
    assert env.observation_space(agent)["text"].contains("hello")


def test_did_you_mean_prefers_the_whole_id():
    with pytest.raises(socialgym_env.SocialGymError, match="Did you mean werewolves, triadic_werewolf?"):
        socialgym_env.make("werewolf")
    with pytest.raises(socialgym_env.SocialGymError, match="Did you mean chess?"):
        socialgym_env.make("chesss")


def test_setup_shows_what_it_installs():
    """make setup / setup-test: pip and apt-get print what they fetch (no -q, no output thrown away)."""
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    recipe = subprocess.run(["make", "-n", "-C", str(root), "setup-test"], capture_output=True, text=True,
                            check=True).stdout
    installs = [line for line in recipe.splitlines() if re.search(r"pip (install|download)|apt-get (install|update)", line)]
    assert len(installs) >= 6, recipe
    for line in installs:
        for command in re.split(r"&&|\|\|", line):
            if re.search(r"pip (install|download)|apt-get (install|update)", command):
                assert not re.search(r"(^|\s)(-q+|--quiet)(\s|$)|>\s*/dev/null", command), command


def test_model_loading_shows_one_line_not_transformers_bar(monkeypatch, capfd, tmp_path):
    """transformers' `Loading weights` bar stayed on screen for a whole run: it is off while we load,
    back on after, and one line of ours says what was loaded."""
    import transformers
    from transformers.utils import logging as hf_logging
    from socialgym_agents.llm import loading

    def fake_from_pretrained(path, **options):
        for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
            pass
        return object()
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake_from_pretrained)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fake_from_pretrained)
    hf_logging.enable_progress_bar()
    loading._load_dense(str(tmp_path))
    err = capfd.readouterr().err
    assert "Loading weights" not in err
    assert err.count("\n") == 1 and err.startswith(f"loaded the model weights of {tmp_path} in "), err
    assert hf_logging.is_progress_bar_enabled()


def test_the_bar_estimate_gets_every_planned_episode_and_a_prior_for_every_game(tmp_path, monkeypatch):
    """run_local's wiring of the ETA (issue 45 item 5): the plan's episode ids and weights, a prior
    length per game from random play, and each finished record matched to its planned episode."""
    from socialgym_benchmarks.tournament import backends
    from socialgym_benchmarks.tournament.progress import ProgressEstimate
    from socialgym_benchmarks.tournament import tournament
    made = []

    class Kept(ProgressEstimate):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(backends, "ProgressEstimate", Kept)
    done = tournament(GAMES.split(","), AGENTS.split(","), episodes=2, out=tmp_path / "t", workers=1, n_boot=10)
    (estimate,) = made
    assert len(estimate.planned) == done.played and not estimate.unfinished   # every record matched its id
    assert set(estimate.prior_turns) == set(GAMES.split(",")) and all(t > 0 for t in estimate.prior_turns.values())
    assert "ETA" not in estimate.status()      # all done


def test_tables_written_to_a_file_are_not_cut_to_80_columns(monkeypatch, capsys):
    """Issue 65: piped to a file, rich cut every table to 80 columns (or to the width of whichever
    standard stream was a terminal). Written to a file, a table is written whole."""
    import os as os_module
    monkeypatch.delenv("COLUMNS", raising=False)

    def no_terminal(*args):
        raise OSError("not a terminal")
    monkeypatch.setattr(os_module, "get_terminal_size", no_terminal)
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert "skills" in out and max(len(line) for line in out.splitlines()) > 120   # every column, uncut
    monkeypatch.setenv("COLUMNS", "80")                                          # a width asked for still holds
    code, out, _ = _run(capsys, "list")
    assert code == 0 and all(len(line) <= 80 for line in out.splitlines())
