"""Branching rollouts: what an action is worth at a decision, measured by the game's own rules.

At a decision point of a seat, the env is snapshotted (``env.clone()``). Each of K candidate
actions (all legal actions, or K drawn at random from them when there are more; or K replies
sampled from the seat's own policy) is played from a copy of the snapshot and the episode is
rolled out to the end M times with the same policies. Rollout m of every candidate uses the same
random numbers (the env's RNG reseeded with m; every policy's seat has the same key and seed in
rollout m of each candidate, so scripted and sampled players draw alike): common random numbers,
so candidates differ by their action, not their luck, and the M rewards of two candidates are
paired. The best and the worst candidate are those with the highest and lowest mean final
reward of the seat. Picking the best and the worst of K makes their gap large even when every
action is worth the same, so :func:`max_gap_test` is a **permutation test of the max-min gap**:
under the null the K rewards of one rollout are exchangeable, so the candidate labels are
shuffled within each rollout and the gap of the best and worst *shuffled* means is recomputed --
the selection is part of the statistic, and the pairing is kept. ``socialgym_benchmarks/branching_null.py``
measures the false-pair rate where every action is worth the same (Rock-Paper-Scissors against a
uniform random opponent) and the power where one is better. Deterministic policies make all M
rollouts of a candidate equal; the smallest p is then about ``K!^-(M-1)``, so M >= 6 for K = 2
at alpha 0.05.

Rollouts see the true hidden state (they continue the actual deal): the value is what the
action is worth in this game, which the seat itself could not know. :mod:`socialgym_training.branching`
turns branched decisions into DPO preference pairs.
"""
from __future__ import annotations

import random
import zlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from .base import Request
from .llm.parsing import action_string

CANDIDATE_SOURCES = ("legal", "policy")


@dataclass
class BranchConfig:
    candidates: int = 4          # K actions compared at a decision point
    rollouts: int = 8            # M rollouts to the end per candidate (paired across candidates)
    source: str = "legal"        # "legal": legal actions; "policy": replies sampled from the seat's policy
    alpha: float = 0.05          # keep a pair only when the max-min permutation p-value is below this
    permutations: int = 2000     # label shuffles of the permutation test
    points_per_episode: int = 0  # branch at most this many decisions of the learner per episode (0 = all)

    def __post_init__(self):
        if self.source not in CANDIDATE_SOURCES:
            raise ValueError(f"unknown candidate source {self.source!r}; valid: {', '.join(CANDIDATE_SOURCES)}")
        if self.candidates < 2 or self.rollouts < 2 or self.permutations < 1:
            raise ValueError("branching needs candidates >= 2, rollouts >= 2 and permutations >= 1")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")


def max_gap_test(rewards, permutations: int = 2000, seed: int = 0) -> tuple[int, int, float]:
    """(best, worst, p): the candidates with the highest and lowest mean of ``rewards`` (K x M,
    column m = rollout m of every candidate, paired by common random numbers) and the
    permutation p-value of their gap. Under the null the K values of each column are
    exchangeable, so labels are shuffled within columns; the statistic is the max-min gap of the
    shuffled means, so the best/worst selection is accounted for. p = (1 + #{gap* >= gap}) /
    (1 + permutations), which is valid (never below its nominal level under the null)."""
    import numpy as np
    table = np.asarray(rewards, dtype=float)
    means = table.mean(axis=1)
    best = int(max(range(len(means)), key=lambda i: (means[i], -i)))
    worst = int(min(range(len(means)), key=lambda i: (means[i], i)))
    gap = means[best] - means[worst]
    if gap <= 0:
        return best, worst, 1.0
    rng = np.random.default_rng(seed)
    k, m = table.shape
    order = rng.random((permutations, k, m)).argsort(axis=1)       # a label shuffle per column
    shuffled = np.take_along_axis(np.broadcast_to(table, (permutations, k, m)), order, axis=1).mean(axis=2)
    null_gaps = shuffled.max(axis=1) - shuffled.min(axis=1)
    return best, worst, float((1 + np.sum(null_gaps >= gap - 1e-12)) / (1 + permutations))


# ---------------------------------------------------------------------- rollouts
def request_for(env, agent: str, policy, key: tuple) -> Request:
    parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
    return Request(key, env.observe(agent), env.infos[agent], parts)


