"""A tiny fixed episode log for the export tests: Prisoner's Dilemma, a fake LLM seat (JSON
replies drawn from its sampling seed, some junk that triggers re-asks) against random play."""
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
