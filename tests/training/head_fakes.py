"""A decision head's policy without a model, for the head and RFT tests: features made from
each reply's text, and a Werewolves episode whose wolves it plays."""
import zlib

import numpy as np

from socialgym_training.decision_head import Decisions

HIDDEN = 6


class FeatureBackend:
    """Features without a model: a reply's 'log-probability' and hidden vector from its text."""
    kind, model_name = "fake", "fake-features"

    def score(self, items, candidates):
        raise AssertionError("a head's policy asks for features, not scores")

    def reply_features(self, items, candidates):
        out = []
        for cands in candidates:
            rows = []
            for c in cands:
                r = np.random.default_rng(zlib.crc32(c.encode()))
                rows.append(np.concatenate([[-0.1 * len(c)], r.normal(0, 1, HIDDEN)]))
            out.append(np.array(rows))
        return out


def play_werewolves(head_path, seed: int):
    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.policy import LLMPolicy
    from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode
    from socialgym_training.budget import Config, side_jobs
    spec = f"smollm2?mode=score&temperature=1.0&talk=pass&head={head_path}"
    policy = LLMPolicy(FeatureBackend(), LLMConfig(mode="score", temperature=1.0, talk="pass", head=str(head_path),
                                                   seed=0), spec)
    seen = Decisions()
    policy.feature_sink = seen.add
    job = side_jobs(Config(), spec, [seed], "t")[0]
    record = play_episode(EpisodeJob(job.game, job.seed, job.seats, job.config, episode_id="t"),
                          PolicyPool(prebuilt={spec: policy}))
    return record, seen
