"""Training a decision head (:mod:`socialgym_agents.llm.decision_head`) on cached features.

The frozen model's features of every legal reply at every decision the head made are kept as
it plays (the policy's ``feature_sink``: :func:`recording`), with the reply it drew; after the
episodes end each decision gets its seat's episode reward. An update is then pure numpy on those
arrays, with no model call: seconds, however many epochs.

The update is a clipped policy gradient (PPO's surrogate) on the linear head: for a decision
with reply features ``X`` (one row per legal reply), drawn reply ``a`` and advantage ``A``,
``pi = softmax(X w / T)``, ratio ``r = pi_w(a) / pi_old(a)`` (``pi_old``: the head that played),
objective ``mean(min(r A, clip(r, 1 - eps, 1 + eps) A)) - l2 |w - w_old|^2`` ascended by plain
gradient steps.
With one epoch of one step this is REINFORCE; the clip makes several epochs over the same
cached decisions safe. The advantage is the seat's episode reward minus a per-episode baseline:
the mean reward of the *other* episodes of the batch (leave-one-out, so an episode's own outcome
does not enter its baseline). Equal rewards everywhere give zero advantages and no update.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from socialgym_agents.llm.decision_head import DecisionHead


@dataclass
class Decisions:
    """The head's decisions of a batch of episodes: per decision its feature matrix, the reply
    drawn, the seat (``(episode_id, agent)``) and, once known, the seat's episode reward."""

    features: list = field(default_factory=list)
    picks: list = field(default_factory=list)
    seats: list = field(default_factory=list)
    rewards: list = field(default_factory=list)

    def add(self, key: tuple, turn: int, features, pick: int) -> None:
        self.features.append(np.asarray(features, dtype=np.float32))
        self.picks.append(int(pick))
        self.seats.append((str(key[0]), str(key[-1])))

    def __len__(self) -> int:
        return len(self.picks)

    def reward_from(self, records: list) -> None:
        """Each decision's reward: its seat's episode reward in ``records`` (episode logs)."""
        by_seat = {(r["episode_id"], agent): float(value) for r in records
                   for agent, value in (r.get("rewards") or {}).items()}
        missing = [s for s in self.seats if s not in by_seat]
        if missing:
            raise ValueError(f"{len(missing)} decisions have no finished episode (first: {missing[0]})")
        self.rewards = [by_seat[s] for s in self.seats]

    def save(self, path) -> None:
        """One ``.npz`` (written whole or not at all): the matrices stacked with their offsets."""
        import io

        from socialgym_env.atomic import atomic_write_bytes
        offsets = np.cumsum([0] + [len(f) for f in self.features])
        handle = io.BytesIO()
        np.savez(handle, features=np.concatenate(self.features) if self.features else np.zeros((0, 1)),
                     offsets=offsets, picks=np.array(self.picks, dtype=np.int64),
                     seats=np.array(["\t".join(s) for s in self.seats]), rewards=np.array(self.rewards, dtype=float))
        atomic_write_bytes(path, handle.getvalue())

    @classmethod
    def load(cls, path) -> "Decisions":
        data = np.load(path)
        offsets = data["offsets"]
        return cls([data["features"][a:b] for a, b in zip(offsets[:-1], offsets[1:])], [int(p) for p in data["picks"]],
                   [tuple(s.split("\t")) for s in data["seats"]], [float(r) for r in data["rewards"]])


@contextlib.contextmanager
def recording(policy, decisions: Decisions):
    """Keep the decisions ``policy`` (an LLM policy with a head) makes while the block runs."""
    policy.feature_sink = decisions.add
    try:
        yield decisions
    finally:
        policy.feature_sink = None


def advantages(decisions: Decisions) -> np.ndarray:
    """Per decision, its seat's reward minus the mean reward of the batch's other episodes
    (each episode counted once, by the mean over its learner seats)."""
    episode_of = [s[0] for s in decisions.seats]
    totals: dict = {}
    for episode, reward in zip(episode_of, decisions.rewards):
        totals.setdefault(episode, []).append(reward)
    means = {e: float(np.mean(v)) for e, v in totals.items()}
    n, grand = len(means), sum(means.values())
    if n < 2:
        return np.zeros(len(decisions))
    return np.array([r - (grand - means[e]) / (n - 1) for e, r in zip(episode_of, decisions.rewards)])


def standardisation(decisions: Decisions) -> tuple:
    """Mean and scale of the hidden columns over every reply seen (scale floored at 1e-6)."""
    stacked = np.concatenate(decisions.features)[:, 1:].astype(float)
    return stacked.mean(0), np.maximum(stacked.std(0), 1e-6)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def surrogate_gradient(weights: np.ndarray, inputs: list, picks: list, adv: np.ndarray, old_prob: np.ndarray,
                       temperature: float, clip: float) -> tuple:
    """(objective, gradient) of the clipped surrogate over the decisions, averaged."""
    grad = np.zeros_like(weights)
    total = 0.0
    for x, a, advantage, p_old in zip(inputs, picks, adv, old_prob):
        pi = _softmax(x @ weights / temperature)
        ratio = pi[a] / p_old
        clipped = float(np.clip(ratio, 1 - clip, 1 + clip))
        total += min(ratio * advantage, clipped * advantage)
        if ratio * advantage <= clipped * advantage or clipped == ratio:   # the unclipped term is the min
            grad += advantage * ratio * (x[a] - pi @ x) / temperature
    return total / len(inputs), grad / len(inputs)


@dataclass
class HeadTraining:
    """The update's settings (``socialgym_training.budget`` exposes them as flags)."""

    temperature: float = 1.0
    learning_rate: float = 0.1
    epochs: int = 20
    clip: float = 0.2
    l2: float = 0.01


def update_head(head: DecisionHead, decisions: Decisions, settings: HeadTraining = HeadTraining()) -> dict:
    """Train ``head`` in place on one batch of its own decisions; returns the update's numbers.
    A head never trained gets its standardisation from this batch first (then fixed)."""
    if not head.meta.get("standardised"):
        head.mean, head.scale = standardisation(decisions)
        head.meta["standardised"] = True
    adv = advantages(decisions)
    inputs = [head.inputs(f) for f in decisions.features]
    start = head.weights.copy()
    old_prob = np.array([_softmax(x @ start / settings.temperature)[a] for x, a in zip(inputs, decisions.picks)])
    objective = 0.0
    for _ in range(settings.epochs):
        objective, grad = surrogate_gradient(head.weights, inputs, decisions.picks, adv, old_prob,
                                             settings.temperature, settings.clip)
        # plain gradient ascent: under random rewards the expected step is zero and its spread
        # shrinks with the batch (Adam's per-weight normalisation blew noise up to full steps: a
        # null run moved the toy's marked-reply rate from 0.26 to 0.44)
        head.weights = head.weights + settings.learning_rate * (grad - 2 * settings.l2 * (head.weights - start))
    head.meta["updates"] = head.meta.get("updates", 0) + 1
    return {"decisions": len(decisions), "mean_abs_advantage": float(np.abs(adv).mean()) if len(adv) else 0.0,
            "objective": float(objective), "weight_change": float(np.linalg.norm(head.weights - start))}
