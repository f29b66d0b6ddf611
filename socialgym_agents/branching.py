"""Branching rollouts: what an action is worth at a decision, measured by the game's own rules.

At a decision point of a seat, the env is snapshotted (``env.clone()``). Each of K candidate
actions (all legal actions, or K drawn at random from them when there are more; or K replies
sampled from the seat's own policy) is played from a copy of the snapshot and the episode is
rolled out to the end M times with the same policies. Rollout m of every candidate uses the same
random numbers (the env's RNG reseeded with m; every policy's seat has the same key and seed in
rollout m of each candidate, so scripted and sampled players draw alike): common random numbers,
so candidates differ by their action, not their luck, and the M rewards of two candidates are
paired. The best and the worst candidate are those with the highest and lowest mean final
value of the seat. Picking the best and the worst of K makes their gap large even when every
action is worth the same, so :func:`pair_test` tests every candidate pair's paired differences
(a studentised sign-flip test) and adjusts over the K (K - 1) / 2 pairs by Holm: the pair is
kept when the best-worst pair's adjusted p is below alpha. It assumes only that a pair's
differences are symmetric under the null, not that the K values of a rollout are exchangeable
(what :func:`max_gap_test`, the rule it replaced, assumed: two actions of equal value and
unequal risk made it keep too many pairs). ``socialgym_benchmarks/studies/branching_null.py`` measures
the false-pair rate where every action is worth the same (Rock-Paper-Scissors against a uniform
random opponent; two safe actions and a fair gamble) and the power where one is better. The
smallest p of M rollouts is 2^(1-M) per pair before Holm, so M >= 6 for K = 2 and M >= 8 for
K <= 4 at alpha 0.05.

**Determinisation.** In a game with hidden information (``GameInfo.information`` other than
``complete``) a rollout that continued the actual deal would value an action by what the seat
cannot see (Kuhn: "call" is right against a J, wrong against a K), so the label would not be a
property of what the seat knows. With ``determinise`` on (``auto``: for those games), each
rollout m starts instead from a world re-dealt consistently with the seat's view: the episode is
replayed from another seed with the same actions, and the world is kept only if the seat saw the
same observation text at every one of its decisions and now (rejection sampling: a uniform draw
among the deals, roles, words and dice that agree with what the seat has seen; the other seats'
actions are replayed as they were, not weighted by how likely each deal made them). The worlds,
the candidate draw, the rollout seeds and the test's shuffles are all keyed by the seat's view,
not by the episode, so two decisions with the same information set get the same label (or the
same "no pair"). A decision for which fewer than M consistent worlds turn up within
``world_tries`` replays per rollout is not branched (``undetermined`` in the result; the callers
count it).

**Value.** ``value="auto"`` compares candidates by the seat's final score in the games ranked by
score (``GameInfo.rank_by == "score"``: the poker games' chips, Dead Last's share), where the
outcome reward is only a sign that makes a fold (−1 chip in Kuhn) and a lost call (−2) equal,
and by the outcome reward elsewhere; ``reward`` / ``score`` force one.
:mod:`socialgym_training.branching` turns branched decisions into DPO preference pairs.
"""
from __future__ import annotations

import hashlib
import random
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional, Sequence

from .base import Request
from .llm.parsing import action_string

CANDIDATE_SOURCES = ("legal", "policy")
DETERMINISE = ("auto", "on", "off")
VALUES = ("auto", "reward", "score")


@dataclass
class BranchConfig:
    candidates: int = 4          # K actions compared at a decision point
    rollouts: int = 8            # M rollouts to the end per candidate (paired across candidates)
    source: str = "legal"        # "legal": legal actions; "policy": replies sampled from the seat's policy
    alpha: float = 0.05          # keep a pair only when the max-min permutation p-value is below this
    permutations: int = 2000     # label shuffles of the permutation test
    points_per_episode: int = 0  # branch at most this many decisions of the learner per episode (0 = all)
    determinise: str = "auto"    # re-deal what the seat cannot see per rollout: auto (hidden-information games), on, off
    world_tries: int = 50        # replays tried per rollout for a world consistent with the seat's view
    value: str = "auto"          # what a rollout is worth: auto (score where the game ranks by score), reward, score

    def __post_init__(self):
        if self.source not in CANDIDATE_SOURCES:
            raise ValueError(f"unknown candidate source {self.source!r}; valid: {', '.join(CANDIDATE_SOURCES)}")
        if self.determinise not in DETERMINISE:
            raise ValueError(f"unknown determinise {self.determinise!r}; valid: {', '.join(DETERMINISE)}")
        if self.value not in VALUES:
            raise ValueError(f"unknown value {self.value!r}; valid: {', '.join(VALUES)}")
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


