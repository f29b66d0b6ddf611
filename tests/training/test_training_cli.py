"""The training scripts as commands: help lines from the config fields, file and module runs,
bad input as one line and exit 2, and the device / vLLM plumbing (on the CPU: no GPU here)."""
import dataclasses
import importlib
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from socialgym_training.common import config_parser, field_help, grpo_args, precision_args, resolve_device

ROOT = Path(__file__).resolve().parents[2]
CONFIG_SCRIPTS = ["sft", "dpo", "grpo_games", "grpo_hrd", "detector", "probe", "anil", "detection_logs", "selfplay", "trl_env"]
TYPER_SCRIPTS = ["socialmaze", "cli"]
# a script that is a package (run as its folder or ``python -m``) keeps its Config in its config module
CONFIG_MODULES = {"selfplay": "selfplay.config"}


def config_of(name: str):
    return importlib.import_module(f"socialgym_training.{CONFIG_MODULES.get(name, name)}").Config


@pytest.mark.parametrize("name", CONFIG_SCRIPTS)
def test_every_option_has_a_help_line_from_its_field(name):
    config = config_of(name)
    docs = field_help(config)
    fields = [f.name for f in dataclasses.fields(config)]
    assert sorted(docs) == sorted(fields), set(fields) ^ set(docs)
    text = " ".join(config_parser(config).format_help().split())
    for field in fields:
        assert docs[field] and f"--{field}" in text
        assert " ".join(docs[field].split()[:4]) in text, field


@pytest.mark.parametrize("name", CONFIG_SCRIPTS + ["kuhn_llm_exploitability"])
def test_every_option_is_documented_once_in_its_class_hierarchy(name):
    """The configs are composed from the shared groups of socialgym_training.configs: a field's
    docstring is written in one class only (a script that changes a default writes none)."""
    from socialgym_env.docgen import _own_field_docs
    config = config_of(name)
    writers = {}
    for klass in config.__mro__[:-1]:
        for field in _own_field_docs(klass):
            writers.setdefault(field, []).append(klass.__name__)
    assert {field: where for field, where in writers.items() if len(where) > 1} == {}
    assert set(writers) == {f.name for f in dataclasses.fields(config)}


def test_shared_groups_are_composed_not_copied():
    """The SFT and DPO scripts declare only their own fields and defaults: the LoRA, optimiser,
    model and data options come from the shared groups."""
    from socialgym_env.docgen import _own_field_docs
    from socialgym_training import configs, dpo, sft
    assert set(_own_field_docs(sft.Config)) == set() and set(_own_field_docs(dpo.Config)) == {"beta"}
    for group in (configs.ModelArgs, configs.LoraArgs, configs.TrainerArgs, configs.DataArgs):
        assert issubclass(sft.Config, group) and issubclass(dpo.Config, group)
    assert sft.Config().lora_targets == "all-linear" and configs.LoraArgs().lora_targets == configs.ATTENTION


