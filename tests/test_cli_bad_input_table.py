"""The bad-input table (issue 30): every subcommand of ``socialgym`` and the ``python -m
socialgym_training.*`` scripts, given junk, answer with the documented exit code and one line on stderr
that names what is wrong -- never a traceback, never a half-written output, never a model load.

Each case runs in-process through the real entry points (``socialgym_env.cli.main``, and
``socialgym_env.cli_errors.run_command`` around a training script's ``main``), in an empty
working folder that must still be empty afterwards (default outputs such as ``runs/...`` would
land there). Inputs live in a separate session folder.
"""
import json
import os
import shutil

import pytest
import typer.main
from helpers import unwritable_folder

from socialgym_env import cli
from socialgym_env.cli_errors import invoke_typer, run_command

PD = "prisoners_dilemma"
DEAD_SERVER = "openai:m@http://127.0.0.1:9/v1?attempts=1&timeout=1"


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    """Good and bad input files, made once (no model involved)."""
    root = tmp_path_factory.mktemp("bad_inputs")
    log = root / "good.jsonl"
    assert run_command(lambda: invoke_typer(cli.app, ["play", PD, "--log", str(log), "--quiet"], "socialgym"), "t") == 0
    record = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    (root / "unknown_game.jsonl").write_text(json.dumps({**record, "game": "nosuchgame"}) + "\n", encoding="utf-8")
    (root / "badturns.jsonl").write_text(json.dumps({**record, "turns": [{"x": 1}]}) + "\n", encoding="utf-8")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 4)
    shutil.copy(root / "binary.bin", root / "binary.toml")
    shutil.copy(root / "binary.bin", root / "binary.jsonl")
    (root / "trunc.jsonl").write_text(log.read_text(encoding="utf-8")[:150], encoding="utf-8")
    (root / "empty.jsonl").write_text("", encoding="utf-8")
    (root / "empty.md").write_text("  \n", encoding="utf-8")
    (root / "playbook.md").write_text("Defect when they defect.\n", encoding="utf-8")
    (root / "broken.yaml").write_text("games: [prisoners_dilemma\n  model: : x\n", encoding="utf-8")
    (root / "wrongcols.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    (root / "folder").mkdir()
    (root / "emptydir").mkdir()
    (root / "deep.yaml").write_text("x: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    (root / "notgguf.gguf").write_text("not a model\n", encoding="utf-8")
    (root / "edited.jsonl").write_text(json.dumps({**record, "scores": {a: 99.0 for a in record["scores"]}}) + "\n",
                                       encoding="utf-8")
    (root / "badconfig.jsonl").write_text(json.dumps({**record, "config": {**record["config"], "rounds": 0}}) + "\n",
                                          encoding="utf-8")
    rows = [{"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "x"}]}]
    (root / "sft_truncated.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[0])[:30], encoding="utf-8")
    (root / "sft_prompt_5.jsonl").write_text(json.dumps({"prompt": 5, "completion": 6}) + "\n", encoding="utf-8")
    os.mkfifo(root / "fifo")        # stands for a device: an output path no command may replace
    # one episode id, two contents: in two files of a folder, and twice in one file (issue 65.2)
    other = json.dumps({**record, "seed": record["seed"] + 1}, sort_keys=True) + "\n"
    (root / "conflict").mkdir()
    shutil.copy(log, root / "conflict" / "a.jsonl")
    (root / "conflict" / "b.jsonl").write_text(other, encoding="utf-8")
    (root / "withpipe").mkdir()     # a logs folder holding a pipe and a device among its *.jsonl (issue 65.4)
    shutil.copy(log, root / "withpipe" / "good.jsonl")
    os.mkfifo(root / "withpipe" / "pipe.jsonl")
    os.symlink("/dev/zero", root / "withpipe" / "zero.jsonl")
    (root / "conflict_one.jsonl").write_text(log.read_text(encoding="utf-8") + other, encoding="utf-8")
    assert run_command(lambda: invoke_typer(cli.app, ["maze", "generate", "--n", "2", "--out", str(root / "maze.jsonl")], "socialgym"),
                       "t") == 0
    assert run_command(lambda: invoke_typer(cli.app, ["spy", "generate", "--n", "2", "--out", str(root / "spy.jsonl")], "socialgym"),
                       "t") == 0
    from datasets import Dataset, DatasetDict
    chat = [{"role": "user", "content": "hi"}]
    rows = Dataset.from_dict({"prompt": [chat, chat], "completion": [chat, chat]})
    DatasetDict({"train": rows}).save_to_disk(str(root / "sft_data"))
    DatasetDict({"test": rows}).save_to_disk(str(root / "test_only"))
    _bad_pools(root)
    _bad_checkpoints(root)
    unwritable_folder(root)             # made here, so a case does not change the inputs' listing
    return root


def _bad_checkpoints(root):
    """Self-play --out folders whose last resumable checkpoint is unusable (issue 65)."""
    from socialgym_training.selfplay.trainer import RESUME_STATE
    for name, trainer_state in [("corrupt", '{"global_step": 2, "log_hist'), ("no_step", '{"log_history": []}'),
                                ("missing", None)]:
        checkpoint = root / f"resume_{name}" / "trainer" / "checkpoint-2"
        checkpoint.mkdir(parents=True)
        (checkpoint / RESUME_STATE).write_bytes(b"state")
        if trainer_state is not None:
            (checkpoint / "trainer_state.json").write_text(trainer_state, encoding="utf-8")


def _bad_pools(root):
    """Copies of the shipped reference pool, each with one field of its manifest spoiled (issue 65)."""
    from socialgym_benchmarks.tournament import reference
    good = json.loads((reference.POOL_DIR / reference.MANIFEST).read_text(encoding="utf-8"))
    first = good["policies"][0]
    spoiled = {
        "episodes_huge": {"episodes_per_combination": 10 ** 12},
        "episodes_zero": {"episodes_per_combination": 0},
        "episodes_text": {"episodes_per_combination": "30"},
        "ratings_list": {"ratings": [1, 2]},
        "rating_nan": {"ratings": {**good["ratings"], first: float("nan")}},
        "rating_inf": {"ratings": {**good["ratings"], first: float("inf")}},
        "rating_missing": {"ratings": {first: 1000.0, "scripted:nobody": 1000.0}},
        "unknown_game": {"games": ["nope"] + good["games"][1:]},
        "bad_config": {"configs": {"chicken": {"rounds": 0}}},
        "bad_policy": {"policies": ["bogus"] + good["policies"][1:],
                       "ratings": {"bogus": 1000.0, **{p: r for p, r in good["ratings"].items() if p != first}}},
        "file_outside": {"files": {"../elsewhere.jsonl": "0" * 64}},
        "seed_negative": {"seed": -1},
    }
    for name, change in {**spoiled, "not_object": None}.items():
        folder = root / f"pool_{name}"
        shutil.copytree(reference.POOL_DIR, folder)
        manifest = [1, 2] if change is None else {**good, **change}
        (folder / reference.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


@pytest.fixture(autouse=True)
def no_model_loads(monkeypatch):
    """A bad-input case must fail before any model is loaded."""
    # hf_backend binds load_model by name when first imported: import it before patching (else
    # it would keep the refusing stand-in for the rest of the session) and patch both names.
    from socialgym_agents.llm import hf_backend, loading

    def refuse(*args, **kwargs):
        raise AssertionError("a bad-input case loaded a model")
    monkeypatch.setattr(loading, "load_model", refuse)
    monkeypatch.setattr(hf_backend, "load_model", refuse)
    import transformers                              # the training scripts load through it (common.load_base)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


# (id, argv with {in} for the inputs folder, exit code, a fragment of the one stderr line)
SOCIALGYM = [
    # root, rules, list
    ("root-unknown-command", ["nosuchcommand"], 2, "No such command"),
    ("root-bad-game-module", ["--game-module", "nosuch_pkg.mod", "list"], 2, "cannot import game module"),
    ("rules-unknown-game", ["rules", "nope"], 2, "unknown game 'nope'"),
    ("rules-did-you-mean", ["rules", "werewolf"], 2, "Did you mean werewolves, triadic_werewolf?"),
    ("list-unknown-option", ["list", "--bogus"], 2, "No such option: --bogus"),
    ("list-extra-argument", ["list", "extra"], 2, "unexpected extra argument"),
    # play: specs and options, checked before any game
    ("play-unknown-game", ["play", "nope"], 2, "unknown game 'nope'"),
    ("play-unknown-spec", ["play", PD, "--agents", "bogus"], 2, "unknown policy spec 'bogus'"),
    ("play-only-comma", ["play", PD, "--agents", ","], 2, "names no policy"),
    ("play-blank-spec", ["play", PD, "--agents", " "], 2, "names no policy"),
    ("play-empty-entry", ["play", PD, "--agents", "scripted:random,,scripted:random"], 2, "has an empty entry"),
    ("play-temperature-hot", ["play", PD, "--agents", "smollm2?temperature=hot"], 2, "temperature='hot': expected a number"),
    ("play-unknown-option", ["play", PD, "--agents", "smollm2?bogus=1"], 2, "unknown LLM option 'bogus'"),
    ("play-top-p-range", ["play", PD, "--agents", "smollm2?top_p=2"], 2, "0 < top_p <= 1"),
    ("play-bad-mode", ["play", PD, "--agents", "smollm2?mode=fast"], 2, "mode='fast': expected one of"),
    ("play-bad-talk", ["play", PD, "--agents", "smollm2?talk=loud"], 2, "talk='loud': expected one of free, pass"),
    ("play-bad-bool", ["play", PD, "--agents", "smollm2?constrained=maybe"], 2, "expected true/false"),
    ("play-temperature-nan", ["play", PD, "--agents", "smollm2?temperature=nan"], 2, "expected a finite number"),
    ("play-temperature-inf", ["play", PD, "--agents", "smollm2?temperature=inf"], 2, "expected a finite number"),
    ("play-repeated-option", ["play", PD, "--agents", "smollm2?temperature=0&temperature=1"], 2, "given twice"),
    ("play-max-new-tokens-huge", ["play", PD, "--agents", "smollm2?max_new_tokens=999999999999"], 2, "at most 131072"),
    ("play-huge-game-id", ["play", "A" * 100_000], 2, "unknown game 'AAAA"),
    ("play-rounds-huge", ["play", "bargaining", "-c", "rounds=" + "9" * 30], 2, "rounds must be from 1 to 1000000"),
    ("play-negative-retries", ["play", PD, "--agents", "smollm2?max_retries=-1"], 2, "max_retries >= 0"),
    ("play-smollm2-target", ["play", PD, "--agents", "smollm2:x"], 2, "smollm2 takes no target"),
    ("play-missing-adapter", ["play", PD, "--agents", "smollm2?adapter=/no/such/adapter"], 2, "adapter_config.json"),
    ("play-hf-nonexistent", ["play", PD, "--agents", "hf:/nonexistent"], 2, "no model folder at /nonexistent"),
    ("play-hf-empty", ["play", PD, "--agents", "hf:"], 2, "hf spec needs a model"),
    ("play-hf-not-a-model", ["play", PD, "--agents", "hf:{in}/folder"], 2, "holds no config.json"),
    ("play-hf-a-file", ["play", PD, "--agents", "hf:{in}/good.jsonl"], 2, "is a file, expected a model folder"),
    ("play-hf-not-gguf", ["play", PD, "--agents", "hf:{in}/notgguf.gguf"], 2, "is not a GGUF file"),
    ("play-hf-missing-gguf", ["play", PD, "--agents", "hf:/no/model.gguf"], 2, "no GGUF file"),
    ("play-hf-uncached-hub-id", ["play", PD, "--agents", "hf:nobody/no-such-model-xyz"], 2, "local Hugging Face cache"),
    ("play-openai-not-a-url", ["play", PD, "--agents", "openai:m@notaurl"], 2, "http(s) base URL"),
    ("play-openai-no-model", ["play", PD, "--agents", "openai:@http://127.0.0.1:9/v1"], 2, "openai spec needs a model"),
    ("play-openai-adapter", ["play", PD, "--agents", "openai:m@http://127.0.0.1:9/v1?adapter=x"], 2, "local models only"),
    ("play-openai-timeout", ["play", PD, "--agents", "openai:m@http://127.0.0.1:9/v1?timeout=0"], 2, "timeout=0.0"),
    ("play-constant-fly", ["play", PD, "--agents", "scripted:constant:fly"], 2, "'fly' is not an action of prisoners_dilemma"),
    ("play-constant-empty", ["play", PD, "--agents", "scripted:constant"], 2, "needs an action"),
    ("play-scripted-argument", ["play", PD, "--agents", "scripted:random:x"], 2, "takes no argument"),
    ("play-unknown-scripted", ["play", PD, "--agents", "scripted:nice"], 2, "unknown scripted policy"),
    ("play-human-argument", ["play", PD, "--agents", "human:x"], 2, "human takes no argument"),
    ("play-human-options", ["play", PD, "--agents", "human?x=1"], 2, "human takes no argument"),
    ("play-option-no-value", ["play", PD, "--agents", "smollm2?adapter"], 2, "option 'adapter' needs a key and a value"),
    ("play-option-no-key", ["play", PD, "--agents", "hf:/m?=1"], 2, "option '=1' needs a key and a value"),
    ("play-seat-count", ["play", PD, "--agents", "scripted:random,scripted:random,scripted:random"], 2, "has 2 seats"),
    ("play-config-range", ["play", PD, "-c", "rounds=0"], 2, "rounds must be at least 1"),
    ("play-config-key", ["play", PD, "-c", "nokey=1"], 2, "nokey"),
    ("play-config-no-equals", ["play", PD, "-c", "rounds"], 2, "key=value"),
    ("play-seed-not-int", ["play", PD, "--seed", "x"], 2, "should be a valid integer"),
    ("play-log-is-folder", ["play", PD, "--log", "{in}/folder"], 2, "is a folder, expected a file"),
    ("play-log-under-file", ["play", PD, "--log", "{in}/good.jsonl/play.jsonl"], 2, "good.jsonl is a file, expected a folder"),
    # tournament (all with --out, see below)
    ("tournament-unknown-game", ["tournament", "--games", "nope"], 2, "unknown game 'nope'"),
    ("tournament-games-comma", ["tournament", "--games", ","], 2, "has an empty entry"),
    ("tournament-agents-comma", ["tournament", "--agents", ","], 2, "names no policy"),
    ("tournament-agents-empty-entry", ["tournament", "--agents", "scripted:random,"], 2, "has an empty entry"),
    ("tournament-unknown-spec", ["tournament", "--games", PD, "--agents", "scripted:random,bogus"], 2, "unknown policy spec 'bogus'"),
    ("tournament-constant-fly", ["tournament", "--games", PD, "--agents", "scripted:constant:fly"], 2, "'fly' is not an action"),
    ("tournament-openai-url", ["tournament", "--games", PD, "--agents", "openai:m@notaurl"], 2, "http(s) base URL"),
    ("tournament-temperature", ["tournament", "--games", PD, "--agents", "smollm2?temperature=hot"], 2, "expected a number"),
    ("tournament-option-no-value", ["tournament", "--games", PD, "--agents", "smollm2?temperature"], 2, "needs a key and a value"),
    ("tournament-episodes-0", ["tournament", "--episodes", "0"], 2, "greater than or equal to 1"),
    ("tournament-workers-negative", ["tournament", "--workers", "-1"], 2, "greater than or equal to 1"),
    ("tournament-backend", ["tournament", "--backend", "slurm"], 2, "--backend must be local or ray"),
    ("tournament-preset", ["tournament", "--preset", "huge"], 2, "unknown --preset 'huge'"),
    ("tournament-ties", ["tournament", "--ties", "maybe"], 2, "--ties"),
    ("tournament-override-no-game", ["tournament", "--games", PD, "-c", "rounds=1"], 2, "game.key=value"),
    ("tournament-override-range", ["tournament", "--games", PD, "-c", f"{PD}.rounds=0"], 2, "rounds must be at least 1"),
    ("tournament-bootstrap-0", ["tournament", "--bootstrap", "0"], 2, "greater than or equal to 1"),
    ("tournament-games-twice", ["tournament", "--games", f"{PD},{PD}"], 2, f"names {PD} more than once"),
    ("tournament-episodes-huge", ["tournament", "--episodes", "9999999999999999999999999"], 2, "less than or equal to"),
    ("tournament-plan-too-big", ["tournament", "--games", PD, "--episodes", "100000", "--agents",
                                 "scripted:random,scripted:tit_for_tat,scripted:heuristic"], 2,
     "the plan would hold more than 200,000 episodes"),
    ("tournament-out-is-file", ["tournament", "--games", PD, "--out", "{in}/good.jsonl"], 2, "good.jsonl is a file, expected a folder"),
    # a game's own roster and episode count (issue 42)
    ("tournament-roster-no-game", ["tournament", "--games", PD, "--roster", "scripted:random"], 2,
     "--roster 'scripted:random': expected GAME=SPEC,SPEC,..."),
    ("tournament-roster-unknown-game", ["tournament", "--games", PD, "--roster", "nope=scripted:random"], 2,
     "unknown game 'nope'"),
    ("tournament-roster-game-not-played", ["tournament", "--games", PD, "--roster", "chess=scripted:random"], 2,
     "--roster names chess, not among this tournament's games"),
    ("tournament-roster-twice", ["tournament", "--games", PD, "--roster", f"{PD}=scripted:random", "--roster",
                                 f"{PD}=scripted:heuristic"], 2, f"--roster names {PD} more than once"),
    ("tournament-roster-bad-spec", ["tournament", "--games", PD, "--roster", f"{PD}=scripted:random,bogus"], 2,
     "unknown policy spec 'bogus'"),
    ("tournament-roster-spec-for-its-game", ["tournament", "--games", f"{PD},kuhn_poker", "--agents", "scripted:random",
                                             "--roster", "kuhn_poker=scripted:random,scripted:constant:defect"], 2,
     "'defect' is not an action of kuhn_poker"),
    ("tournament-roster-empty-entry", ["tournament", "--games", PD, "--roster", f"{PD}=scripted:random,"], 2,
     "has an empty entry"),
    ("tournament-game-episodes-0", ["tournament", "--games", PD, "--game-episodes", f"{PD}=0"], 2,
     "N must be a whole number from 1 to 200,000"),
    ("tournament-game-episodes-not-a-number", ["tournament", "--games", PD, "--game-episodes", f"{PD}=many"], 2,
     "N must be a whole number"),
    ("tournament-game-episodes-no-game", ["tournament", "--games", PD, "--game-episodes", "40"], 2, "expected GAME=N"),
    ("tournament-game-episodes-not-played", ["tournament", "--games", PD, "--game-episodes", "chess=4"], 2,
     "--game-episodes names chess, not among"),
    ("tournament-roster-adaptive", ["tournament", "--games", PD, "--until-resolved", "--budget", "50", "--roster",
                                    f"{PD}=scripted:random,scripted:heuristic"], 2, "drop --episodes"),
    # tournament --until-resolved and rate (issue 43)
    ("tournament-budget-alone", ["tournament", "--games", PD, "--budget", "50"], 2, "--until-resolved and --budget go together"),
    ("tournament-budget-below-first-round", ["tournament", "--games", PD, "--until-resolved", "--budget", "2"], 2,
     "is below the first round"),
    ("rate-unknown-spec", ["rate", "scripted:nope"], 2, "unknown scripted policy 'nope'"),
    ("rate-a-reference", ["rate", "scripted:random"], 2, "is a reference already"),
    ("rate-missing-pool", ["rate", "scripted:tit_for_tat", "--against", "/no/such"], 2, "no reference pool at /no/such"),
    # rate: a pool's manifest is checked before anything is played (issue 65)
    *[(f"rate-pool-{name}", ["rate", "scripted:win_stay_lose_shift", "--against", f"{{in}}/pool_{name}"], 2, fragment)
      for name, fragment in [
          ("episodes_huge", "episodes_per_combination must be a whole number from 1 to 100,000, got 1000000000000"),
          ("episodes_zero", "episodes_per_combination must be a whole number from 1"),
          ("episodes_text", "episodes_per_combination must be a whole number from 1"),
          ("ratings_list", "ratings must map each of the (at least two) policies to its Elo"),
          ("rating_nan", "is nan, not a finite number"),
          ("rating_inf", "is inf, not a finite number"),
          ("rating_missing", "ratings must map each of the (at least two) policies"),
          ("unknown_game", "unknown game 'nope'"),
          ("bad_config", "chicken: rounds must be at least 1, got 0"),
          ("bad_policy", "unknown policy spec 'bogus'"),
          ("file_outside", "files must map logs/NAME.jsonl to its SHA-256"),
          ("seed_negative", "seed must be a whole number from 0"),
          ("not_object", "expected a JSON object, got list")]],
    ("rate-out-read-only", ["rate", "scripted:win_stay_lose_shift", "--out", "{ro}/rate"], 2, "is not writable"),
    # leaderboard
    ("leaderboard-missing", ["leaderboard", "/no/such/folder"], 2, "no log file or folder at /no/such/folder"),
    ("leaderboard-bootstrap-by", ["leaderboard", "{in}/good.jsonl", "--bootstrap-by", "seat"], 2, "'seat' is not one of"),
    ("leaderboard-rating", ["leaderboard", "{in}/good.jsonl", "--rating", "glicko"], 2, "'glicko' is not one of"),
    ("leaderboard-unknown-game", ["leaderboard", "{in}/unknown_game.jsonl"], 2, "games not registered here: nosuchgame"),
    ("leaderboard-binary", ["leaderboard", "{in}/binary.bin"], 2, "no usable episode records"),
    ("leaderboard-empty", ["leaderboard", "{in}/empty.jsonl"], 2, "no usable episode records"),
    ("leaderboard-truncated", ["leaderboard", "{in}/trunc.jsonl"], 2, "no usable episode records"),
    ("leaderboard-ties", ["leaderboard", "{in}/good.jsonl", "--ties", "maybe"], 2, "--ties"),
    ("leaderboard-bootstrap-0", ["leaderboard", "{in}/good.jsonl", "--bootstrap", "0"], 2, "greater than or equal to 1"),
    ("leaderboard-out-is-file", ["leaderboard", "{in}/good.jsonl", "--out", "{in}/good.jsonl"], 2, "is a file, expected a folder"),
    ("leaderboard-conflicting-duplicate", ["leaderboard", "{in}/conflict"], 2,
     "is logged twice with different content: {in}/conflict/a.jsonl:1 and {in}/conflict/b.jsonl:1"),
    # ratings-validity
    ("ratings-validity-missing", ["ratings-validity", "/no/such/folder"], 2, "no log file or folder at /no/such/folder"),
    ("ratings-validity-few-episodes", ["ratings-validity", "{in}/good.jsonl"], 2, "competitive episodes"),
    ("ratings-validity-conflicting-duplicate", ["ratings-validity", "{in}/conflict"], 2,
     "is logged twice with different content: {in}/conflict/a.jsonl:1 and {in}/conflict/b.jsonl:1"),
    ("ratings-validity-folds-1", ["ratings-validity", "{in}/good.jsonl", "--folds", "1"], 2, "greater than or equal to 2"),
    # replay
    ("replay-missing", ["replay", "/no/such/log.jsonl"], 2, "no log file at /no/such/log.jsonl"),
    ("replay-folder", ["replay", "{in}/folder"], 2, "(a folder; give one of its .jsonl logs)"),
    ("replay-unknown-game", ["replay", "{in}/unknown_game.jsonl"], 2, "of game 'nosuchgame', which is not registered"),
    ("replay-bad-turns", ["replay", "{in}/badturns.jsonl"], 2, "line 1: skipped a bad episode line (turns[0] lacks 'agent')"),
    ("replay-unknown-episode", ["replay", "{in}/good.jsonl", "--episode", "nope"], 2, "episode 'nope' is not in"),
    ("replay-index-range", ["replay", "{in}/good.jsonl", "--index", "5"], 2, "--index 5 is out of range"),
    ("replay-binary", ["replay", "{in}/binary.bin"], 2, "holds no played episode"),
    ("replay-conflicting-duplicate", ["replay", "{in}/conflict_one.jsonl"], 2,
     "is logged twice with different content: {in}/conflict_one.jsonl:1 and {in}/conflict_one.jsonl:2"),
    ("replay-truncated", ["replay", "{in}/trunc.jsonl"], 2, "holds no played episode"),
    ("replay-index-negative", ["replay", "{in}/good.jsonl", "--index", "-1"], 2, "--index -1 is out of range"),
    ("replay-episode-empty", ["replay", "{in}/good.jsonl", "--episode", ""], 2, "--episode is empty"),
    ("replay-edited-log", ["replay", "{in}/edited.jsonl"], 2, "are not what its actions give on replay"),
    ("replay-config-refused", ["replay", "{in}/badconfig.jsonl"], 2, "cannot be replayed here: prisoners_dilemma: rounds"),
    ("replay-out-under-file", ["replay", "{in}/good.jsonl", "--out", "{in}/good.jsonl/r.html"], 2, "is a file, expected a folder"),
    ("replay-out-is-a-pipe", ["replay", "{in}/good.jsonl", "--out", "{in}/fifo"], 2, "is a pipe, not a regular file"),
    # serve-env (never starts a server)
    ("serve-unknown-game", ["serve-env", "--game", "nope"], 2, "unknown game 'nope'"),
    ("serve-bad-opponent", ["serve-env", "--opponents", "bogus"], 2, "unknown policy spec 'bogus'"),
    ("serve-remote-host", ["serve-env", "--host", "0.0.0.0"], 2, "--allow-remote"),
    ("serve-port-not-int", ["serve-env", "--port", "x"], 2, "should be a valid integer"),
    ("serve-log-level", ["serve-env", "--log-level", "chatty"], 2, "'chatty' is not one of critical"),
    ("serve-port-out-of-range", ["serve-env", "--port", "70000"], 2, "less than or equal to 65535"),
    # serve-ors (never starts a server)
    ("ors-unknown-game", ["serve-ors", "--game", "nope"], 2, "unknown game 'nope'"),
    ("ors-bad-opponent", ["serve-ors", "--opponents", "bogus"], 2, "unknown policy spec 'bogus'"),
    ("ors-remote-host", ["serve-ors", "--host", "0.0.0.0"], 2, "--allow-remote"),
    # arena (never starts a server)
    ("arena-remote-host", ["arena", "--host", "0.0.0.0"], 2, "--allow-remote"),
    ("arena-bad-model", ["arena", "--models", "nosuch:x"], 2, "unknown policy spec 'nosuch:x'"),
    ("arena-zero-games", ["arena", "--max-games", "0"], 2, "max_sessions must be >= 1"),
    ("arena-negative-idle", ["arena", "--idle-timeout", "-1"], 2, "idle_timeout_s must be > 0"),
    ("arena-port-out-of-range", ["arena", "--port", "70000"], 2, "less than or equal to 65535"),
    ("arena-log-dir-is-a-file", ["arena", "--log-dir", "{in}/good.jsonl"], 2, "is a file, expected a folder"),
    ("arena-log-dir-under-a-pipe", ["arena", "--log-dir", "{in}/fifo/x"], 2, "fifo is a pipe, expected a folder"),
    # export and detect
    ("export-unknown-kind", ["export", "bogus", "{in}/good.jsonl", "--out", "o"], 2, "unknown export 'bogus'"),
    ("export-edited-log", ["export", "sft", "{in}/edited.jsonl", "--out", "o"], 2, "are not what its actions give"),
    ("export-missing-logs", ["export", "sft", "/no/such.jsonl", "--out", "o"], 2, "/no/such.jsonl"),
    ("export-conflicting-duplicate", ["export", "sft", "{in}/conflict", "--out", "o"], 2,
     "is logged twice with different content: {in}/conflict/a.jsonl:1 and {in}/conflict/b.jsonl:1"),
    ("export-conflicting-duplicate-across-arguments", ["export", "sft", "{in}/good.jsonl", "{in}/conflict/b.jsonl",
                                                       "--out", "o"], 2, "{in}/conflict/b.jsonl:1"),
    ("export-missing-out", ["export", "sft", "{in}/good.jsonl"], 2, "Missing option '--out'"),
    ("export-bad-outcome", ["export", "sft", "{in}/good.jsonl", "--out", "o", "--outcome", "maybe"], 2, "maybe"),
    ("export-bad-rollout-policy", ["export", "dpo", "{in}/good.jsonl", "--out", "o", "--rollout-policy", "bogus"], 2,
     "bogus"),
    ("detect-missing-log", ["detect", "/no/such.jsonl"], 2, "no log file at /no/such.jsonl"),
    ("detect-no-hidden-roles", ["detect", "{in}/good.jsonl"], 2, "holds no usable episode of a hidden-role game"),
    ("detect-binary", ["detect", "{in}/binary.bin"], 2, "holds no usable episode"),
    # analyze and jester
    ("analyze-missing", ["analyze", "/no/such"], 2, "/no/such does not exist"),
    ("analyze-no-episodes", ["analyze", "{in}/good.jsonl", "--out", "o"], 2, "no finished triadic_werewolf episode"),
    ("analyze-lessons-missing", ["analyze", "{in}/folder", "--lessons", "/no/such"], 2, "is not a folder of lessons"),
    ("jester-models-comma", ["jester", "run", "--models", ","], 2, "names no policy"),
    ("jester-unknown-spec", ["jester", "run", "--models", "nosuch:x"], 2, "unknown policy spec 'nosuch:x'"),
    ("jester-temperature", ["jester", "run", "--models", "smollm2?temperature=hot"], 2, "expected a number"),
    ("jester-conditions", ["jester", "run", "--conditions", "MAYBE"], 2, "--conditions 'MAYBE'"),
    ("jester-threshold", ["jester", "run", "--threshold", "2"], 2, "must be in (0, 1]"),
    ("jester-roles", ["jester", "run", "--roles", "x"], 2, "--roles 'x'"),
    ("jester-config", ["jester", "run", "-c", "nokey"], 2, "must be key=value"),
    ("jester-games-0", ["jester", "run", "--games", "0"], 2, "greater than or equal to 1"),
    # maze
    ("maze-generate-preset", ["maze", "generate", "--out", "o.jsonl", "--preset", "huge"], 2, "huge"),
    ("maze-generate-variant", ["maze", "generate", "--out", "o.jsonl", "--variant", "x"], 2, "'x'"),
    ("maze-generate-n", ["maze", "generate", "--out", "o.jsonl", "--n", "-1"], 2, "greater than or equal to 0"),
    ("maze-generate-out-is-a-pipe", ["maze", "generate", "--n", "1", "--out", "{in}/fifo"], 2,
     "is a pipe, not a regular file"),
    ("maze-show-binary", ["maze", "show", "{in}/binary.bin"], 2, "not UTF-8 text (a binary file?)"),
    ("maze-show-truncated", ["maze", "show", "{in}/trunc.jsonl"], 2, "trunc.jsonl:1 is not a SocialMaze data set"),
    ("maze-show-foreign", ["maze", "show", "{in}/good.jsonl"], 2, "missing field"),
    ("maze-show-spy-data", ["maze", "show", "{in}/spy.jsonl"], 2, "is not a SocialMaze data set"),
    ("maze-show-empty", ["maze", "show", "{in}/empty.jsonl"], 2, "holds no instances"),
    ("maze-show-index", ["maze", "show", "{in}/maze.jsonl", "--index", "9"], 2, "index must be in 0..1"),
    ("maze-show-missing", ["maze", "show", "/no/such.jsonl"], 2, "does not exist"),
    ("maze-evaluate-binary", ["maze", "evaluate", "{in}/binary.jsonl"], 2, "not UTF-8 text"),
    ("maze-evaluate-solver", ["maze", "evaluate", "{in}/maze.jsonl", "--solver", "x"], 2, "unknown solver 'x'"),
    ("maze-evaluate-truncated", ["maze", "evaluate", "{in}/trunc.jsonl"], 2, "is not a SocialMaze data set"),
    # spy
    ("spy-generate-describer", ["spy", "generate", "--out", "o.jsonl", "--describer", "bogus"], 2,
     "is not a language-model spec"),
    ("spy-generate-describer-options", ["spy", "generate", "--out", "o.jsonl", "--describer", "smollm2?top_p=9"], 2,
     "top_p"),
    ("spy-generate-players", ["spy", "generate", "--out", "o.jsonl", "--players", "2"], 2, "greater than or equal to 3"),
    ("spy-evaluate-binary", ["spy", "evaluate", "{in}/binary.bin"], 2, "not UTF-8 text"),
    ("spy-evaluate-solver", ["spy", "evaluate", "{in}/spy.jsonl", "--solver", "scripted:random"], 2, "valid solvers"),
    ("spy-evaluate-missing", ["spy", "evaluate", "/no/such.jsonl"], 2, "is not a file"),
    ("spy-show-truncated", ["spy", "show", "{in}/trunc.jsonl"], 2, "is not a Find the Spy data set"),
    ("spy-show-maze-data", ["spy", "show", "{in}/maze.jsonl"], 2, "missing field 'descriptions'"),
    ("spy-show-index", ["spy", "show", "{in}/spy.jsonl", "--index", "7"], 2, "--index must be in 0..1"),
    # spartan
    ("spartan-reflect-broken-yaml", ["spartan", "reflect", "{in}/broken.yaml"], 2, "is not valid YAML"),
    ("spartan-reflect-deep-yaml", ["spartan", "reflect", "{in}/deep.yaml"], 2, "is nested too deeply"),
    ("spartan-reflect-binary-toml", ["spartan", "reflect", "{in}/binary.toml"], 2, "not UTF-8 text"),
    ("spartan-reflect-suffix", ["spartan", "reflect", "{in}/binary.bin"], 2, "must be .toml, .yaml, .yml or .json"),
    ("spartan-reflect-missing-file", ["spartan", "reflect", "/no/such.toml"], 2, "does not exist"),
    ("spartan-reflect-unknown-game", ["spartan", "reflect", "--game", "nope"], 2, "unknown game 'nope'"),
    ("spartan-reflect-bad-model", ["spartan", "reflect", "--model", "bogus"], 2, "unknown policy spec 'bogus'"),
    ("spartan-reflect-model-options", ["spartan", "reflect", "--model", "smollm2?temperature=hot"], 2, "expected a number"),
    ("spartan-reflect-rounds-0", ["spartan", "reflect", "--rounds", "0"], 2, "rounds must be at least 1"),
    ("spartan-reflect-set-key", ["spartan", "reflect", "-s", "nokey=1"], 2, "--set takes key=value"),
    ("spartan-reflect-reflector-file", ["spartan", "reflect", "--reflector", "file:/no/such.md"], 2, "no such file"),
    ("spartan-evaluate-empty-playbook", ["spartan", "evaluate", "{in}/empty.md", "--game", PD, "--model", "scripted:random"],
     2, "is empty"),
    ("spartan-evaluate-missing-playbook", ["spartan", "evaluate", "/no/such.md", "--game", PD], 2, "does not exist"),
    ("spartan-evaluate-binary-playbook", ["spartan", "evaluate", "{in}/binary.bin", "--game", PD], 2, "not UTF-8 text"),
    ("spartan-evaluate-no-game", ["spartan", "evaluate", "{in}/playbook.md"], 2, "Missing option '--game'"),
    ("spartan-evaluate-bad-model", ["spartan", "evaluate", "{in}/playbook.md", "--game", PD, "--model", "openai:m@x"], 2,
     "http(s) base URL"),
    ("spartan-within-bad-model", ["spartan", "within", "--model", "bogus"], 2, "unknown policy spec 'bogus'"),
    ("spartan-cross-unknown-game", ["spartan", "cross", "-s", "sources=nope"], 2, "unknown game 'nope'"),
    ("spartan-multigame-bad-model", ["spartan", "multigame", "--model", "hf:/nonexistent"], 2, "no model folder"),
    ("spartan-distill-bad-student", ["spartan", "distill", "-s", "students=bogus"], 2, "unknown policy spec 'bogus'"),
]

# Commands that ran but did not do what was asked: exit 1, and they say so.
FAILED_RUNS = [
    ("play-dead-server", ["play", PD, "--agents", DEAD_SERVER, "--log", "o/play.jsonl"], 1, None),
    ("tournament-dead-server", ["tournament", "--games", PD, "--agents", DEAD_SERVER, "--episodes", "1",
                                "--bootstrap", "10"], 1, "FAILED"),
]


# Inputs that never end (issue 65.4): a device or a named pipe as a log, named directly (one line,
# exit 2, nothing read) or found in a logs folder (skipped with one line each). Before the fix these
# blocked forever (a pipe) or grew memory until failure (/dev/zero), so they run in one child process
# under a memory cap and a timeout: a regression fails the test, never hangs the suite.
# (id, argv, exit code, a fragment of the output; None: one line on stderr, exit 2)
NEVER_ENDING = [
    ("leaderboard-device", ["leaderboard", "/dev/zero"], 2, "/dev/zero is a device, not a regular file"),
    ("leaderboard-pipe", ["leaderboard", "{in}/fifo"], 2, "fifo is a pipe, not a regular file"),
    ("ratings-validity-device", ["ratings-validity", "/dev/zero"], 2, "/dev/zero is a device, not a regular file"),
    ("ratings-validity-pipe", ["ratings-validity", "{in}/fifo"], 2, "fifo is a pipe, not a regular file"),
    ("export-device", ["export", "sft", "/dev/zero", "--out", "o"], 2, "/dev/zero is a device, not a regular file"),
    ("export-pipe", ["export", "sft", "{in}/fifo", "--out", "o"], 2, "fifo is a pipe, not a regular file"),
    ("replay-device", ["replay", "/dev/zero"], 2, "no log file at /dev/zero"),
    ("replay-pipe", ["replay", "{in}/fifo"], 2, "no log file at {in}/fifo"),
    ("leaderboard-pipe-in-folder", ["leaderboard", "{in}/withpipe", "--out", "lb", "--bootstrap", "10"], 0,
     "2 *.jsonl entries that are not regular files"),
    ("ratings-validity-pipe-in-folder", ["ratings-validity", "{in}/withpipe", "--folds", "2"], 2,
     "need at least 2 competitive episodes for 2 folds, got 1"),
    ("export-pipe-in-folder", ["export", "sft", "{in}/withpipe", "--out", "ex", "--tokenizer", ""], 0,
     "pipe.jsonl: skipped, it is a pipe, not a regular file"),
]

_NEVER_ENDING_CHILD = """
import contextlib, io, json, os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))   # /dev/zero read whole would pass this at once
from socialgym_env import cli
results = []
for name, argv in json.loads(sys.argv[1]):
    print("running", name, file=sys.__stderr__, flush=True)      # says which case hung, if one does
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as stop:
            code = stop.code
    results.append([name, code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def test_a_device_or_a_pipe_as_a_log_never_blocks_or_grows(inputs, tmp_path):
    import subprocess
    import sys
    cases = [(name, [a.replace("{in}", str(inputs)) for a in argv]) for name, argv, _, _ in NEVER_ENDING]
    run = subprocess.run([sys.executable, "-c", _NEVER_ENDING_CHILD, json.dumps(cases)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 0, run.stderr[-2000:]
    results = {name: (code, out, err) for name, code, out, err in json.loads(run.stdout.splitlines()[-1])}
    for name, argv, code, fragment in NEVER_ENDING:
        got, out, err = results[name]
        assert got == code, (name, out, err)
        assert "Traceback" not in out + err, name
        assert fragment.replace("{in}", str(inputs)) in out + err, (name, out, err)
        if code == 2:
            assert len([line for line in err.splitlines() if line.strip()]) == 1, (name, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex", "lb"]      # only the runs that succeeded wrote


def _read_only(inputs):
    folder = unwritable_folder(inputs)
    if folder is None:
        pytest.skip("root with no read-only file system: nothing stands for a read-only folder here")
    return str(folder)


def _argv(argv, inputs, tmp_path):
    if any("{ro}" in a for a in argv):
        argv = [a.replace("{ro}", _read_only(inputs)) for a in argv]
    argv = [a.replace("{in}", str(inputs)) for a in argv]
    if argv[0] == "tournament" and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    return argv


def _run(capsys, argv):
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", SOCIALGYM, ids=[c[0] for c in SOCIALGYM])
def test_bad_input_is_one_line_and_writes_nothing(case, inputs, tmp_path, monkeypatch, capsys):
    name, argv, code, fragment = case
    fragment = fragment.replace("{in}", str(inputs))
    monkeypatch.chdir(tmp_path)
    before = _files(inputs)
    got, out, err = _run(capsys, _argv(argv, inputs, tmp_path))
    text = out + err
    assert got == code, text
    assert "Traceback" not in text
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert fragment in lines[0], lines[0]
    assert _files(tmp_path) == [], "bad input left files behind"
    assert _files(inputs) == before, "bad input changed an input folder"


@pytest.mark.parametrize("case", FAILED_RUNS, ids=[c[0] for c in FAILED_RUNS])
def test_a_run_that_did_not_do_what_was_asked_exits_1(case, inputs, tmp_path, monkeypatch, capsys):
    name, argv, code, fragment = case
    monkeypatch.chdir(tmp_path)
    got, out, err = _run(capsys, _argv(argv, inputs, tmp_path))
    assert got == code, out + err
    assert "Traceback" not in out + err
    assert fragment is None or fragment in out + err


def test_every_subcommand_has_a_bad_input_case():
    command = typer.main.get_command(cli.app)
    names = set()
    for name, sub in command.commands.items():
        names |= {f"{name} {n}" for n in sub.commands} if hasattr(sub, "commands") else {name}
    covered = {" ".join(argv[:2]) if f"{argv[0]} {argv[1]}" in names else argv[0]
               for _, argv, _, _ in SOCIALGYM if argv[0] in {n.split()[0] for n in names}}
    assert names - covered == set()
    assert len(SOCIALGYM) + len(TRAINING) + len(REFERENCE) >= 100


# python -m socialgym_training.*: each script's main() under the same handler as its __main__ block
TRAINING = [
    ("sft-missing-data", "sft", ["--data", "/no/such"], "no dataset folder or JSONL file at /no/such"),
    ("sft-empty-folder", "sft", ["--data", "{in}/emptydir"], "is not a saved dataset folder"),
    ("sft-empty-jsonl", "sft", ["--data", "{in}/empty.jsonl"], "is not a JSONL file of rows"),
    ("sft-binary", "sft", ["--data", "{in}/binary.bin"], "is not a JSONL file of rows"),
    ("sft-truncated-jsonl", "sft", ["--data", "{in}/sft_truncated.jsonl"], "is not a JSONL file of rows (line 2"),
    ("sft-prompt-is-a-number", "sft", ["--data", "{in}/sft_prompt_5.jsonl"], "column 'prompt' holds Value('int64')"),
    ("grpo-num-generations-0", "grpo_games", ["--num_generations", "0"], "--num_generations must be at least 2"),
    ("sft-wrong-columns", "sft", ["--data", "{in}/wrongcols.jsonl"], "lacks the columns ['prompt', 'completion']"),
    ("sft-missing-split", "sft", ["--data", "{in}/test_only"], "has no 'train' split (it has test)"),
    ("sft-model-missing", "sft", ["--data", "{in}/sft_data", "--model", "/no/such/model"], "is not 'smollm2'"),
    ("sft-out-is-file", "sft", ["--data", "{in}/sft_data", "--out", "{in}/good.jsonl"], "is a file, expected a folder"),
    ("sft-unknown-option", "sft", ["--bogus", "1"], "valid options: --data"),
    ("sft-device", "sft", ["--device", "tpu"], "unknown device 'tpu'"),
    ("dpo-wrong-columns", "dpo", ["--data", "{in}/sft_data"], "lacks the columns ['chosen', 'rejected']"),
    ("dpo-missing-data", "dpo", ["--data", "/no/such"], "no dataset folder"),
    ("detector-missing-logs", "detector", ["--logs", "/no/such"], "no log file or folder at /no/such"),
    ("anil-one-game", "anil", ["--logs", "{in}/good.jsonl"], "at least two detection games"),
    ("socialmaze-binary-test", "socialmaze", ["evaluate", "--test", "{in}/binary.bin"], "not UTF-8 text"),
    ("socialmaze-missing-adapter", "socialmaze", ["evaluate", "--test", "{in}/maze.jsonl", "--adapter", "/no/such"],
     "no trained adapter at /no/such"),
    # every option checked before the model loads (issue 65)
    ("trl-env-temperature-nan", "trl_env", ["--temperature", "nan"], "--temperature must be a finite number, got nan"),
    ("trl-env-temperature-0", "trl_env", ["--temperature", "0"], "--temperature must be > 0, got 0.0"),
    ("trl-env-invalid-penalty-nan", "trl_env", ["--invalid_penalty", "nan"], "--invalid_penalty must be a finite number"),
    ("trl-env-unfinished-reward-inf", "trl_env", ["--unfinished_reward=-inf"], "--unfinished_reward must be a finite"),
    ("trl-env-out-read-only", "trl_env", ["--out", "{ro}/run"], "is not writable"),
    ("selfplay-piece-steps-negative", "selfplay.cli", ["--piece_steps", "-2"], "--piece_steps must be >= 0, got -2"),
    ("selfplay-save-every-negative", "selfplay.cli", ["--save_every", "-1"], "--save_every must be >= 0, got -1"),
    ("selfplay-snapshot-every-0", "selfplay.cli", ["--snapshot_every", "0"], "--snapshot_every must be >= 1, got 0"),
    ("selfplay-temperature-nan", "selfplay.cli", ["--temperature", "nan"], "--temperature must be a finite number"),
    ("selfplay-self-play-probability", "selfplay.cli", ["--self_play", "1.5"], "--self_play must be a probability"),
    ("selfplay-out-read-only", "selfplay.cli", ["--out", "{ro}/run"], "is not writable"),
    ("selfplay-resume-corrupt-state", "selfplay.cli", ["--resume", "true", "--out", "{in}/resume_corrupt"],
     "checkpoint-2 is unusable (trainer_state.json: "),
    ("selfplay-resume-state-without-step", "selfplay.cli", ["--resume", "true", "--out", "{in}/resume_no_step"],
     "is unusable (trainer_state.json: 'global_step')"),
    ("selfplay-resume-state-missing", "selfplay.cli", ["--resume", "true", "--out", "{in}/resume_missing"],
     "is unusable (no trainer_state.json)"),
    ("trl-env-option-without-value", "trl_env", ["--seed"], "--seed: expected one argument"),
    ("grpo-temperature-inf", "grpo_games", ["--temperature", "inf"], "--temperature must be a finite number"),
    ("grpo-invalid-penalty-nan", "grpo_games", ["--invalid_penalty", "nan"], "--invalid_penalty must be a finite"),
    ("grpo-hrd-learning-rate-0", "grpo_hrd", ["--learning_rate", "0"], "--learning_rate must be > 0"),
    ("sft-learning-rate-nan", "sft", ["--learning_rate", "nan"], "--learning_rate must be a finite number"),
    ("sft-out-read-only", "sft", ["--out", "{ro}/run"], "is not writable"),
    ("dpo-beta-0", "dpo", ["--beta", "0"], "--beta must be > 0"),
    ("detector-lr-nan", "detector", ["--lr", "nan"], "--lr must be a finite number"),
]


def _training_body(script: str, argv: list):
    import importlib
    module = importlib.import_module(f"socialgym_training.{script}")
    if script == "socialmaze":
        return lambda: invoke_typer(module.app, argv, "socialgym_training.socialmaze")
    if script in ("detector", "anil"):
        from socialgym_training.common import parse_config
        return lambda: module.main(parse_config(module.Config, argv))
    return lambda: module.main(argv)


@pytest.mark.parametrize("case", TRAINING, ids=[c[0] for c in TRAINING])
def test_training_scripts_bad_input_is_one_line(case, inputs, tmp_path, monkeypatch, capsys):
    name, script, argv, fragment = case
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{ro}", _read_only(inputs)) if "{ro}" in a else a.replace("{in}", str(inputs)) for a in argv]
    if "--out" not in argv and script != "socialmaze":
        argv += ["--out", str(tmp_path / "out")]
    code = run_command(_training_body(script, argv), f"socialgym_training.{script}")
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    lines = [line for line in captured.err.splitlines() if line.strip() and "Warning" not in line]
    assert "Traceback" not in captured.out + captured.err
    assert len(lines) == 1 and fragment in lines[0], captured.err
    assert not (tmp_path / "out").exists(), "bad input left an output folder"


# python -m socialgym_benchmarks.tournament.reference (issue 65: six tracebacks, and --episodes 0 built a pool)
REFERENCE = [
    ("reference-build-out-device", ["build", "--out", "/dev/null"], "/dev/null is a device, expected a folder"),
    ("reference-build-out-read-only", ["build", "--out", "{ro}/pool"], "is not writable"),
    ("reference-build-out-file", ["build", "--out", "{in}/good.jsonl"], "good.jsonl is a file, expected a folder"),
    ("reference-check-no-spec", ["check"], "check needs the SPEC of the policy to rate"),
    ("reference-check-unknown-spec", ["check", "nope:x"], "unknown policy spec 'nope:x'"),
    ("reference-check-out-device", ["check", "scripted:win_stay_lose_shift", "--out", "/dev/null"],
     "/dev/null is a device, expected a folder"),
    ("reference-check-out-read-only", ["check", "scripted:win_stay_lose_shift", "--out", "{ro}/rate"], "is not writable"),
    ("reference-build-episodes-0", ["build", "--episodes", "0", "--out", "pool"], "--episodes must be from 1 to 100,000, got 0"),
    ("reference-build-episodes-negative", ["build", "--episodes", "-1", "--out", "pool"], "got -1"),
    ("reference-build-episodes-huge", ["build", "--episodes", "100001", "--out", "pool"], "got 100001"),
    ("reference-build-episodes-text", ["build", "--episodes", "x", "--out", "pool"], "invalid int value: 'x'"),
    ("reference-unknown-action", ["bogus"], "invalid choice: 'bogus'"),
    ("reference-build-with-spec", ["build", "scripted:random", "--out", "pool"], "build takes no SPEC"),
]


@pytest.mark.parametrize("case", REFERENCE, ids=[c[0] for c in REFERENCE])
def test_reference_pool_command_bad_input_is_one_line(case, inputs, tmp_path, monkeypatch, capsys):
    from socialgym_benchmarks.tournament import reference
    name, argv, fragment = case
    monkeypatch.chdir(tmp_path)
    shipped = {p.name: p.read_bytes() for p in reference.POOL_DIR.rglob("*") if p.is_file()}
    argv = [a.replace("{ro}", _read_only(inputs)) if "{ro}" in a else a.replace("{in}", str(inputs)) for a in argv]
    code = run_command(lambda: reference.main(argv), reference.PROG)
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], captured.err
    assert _files(tmp_path) == [], "bad input left files behind"
    assert {p.name: p.read_bytes() for p in reference.POOL_DIR.rglob("*") if p.is_file()} == shipped


@pytest.mark.parametrize("command", ["arena", "serve-env", "serve-ors"])
def test_a_port_in_use_is_one_line_and_exit_2(command, tmp_path, monkeypatch, capsys):
    """Once uvicorn's own startup line and exit 3; now refused before serving."""
    import socket
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [command, "--port", str(port)] + (["--models", ""] if command == "arena" else [])
        got, out, err = _run(capsys, argv)
    assert got == 2 and "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0], err


@pytest.mark.parametrize("module", ["export", "branching", "detection_eval"])
def test_a_library_module_run_as_a_command_says_what_to_run(module):
    """``python -m socialgym_training.export`` once did nothing and exited 0."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", f"socialgym_training.{module}"], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip() and "Warning" not in line]
    assert done.returncode == 2 and len(lines) == 1 and "is a library, not a command" in lines[0], done.stderr