def play_out(envs: Sequence, seat_policies: dict, tags: Sequence[str], seeds: Sequence[int]) -> list[dict]:
    """Play every env to the end with ``seat_policies`` (agent -> policy); all envs advance
    together, one ``act_batch`` per policy per tick (LLM policies decode them as one batch).
    Seat keys are ``(tag, agent)``, seeded with ``seeds[i]``. Returns each env's final rewards."""
    for env, tag, seed in zip(envs, tags, seeds):
        for agent, policy in seat_policies.items():
            policy.reset((tag, agent), seed)
    live = list(range(len(envs)))
    while live:
        by_policy: dict = defaultdict(list)
        for i in live:
            envs[i].skip_dead()
        live = [i for i in live if envs[i].agents]
        for i in live:
            agent = envs[i].agent_selection
            policy = seat_policies[agent]
            by_policy[id(policy)].append((i, policy, request_for(envs[i], agent, policy, (tags[i], agent))))
        for items in by_policy.values():
            decisions = items[0][1].act_batch([request for _, _, request in items])
            for (i, _, _), decision in zip(items, decisions):
                if decision.error is not None:
                    raise decision.error
                envs[i].step(decision.action)
    for tag in tags:
        for agent, policy in seat_policies.items():
            if hasattr(policy, "release"):
                policy.release((tag, agent))
    return [dict(env.state.result.rewards) for env in envs]


def _legal_candidates(info: dict, k: int, rng: random.Random) -> list[tuple[str, str]]:
    """(env action, reply text) for up to k legal actions (all when there are at most k)."""
    legal = list(info.get("legal_action_list") or [])
    if not legal:
        raise ValueError(f"phase {info.get('phase')!r} has no finite legal action list; use source='policy'")
    chosen = legal if len(legal) <= k else rng.sample(legal, k)
    out = []
    for action in chosen:
        action_type, _, argument = action.partition(" ")
        out.append((action, action_string({"action_type": action_type, "argument": argument})))
    return out


def _policy_candidates(env, agent: str, policy, k: int, tag: str, seed: int) -> list[tuple[str, str]]:
    """Up to k distinct replies sampled from the seat's policy (it needs temperature > 0)."""
    keys = [(f"{tag}#candidate{j}", agent) for j in range(k)]
    for j, key in enumerate(keys):
        policy.reset(key, seed + j)
    decisions = policy.act_batch([request_for(env, agent, policy, key) for key in keys])
    out, seen = [], set()
    for key, decision in zip(keys, decisions):
        if hasattr(policy, "release"):
            policy.release(key)
        attempts = [a for a in decision.meta.get("attempts", []) if "reply" in a]
        reply = attempts[-1]["reply"] if attempts else decision.action
        if decision.error is None and decision.action not in seen:
            seen.add(decision.action)
            out.append((decision.action, reply))
    return out


def branch_decision(env, agent: str, seat_policies: dict, branch: BranchConfig, tag: str, seed: int = 0) -> dict:
    """Roll out K candidates x M times from ``env`` (not modified), ``agent`` to move. Returns
    ``{"candidates": [(action, reply, [rewards])...], "chosen": i, "rejected": j, "p_value": p}``
    (chosen/rejected None when fewer than two candidates)."""
    info = env.infos[agent]
    rng = random.Random(f"{seed}|{tag}")
    if branch.source == "legal":
        candidates = _legal_candidates(info, branch.candidates, rng)
    else:
        candidates = _policy_candidates(env, agent, seat_policies[agent], branch.candidates, tag, seed)
    # Rollout m of every candidate: the same env reseed, seat keys and policy seeds (common
    # random numbers); the M rollouts of one candidate are played together, candidate by
    # candidate, so that the keys can repeat.
    tags = [f"{tag}#m{m}" for m in range(branch.rollouts)]
    seeds = [seed * 1000 + m for m in range(branch.rollouts)]
    per_candidate = []
    for action, _ in candidates:
        envs = []
        for m in range(branch.rollouts):
            copy = env.clone()
            copy.state.rng.seed(f"{seed}|{tag}|rollout{m}")
            copy.step(action)
            envs.append(copy)
        per_candidate.append([r[agent] for r in play_out(envs, seat_policies, tags, seeds)])
    result = {"candidates": [(a, reply, rs) for (a, reply), rs in zip(candidates, per_candidate)],
              "chosen": None, "rejected": None, "p_value": 1.0}
    if len(candidates) < 2:
        return result
    best, worst, p_value = max_gap_test(per_candidate, branch.permutations, seed=zlib.crc32(f"{seed}|{tag}".encode()))
    result.update(chosen=best, rejected=worst, p_value=p_value)
    return result