EXACT_FLIPS_UP_TO = 12          # rollouts up to which every sign pattern is enumerated (2^12 = 4096)


def studentised_sign_flip_p(differences, permutations: int = 2000, seed: int = 0) -> float:
    """Two-sided p of the paired sign-flip test of ``differences`` (one per rollout: candidate i's
    reward minus candidate j's in the same rollout) with the studentised mean (t) as statistic.
    Under H0 each difference is as likely positive as negative; studentising keeps the test close
    to its level when the two candidates' rewards differ in spread. Every sign pattern is
    enumerated up to :data:`EXACT_FLIPS_UP_TO` rollouts (exact), else ``permutations`` random ones.
    A constant non-zero difference has t = ±inf, matched only by the all-same-sign patterns."""
    import numpy as np
    d = np.asarray(differences, dtype=float)
    m = len(d)
    if m < 2 or not np.any(d):
        return 1.0
    if m <= EXACT_FLIPS_UP_TO:
        signs = 1 - 2 * ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1)
    else:
        signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(permutations, m))
    flipped = signs * d

    def t(values):
        mean = values.mean(axis=-1)
        sd = values.std(axis=-1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sd > 0, mean / (sd / np.sqrt(m)), np.where(mean != 0, np.inf * np.sign(mean), 0.0))

    observed = abs(float(t(d)))
    extreme = int(np.sum(np.abs(t(flipped)) >= observed - 1e-9))
    return extreme / len(signs) if m <= EXACT_FLIPS_UP_TO else (1 + extreme) / (1 + permutations)


def holm(p_values: Sequence[float]) -> list:
    """Holm's step-down adjusted p-values (family-wise error at most alpha for any adjusted p < alpha)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def pair_test(rewards, permutations: int = 2000, seed: int = 0) -> tuple[int, int, float]:
    """(best, worst, p): the candidates with the highest and lowest mean of ``rewards`` (K x M,
    paired by rollout) and the Holm-adjusted p of their studentised sign-flip test among all
    K (K - 1) / 2 candidate pairs. Unlike :func:`max_gap_test` it does not assume the K rewards of
    a rollout exchangeable, only each pair's differences symmetric under H0, so two actions of
    equal value and unequal risk (a sure 0 and a fair +-1 gamble) do not make a pair more often
    than alpha. The smallest p of M rollouts is 2^(1-M) per pair, times the K (K - 1) / 2 pairs:
    M = 8 allows K <= 4 at alpha 0.05."""
    import numpy as np
    table = np.asarray(rewards, dtype=float)
    means = table.mean(axis=1)
    best = int(max(range(len(means)), key=lambda i: (means[i], -i)))
    worst = int(min(range(len(means)), key=lambda i: (means[i], i)))
    if means[best] - means[worst] <= 0:
        return best, worst, 1.0
    pairs = [(i, j) for i in range(len(table)) for j in range(i + 1, len(table))]
    raw = [studentised_sign_flip_p(table[i] - table[j], permutations, seed) for i, j in pairs]
    adjusted = dict(zip(pairs, holm(raw)))
    return best, worst, adjusted[(min(best, worst), max(best, worst))]


# ---------------------------------------------------------------------- rollouts
def request_for(env, agent: str, policy, key: tuple) -> Request:
    parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
    return Request(key, env.observe(agent), env.infos[agent], parts)


def play_out(envs: Sequence, seat_policies: dict, tags: Sequence[str], seeds: Sequence[int],
             value: str = "reward") -> list[dict]:
    """Play every env to the end with ``seat_policies`` (agent -> policy); all envs advance
    together, one ``act_batch`` per policy per tick (LLM policies decode them as one batch).
    Seat keys are ``(tag, agent)``, seeded with ``seeds[i]``. Returns each env's final rewards
    (``value="score"``: final scores)."""
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
    return [dict(env.state.result.scores if value == "score" else env.state.result.rewards) for env in envs]


def values_by(env, branch: BranchConfig) -> str:
    """``reward`` or ``score``: what the rollouts of ``env``'s game are compared by."""
    if branch.value != "auto":
        return branch.value
    return "score" if env.game_info.rank_by == "score" else "reward"


