"""Branching rollouts: DPO preference pairs whose labels come from the game's rules, not a judge.

At a decision point of a seat, the env is snapshotted (``env.clone()``). Each of K candidate
actions (all legal actions, or K drawn at random from them when there are more; or K replies
sampled from the seat's own policy) is played from a copy of the snapshot and the episode is
rolled out to the end M times with the same policies. Rollout m of every candidate uses the same
seeds (the env's RNG reseeded with m, each policy's seat seeded with m): common random numbers,
so candidates differ by their action, not their luck. Chosen = the candidate with the highest
mean final reward of the seat, rejected = the lowest; the pair is kept only when a two-sided
Mann-Whitney U test between the two sets of M rewards gives p < ``alpha`` (rewards are in
{-1, 0, 1}, so a test that handles ties). Deterministic policies make all M rollouts of a
candidate equal; M then only needs to be large enough for the test (M >= 4 for p < 0.05).

Rollouts see the true hidden state (they continue the actual deal): the label is what the
action is worth in this game, which the seat itself could not know -- that is the point.

    from training.branching import BranchConfig, branching_pairs
    pairs = branching_pairs("prisoners_dilemma", ["scripted:random", "scripted:tit_for_tat"], seeds=range(4),
                            learner="player_0", branch=BranchConfig(candidates=2, rollouts=4))

Each pair has the columns of :func:`training.export.cross_episode_pairs` (``prompt`` / ``chosen`` /
``rejected`` in chat format, game, role, seat, round, phase, episode id, seed...) with
``variant="branching"``, the two actions, their mean rewards, every candidate's mean and ``p_value``.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional, Sequence

import socialgym_env
from agents.base import Request
from agents.llm.parsing import action_string
from agents.llm.prompt import render_prompt
from agents.runner import PolicyPool

from .export import _pair

CANDIDATE_SOURCES = ("legal", "policy")


@dataclass
class BranchConfig:
    candidates: int = 4          # K actions compared at a decision point
    rollouts: int = 8            # M rollouts to the end per candidate
    source: str = "legal"        # "legal": legal actions; "policy": replies sampled from the seat's policy
    alpha: float = 0.05          # keep a pair only when the Mann-Whitney p-value is below this
    points_per_episode: int = 0  # branch at most this many decisions of the learner per episode (0 = all)

    def __post_init__(self):
        if self.source not in CANDIDATE_SOURCES:
            raise ValueError(f"unknown candidate source {self.source!r}; valid: {', '.join(CANDIDATE_SOURCES)}")
        if self.candidates < 2 or self.rollouts < 1:
            raise ValueError("branching needs candidates >= 2 and rollouts >= 1")


# ---------------------------------------------------------------------- rollouts
def _request(env, agent: str, policy, key: tuple) -> Request:
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
            by_policy[id(policy)].append((i, policy, _request(envs[i], agent, policy, (tags[i], agent))))
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
    decisions = policy.act_batch([_request(env, agent, policy, key) for key in keys])
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


def _mann_whitney_p(a: list, b: list) -> float:
    from scipy.stats import mannwhitneyu
    if len(set(a) | set(b)) < 2:
        return 1.0                     # every rollout ended the same: no evidence either way
    return float(mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)


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
    envs, tags, seeds = [], [], []
    for c, (action, _) in enumerate(candidates):
        for m in range(branch.rollouts):
            copy = env.clone()
            copy.state.rng.seed(f"{seed}|{tag}|rollout{m}")      # same future luck for every candidate
            copy.step(action)
            envs.append(copy)
            tags.append(f"{tag}#c{c}m{m}")
            seeds.append(seed * 1000 + m)
    rewards = play_out(envs, seat_policies, tags, seeds)
    per_candidate = [[r[agent] for r in rewards[c * branch.rollouts:(c + 1) * branch.rollouts]]
                     for c in range(len(candidates))]
    result = {"candidates": [(a, reply, rs) for (a, reply), rs in zip(candidates, per_candidate)],
              "chosen": None, "rejected": None, "p_value": 1.0}
    if len(candidates) < 2:
        return result
    means = [sum(rs) / len(rs) for rs in per_candidate]
    best = max(range(len(means)), key=lambda i: (means[i], -i))
    worst = min(range(len(means)), key=lambda i: (means[i], i))
    result.update(chosen=best, rejected=worst, p_value=_mann_whitney_p(per_candidate[best], per_candidate[worst]))
    return result


def _row(env, agent: str, prompt: str, seat_spec: dict, turn_index: int, config: dict) -> dict:
    seat = env.state.seat[agent]
    return {"prompt": [{"role": "user", "content": prompt}], "game": env.game_info.id, "role": seat.role,
            "team": seat.team, "seat": agent, "name": seat.name, "policy": seat_spec[agent],
            "round": env.state.round, "phase": env.state.phase, "step": env.state.step, "turn_index": turn_index,
            "episode_id": env.episode_id, "seed": env.seed_value, "config": json.dumps(config, sort_keys=True)}


def branching_pairs(game: str, seats: Sequence[str], seeds: Sequence[int], learner: str = "player_0",
                    branch: Optional[BranchConfig] = None, config: Optional[dict] = None,
                    pool: Optional[PolicyPool] = None) -> list[dict]:
    """Play one episode per seed with ``seats`` (a policy spec per seat); at the learner's
    decisions, branch (:func:`branch_decision`) and keep the significant pairs."""
    branch = branch or BranchConfig()
    config = dict(config or {})
    pool = pool or PolicyPool()
    pairs = []
    for seed in seeds:
        env = socialgym_env.make(game, **config)
        env.reset(seed=seed)
        if learner not in env.possible_agents:
            raise ValueError(f"learner {learner!r} is not a seat of {game}: {', '.join(env.possible_agents)}")
        seat_spec = dict(zip(env.possible_agents, seats))
        policies = {agent: pool.get(spec) for agent, spec in seat_spec.items()}
        for agent, policy in policies.items():
            policy.reset((env.episode_id, agent), seed)
        branched = 0
        env.skip_dead()
        while env.agents:
            agent = env.agent_selection
            policy = policies[agent]
            request = _request(env, agent, policy, (env.episode_id, agent))
            decision = policy.act_batch([request])[0]
            if decision.error is not None:
                raise decision.error
            wanted = agent == learner and (not branch.points_per_episode or branched < branch.points_per_episode)
            if wanted:
                branched += 1
                prompt = ((decision.meta.get("attempts") or [{}])[0].get("prompt")
                          or render_prompt(env.prompt_parts(agent), env.infos[agent]))
                row = _row(env, agent, prompt, seat_spec, len(env.turns), env.config)
                outcome = branch_decision(env, agent, policies, branch, f"{env.episode_id}@{env.state.step}", seed)
                if outcome["chosen"] is not None and outcome["p_value"] < branch.alpha:
                    good, bad = outcome["candidates"][outcome["chosen"]], outcome["candidates"][outcome["rejected"]]
                    means = {a: sum(rs) / len(rs) for a, _, rs in outcome["candidates"]}
                    pairs.append(_pair(row, [{"role": "assistant", "content": good[1]}],
                                       [{"role": "assistant", "content": bad[1]}], "branching",
                                       chosen_action=good[0], rejected_action=bad[0],
                                       chosen_reward=means[good[0]], rejected_reward=means[bad[0]],
                                       p_value=outcome["p_value"], candidate_means=json.dumps(means),
                                       rollouts=branch.rollouts))
            env.step(decision.action)
            env.skip_dead()
        for agent, policy in policies.items():
            if hasattr(policy, "release"):
                policy.release((env.episode_id, agent))
    return pairs