def _run(target: str, argv: list, as_file: bool):
    """Run a script in this process as ``python socialgym_training/x.py ARGS`` (a package: its folder)
    or ``python -m socialgym_training.x ARGS``; returns the exit code (0 when it returned)."""
    saved = sys.argv
    sys.argv = [target] + list(argv)
    folder = ROOT / "socialgym_training" / target
    try:
        if as_file:
            runpy.run_path(str(folder if folder.is_dir() else folder.with_suffix(".py")), run_name="__main__")
        else:
            runpy.run_module(f"socialgym_training.{target}", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    finally:
        sys.argv = saved
    return 0


@pytest.mark.parametrize("as_file", [True, False], ids=["file", "module"])
@pytest.mark.parametrize("name", CONFIG_SCRIPTS + TYPER_SCRIPTS)
def test_runs_as_a_file_and_as_a_module(name, as_file, capsys):
    assert _run(name, ["--help"], as_file) == 0
    out = capsys.readouterr().out
    assert "--help" in out or "--out" in out


def test_a_file_run_in_a_fresh_interpreter():
    """The form that failed before (a relative import): the detector as a plain file."""
    done = subprocess.run([sys.executable, "socialgym_training/detector.py", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert "--logs" in done.stdout and "A log file or a folder of them" in " ".join(done.stdout.split())


# ---------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def bad_data(tmp_path_factory):
    from datasets import Dataset, DatasetDict
    root = tmp_path_factory.mktemp("bad")
    row = {"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "yo"}]}
    DatasetDict(train=Dataset.from_list([row]), test=Dataset.from_list([row])).save_to_disk(str(root / "sft"))
    empty = Dataset.from_dict({"prompt": [], "completion": []})
    DatasetDict(train=empty, test=Dataset.from_list([row])).save_to_disk(str(root / "empty_train"))
    DatasetDict(test=Dataset.from_list([row])).save_to_disk(str(root / "no_train"))
    DatasetDict(train=Dataset.from_list([{"text": "x"}])).save_to_disk(str(root / "wrong_columns"))
    (root / "not_a_dataset").mkdir()
    (root / "junk.jsonl").write_text("this is not json\n")
    (root / "no_model").mkdir()
    return root


BAD = [
    ("sft", ["--data", "{root}/missing"], "no dataset folder or JSONL file"),
    ("sft", ["--data", "{root}/junk.jsonl"], "is not a JSONL file"),
    ("sft", ["--data", "{root}/not_a_dataset"], "is not a saved dataset folder"),
    ("sft", ["--data", "{root}/no_train"], "has no 'train' split"),
    ("sft", ["--data", "{root}/empty_train"], "split of"),
    ("sft", ["--data", "{root}/wrong_columns"], "lacks the columns"),
    ("dpo", ["--data", "{root}/sft"], "lacks the columns ['chosen', 'rejected']"),
    ("sft", ["--data", "{root}/sft", "--model", "{root}/nowhere"], "is not 'smollm2', a .gguf file"),
    ("dpo", ["--data", "{root}/sft", "--model", "{root}/no_model"], "lacks the columns"),
    ("sft", ["--data", "{root}/sft", "--model", "{root}/no_model"], "holds no config.json"),
    ("sft", ["--bogus", "1"], "bad arguments"),
    ("sft", ["--device", "tpu"], "unknown device 'tpu'"),
    ("grpo_games", ["--game", "nosuch_game"], "nosuch_game"),
    ("grpo_games", ["--opponents", "nosuch:x"], "unknown policy spec"),
    ("grpo_games", ["--seat", "player_9"], "player_9"),
    ("grpo_games", ["--prompt", "short"], "--prompt must be turns, full or compact"),
    ("grpo_games", ["--policy_options", "mode=score"], "may not set mode"),
    ("grpo_games", ["--policy_options", "nosuch=1"], "unknown LLM option 'nosuch'"),
    ("grpo_games", ["--reply_prefix", "x"], "--reply_prefix is for full / compact"),
    ("grpo_games", ["--env_server", "local"], "add --prompt full"),
    ("selfplay", ["--prompt", "short"], "--prompt turns, compact or full"),
    ("selfplay", ["--policy_options", "context=-1"], "context=-1"),
    ("grpo_hrd", ["--preset", "nosuch"], "nosuch"),
    ("detector", ["--logs", "{root}/missing"], "no log file or folder"),
    ("anil", ["--logs", "{root}/missing"], "no log file or folder"),
    ("probe", ["--logs", "{root}/missing"], "no log file or folder"),
]


@pytest.mark.parametrize("name,argv,message", BAD, ids=[f"{n}:{' '.join(a)[:40]}" for n, a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(name, argv, message, bad_data, capsys):
    argv = [a.format(root=bad_data) for a in argv]
    assert _run(name, argv, as_file=False) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


def test_cuda_without_a_gpu_is_bad_input(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit) as done:
        resolve_device("cuda")
    assert done.value.code == 2 and "no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [(["--test", "{root}/missing.jsonl"], "no test puzzle file"),
                                          (["--test", "{root}/junk.jsonl", "--adapter", "{root}/nowhere"],
                                           "no trained adapter")])
def test_socialmaze_bad_input(argv, message, bad_data):
    from typer.testing import CliRunner

    from socialgym_training.socialmaze import app
    result = CliRunner().invoke(app, ["evaluate"] + [a.format(root=bad_data) for a in argv])
    assert result.exit_code == 2 and message in result.output


# ---------------------------------------------------------------------- devices
def test_precision_follows_the_device(monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert precision_args("auto") == precision_args("cpu") == {"use_cpu": True, "bf16": False}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert precision_args("auto") == precision_args("cuda") == {"use_cpu": False, "bf16": True}
    assert precision_args("cpu") == {"use_cpu": True, "bf16": False}
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert precision_args("cuda") == {"use_cpu": False, "bf16": False}


def test_grpo_args_shows_progress_and_takes_the_device(tmp_path):
    args = grpo_args(tmp_path, "cpu", max_steps=2)
    assert args.use_cpu and not args.bf16 and not args.disable_tqdm and args.max_steps == 2
    assert grpo_args(tmp_path, "cpu", progress=False).disable_tqdm


def test_sft_and_dpo_configs_default_to_auto_device_and_progress():
    from socialgym_training.common import trainer_args
    from socialgym_training.dpo import Config as DPOConfig
    from socialgym_training.sft import Config as SFTConfig
    for config in (SFTConfig(), DPOConfig()):
        args = trainer_args(config, 512)
        assert config.device == "auto" and args["disable_tqdm"] is False and args["max_length"] == 512
        assert args["use_cpu"] == (resolve_device("auto") == "cpu")


class _MetaModel:
    """A model that lives on the ``meta`` device: generate() checks where its inputs are."""

    device = None
    training = False

    def __init__(self):
        import torch
        self.device = torch.device("meta")
        self.seen = []

    def eval(self):
        return self

    def generate(self, input_ids, attention_mask, max_new_tokens, **kwargs):
        import torch
        self.seen.append((input_ids.device.type, attention_mask.device.type))
        batch, width = input_ids.shape
        return torch.full((batch, width + 2), 7, dtype=torch.long)


def test_generation_inputs_follow_the_model(tokenizer):
    from socialgym_training.multiturn.generation import hf_generate_fn
    model = _MetaModel()
    replies = hf_generate_fn(model, tokenizer, max_new_tokens=2, temperature=0.0)([[1, 2, 3], [4, 5]])
    assert model.seen == [("meta", "meta")] and replies == [[7, 7], [7, 7]]


def test_policy_device_option():
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.loading import ModelNotAvailable, resolve_device as policy_device
    assert parse_options("device=cpu").device == "cpu" and parse_options("").device == "auto"
    with pytest.raises(ValueError, match="device"):
        parse_options("device=tpu")
    import torch
    if not torch.cuda.is_available():
        assert policy_device("auto") == "cpu"
        with pytest.raises(ModelNotAvailable, match="no CUDA device"):
            policy_device("cuda")


# ---------------------------------------------------------------------- vLLM
class FakeVLLMClient:
    """Mimics ``trl.generation.vllm_client.VLLMClient.generate``: the same arguments (checked
    against the real signature) and the same return shape, logprobs included; each reply is
    the first legal reply of the request's JSON schema."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.calls = []

    def generate(self, prompts, features=None, n=1, repetition_penalty=1.0, temperature=1.0, top_p=1.0, top_k=0,
                 min_p=0.0, max_tokens=16, logprobs=0, structured_outputs_regex=None, generation_kwargs=None):
        import inspect

        from trl.generation.vllm_client import VLLMClient
        inspect.signature(VLLMClient.generate).bind(self, prompts, features=features, n=n,
                                                    repetition_penalty=repetition_penalty, temperature=temperature,
                                                    top_p=top_p, top_k=top_k, min_p=min_p, max_tokens=max_tokens,
                                                    logprobs=logprobs, structured_outputs_regex=structured_outputs_regex,
                                                    generation_kwargs=generation_kwargs)
        self.calls.append({"prompts": prompts, "n": n, "logprobs": logprobs, "generation_kwargs": generation_kwargs})
        schema = (generation_kwargs or {}).get("structured_outputs", {}).get("json")
        first = schema["anyOf"][0]["properties"] if schema else {"action_type": {"const": "junk"},
                                                                  "argument": {"const": ""}}
        reply = json.dumps({k: v["const"] for k, v in first.items()})
        ids = self.tokenizer(reply, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        completions = [list(ids) for _ in prompts for _ in range(n)]
        return {"prompt_ids": [list(p) for p in prompts], "completion_ids": completions,
                "logprobs": [[[-0.25] for _ in c] for c in completions],
                "logprob_token_ids": [[[t] for t in c] for c in completions]}


class _FakeGeneration:
    mode = "server"
    temperature, top_p, top_k, min_p, repetition_penalty = 1.0, 1.0, 0, 0.0, 1.0
    max_completion_length = 24
    generation_kwargs = None

    def __init__(self, client):
        self.vllm_client = client


def test_vllm_rollouts_return_per_token_logprobs_under_the_reply_schema(tokenizer):
    from types import SimpleNamespace

    from socialgym_agents.llm.constraint import reply_grammar
    from socialgym_training.multiturn.episode import episode_specs, rollout_output
    from socialgym_training.multiturn.generation import vllm_generate_fn
    from socialgym_training.multiturn.rollout import play_episodes
    import socialgym_env
    client = FakeVLLMClient(tokenizer)
    trainer = SimpleNamespace(vllm_generation=_FakeGeneration(client))
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:constant:rock"], range(3), {"rounds": 2})
    episodes = play_episodes(specs, vllm_generate_fn(trainer), tokenizer, max_turns=4)
    env = socialgym_env.make("rock_paper_scissors", rounds=2)
    env.reset(seed=0)
    info = env.infos["player_0"]
    expected = reply_grammar(info).json_schema(info)
    assert client.calls and all(c["logprobs"] == 0 and c["n"] == 1 for c in client.calls)
    assert all(c["generation_kwargs"]["structured_outputs"]["json"] == expected for c in client.calls)
    for episode in episodes:
        assert [json.loads(a)["action_type"] for a in episode.actions] == ["rock", "rock"]   # the first legal reply
        assert len(episode.logprobs) == len(episode.completion_ids) == len(episode.env_mask)
        # reply tokens sampled under the schema: vLLM scored the masked distribution, so none
        # (TRL: no importance correction for them); env tokens 0.0
        assert all(lp == (None if m else 0.0) for lp, m in zip(episode.logprobs, episode.env_mask))
    out = rollout_output(episodes)
    assert [len(lp) for lp in out["logprobs"]] == [len(c) for c in out["completion_ids"]]
    unconstrained = play_episodes(specs[:1], vllm_generate_fn(trainer, constrained=False), tokenizer, max_turns=4)
    assert "structured_outputs" not in (client.calls[-1]["generation_kwargs"] or {})
    assert unconstrained[0].invalid_actions == 2                  # "junk" is no action
    assert all(lp == (-0.25 if m else 0.0) for lp, m in zip(unconstrained[0].logprobs, unconstrained[0].env_mask))


def test_hf_rollouts_have_no_logprobs(tokenizer):
    from socialgym_training.multiturn.episode import Episode, EpisodeSpec, rollout_output
    assert rollout_output([Episode(EpisodeSpec("rock_paper_scissors", 0, "player_0", ()))])["logprobs"] is None


# ---------------------------------------------------------------------- GPU smoke script, dry
def test_gpu_smoke_script_dry_run_parses_on_the_cpu(tmp_path, monkeypatch):
    """No GPU here: DRY_RUN=1 prints each check's command; every training command's options
    must parse (CUDA faked visible), the tournament's specs must be known, the accelerate
    config must load and the inline Python must compile."""
    import os
    import shlex

    import torch
    from accelerate.commands.config.config_args import load_config_from_file

    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.registry import check_spec
    from socialgym_training.common import parse_config
    done = subprocess.run(["bash", "socialgym_benchmarks/perf/gpu_smoke.sh", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "DRY_RUN": "1"}, timeout=60)
    assert done.returncode == 0, done.stderr
    commands = {}
    for line in done.stdout.splitlines():
        name, _, command = line.partition(": ")
        commands[name.removeprefix("DRY ")] = shlex.split(command)
    assert set(commands) == {"cuda_visible", "policy_on_cuda", "grpo_hf", "grpo_vllm", "hrd_data", "sft_accelerate",
                             "sft_2proc", "grpo_hf_2proc", "tournament_cuda"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    for name in ("grpo_hf", "grpo_vllm"):
        argv = commands[name][2:]
        from socialgym_training.grpo_games import Config, check_config
        config = parse_config(Config, argv)
        check_config(config)
        assert config.device == "cuda" and config.steps == 2
    assert parse_config(Config, commands["grpo_vllm"][2:]).use_vllm
    for name in ("sft_2proc", "grpo_hf_2proc"):            # 2 processes, each on its own GPU
        launch = commands[name]
        assert launch[launch.index("--num_processes") + 1] == "2"
        assert load_config_from_file(str(ROOT / launch[launch.index("--config_file") + 1])).distributed_type == "MULTI_GPU"
    grpo_2proc = commands["grpo_hf_2proc"]
    check_config(parse_config(Config, grpo_2proc[grpo_2proc.index("socialgym_training/grpo_games.py") + 1:]))
    sft_2proc = commands["sft_2proc"]
    from socialgym_training.sft import Config as SFTConfig
    assert parse_config(SFTConfig, sft_2proc[sft_2proc.index("socialgym_training.sft") + 1:]).max_steps == 2
    launch = commands["sft_accelerate"]
    assert load_config_from_file(str(ROOT / launch[launch.index("--config_file") + 1])).num_processes == 1
    from socialgym_training.sft import Config as SFTConfig
    sft = parse_config(SFTConfig, launch[launch.index("socialgym_training.sft") + 1:])
    assert sft.max_steps == 2 and sft.device == "cuda"
    tournament = commands["tournament_cuda"]
    for spec in tournament[tournament.index("--agents") + 1].split(","):
        check_spec(spec)
        if "?" in spec:
            assert parse_options(spec.partition("?")[2]).device == "cuda"
    for name in ("cuda_visible", "policy_on_cuda"):
        compile(commands[name][2], name, "exec")
    from typer.testing import CliRunner

    from socialgym_training.socialmaze import app
    data = commands["hrd_data"]
    result = CliRunner().invoke(app, data[data.index("data"):])       # the real (small) data step
    assert result.exit_code == 0, result.output
    assert (tmp_path / "hrd" / "sft" / "dataset_dict.json").is_file()