def determinised(env, branch: BranchConfig) -> bool:
    if branch.determinise != "auto":
        return branch.determinise == "on"
    return env.game_info.information != "complete"


def _seat_views(env, seed: int, agent: str):
    """(``env``'s episode replayed from ``seed`` with the same raw actions, the observation texts
    ``agent`` had at each of its decisions and has now), or None when the replay departs from
    the episode (an action that no longer replays, or is read as another action)."""
    from socialgym_env.errors import InvalidActionError
    from socialgym_env.registry import make
    world = make(env.game_info.id, **(env.config or {}))
    names = [env.state.seat[seat].name for seat in env.possible_agents]     # public: kept
    world.reset(seed=seed, options={"episode_id": env.episode_id, "names": names})
    views = []
    for turn in env.turns:
        world.skip_dead()
        if not world.agents or world.agent_selection != turn["agent"]:
            return None
        if turn["agent"] == agent:
            views.append(world.observation_text(agent))
        try:
            world.step(turn["raw"])
        except InvalidActionError:
            return None
        if world.turns[-1]["action"] != turn["action"]:
            return None
    world.skip_dead()
    if not world.agents or world.agent_selection != agent:
        return None
    views.append(world.observation_text(agent))
    return world, views


def view_key(env, agent: str, seed: int) -> Optional[str]:
    """A key of the seat's information set: its observation text at each of its decisions and
    now (the seats' names read as their ids), with the branching seed; None when the episode does
    not replay from its own seed (an env not made by ``make`` with its config)."""
    replayed = _seat_views(env, env.seed_value, agent)
    if replayed is None:
        return None
    views = replayed[1]
    # the seats' names are drawn per episode and carry no information: the key reads seat ids
    names = {env.state.seat[a].name: a for a in env.possible_agents}
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    text = "\x00".join(pattern.sub(lambda m: names[m.group(1)], view) for view in views)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"{seed}|{agent}|view-{digest}"


def consistent_worlds(env, agent: str, count: int, key: str, tries: int) -> list:
    """Up to ``count`` envs at this decision re-dealt from other seeds, each agreeing with
    everything ``agent`` has seen (see the module doc); drawn in a fixed order keyed by ``key``."""
    _, seen = _seat_views(env, env.seed_value, agent)
    worlds = []
    for attempt in range(count * tries):
        if len(worlds) == count:
            break
        replayed = _seat_views(env, zlib.crc32(f"{key}|world{attempt}".encode()), agent)
        if replayed is not None and replayed[1] == seen:
            worlds.append(replayed[0])
    return worlds


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
    worlds = None
    if determinised(env, branch):
        # everything below is keyed by the seat's view, not the episode: a label of the information set
        tag = view_key(env, agent, seed)
        worlds = consistent_worlds(env, agent, branch.rollouts, tag, branch.world_tries) if tag else []
        if len(worlds) < branch.rollouts:
            return {"candidates": [], "chosen": None, "rejected": None, "p_value": 1.0, "undetermined": True}
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
            copy = (worlds[m] if worlds else env).clone()
            copy.state.rng.seed(f"{seed}|{tag}|rollout{m}")
            copy.step(action)
            envs.append(copy)
        per_candidate.append([r[agent] for r in play_out(envs, seat_policies, tags, seeds, values_by(env, branch))])
    result = {"candidates": [(a, reply, rs) for (a, reply), rs in zip(candidates, per_candidate)],
              "chosen": None, "rejected": None, "p_value": 1.0}
    if len(candidates) < 2:
        return result
    best, worst, p_value = pair_test(per_candidate, branch.permutations, seed=zlib.crc32(f"{seed}|{tag}".encode()))
    result.update(chosen=best, rejected=worst, p_value=p_value)
    return result
