"""Branching rollouts as DPO preference pairs whose labels come from the game's rules, not a judge.

:mod:`socialgym_agents.branching` measures, at a decision, K candidate actions by M paired
(common-random-number) rollouts to the end (in hidden-information games from worlds re-dealt
consistently with the seat's view) and tests the best against the worst with paired
studentised sign-flip tests, Holm-adjusted over every candidate pair (which covers picking
them). A branched decision becomes a pair when that test gives p < ``alpha``: chosen = the best candidate's reply, rejected = the worst's, both at the
same state, the prompt the learner's whole chat at that decision.

    from socialgym_training.branching import BranchConfig, branching_pairs
    pairs = branching_pairs("prisoners_dilemma", ["scripted:random", "scripted:tit_for_tat"], seeds=range(4),
                            learner="player_0", branch=BranchConfig(candidates=2, rollouts=6))

Each pair has ``prompt`` (the learner's whole chat) / ``chosen`` / ``rejected`` in chat format,
game, role, seat, round, phase, episode id, seed... with ``variant="branching"``, the two
actions, their mean rewards, every candidate's mean and ``p_value``. A learner without a model
gets the chat ``as_spec`` (default ``smollm2``) would have been given (:mod:`socialgym_agents.llm.transcript`).
:func:`logged_branching_pairs` branches at the decisions of logged episodes instead (what
``socialgym export dpo`` does): the pair's prompt is the decision's full-context row, both
replies are generated at that very state, and the pair belongs to that episode's split.
"""
from __future__ import annotations

import json
from typing import Optional, Sequence

import socialgym_env
from socialgym_agents.base import Request
from socialgym_agents.branching import BranchConfig, branch_decision, request_for
from socialgym_agents.llm.transcript import played_reply, replay_policy
from socialgym_agents.registry import is_model_spec
from socialgym_agents.runner import PolicyPool

def _pair(row: dict, chosen: list, rejected: list, variant: str, **extra) -> dict:
    columns = ("game", "role", "team", "seat", "name", "policy", "round", "phase", "step", "turn_index",
               "episode_id", "seed", "config")
    return {"prompt": row["prompt"], "chosen": chosen, "rejected": rejected, "variant": variant,
            **{c: row[c] for c in columns}, **extra}


def _row(env, agent: str, prompt: list, seat_spec: dict, turn_index: int, config: dict) -> dict:
    seat = env.state.seat[agent]
    return {"prompt": prompt, "game": env.game_info.id, "role": seat.role,
            "team": seat.team, "seat": agent, "name": seat.name, "policy": seat_spec[agent],
            "round": env.state.round, "phase": env.state.phase, "step": env.state.step, "turn_index": turn_index,
            "episode_id": env.episode_id, "seed": env.seed_value, "config": json.dumps(config, sort_keys=True)}


def _significant_pair(row: dict, outcome: dict, branch: BranchConfig) -> Optional[dict]:
    """The (chosen, rejected) pair of a branched decision, or None when the test keeps none."""
    if outcome["chosen"] is None or outcome["p_value"] >= branch.alpha:
        return None
    good, bad = outcome["candidates"][outcome["chosen"]], outcome["candidates"][outcome["rejected"]]
    means = {a: sum(rs) / len(rs) for a, _, rs in outcome["candidates"]}
    return _pair(row, [{"role": "assistant", "content": good[1]}], [{"role": "assistant", "content": bad[1]}],
                 "branching", chosen_action=good[0], rejected_action=bad[0], chosen_reward=means[good[0]],
                 rejected_reward=means[bad[0]], p_value=outcome["p_value"], candidate_means=json.dumps(means),
                 rollouts=branch.rollouts, chosen_episode_id=row["episode_id"],
                 rejected_episode_id=row["episode_id"])


def _played_reply(decision) -> str:
    attempts = [a for a in decision.meta.get("attempts", []) if "reply" in a] if decision.meta else []
    return attempts[-1]["reply"] if attempts else played_reply({"action": decision.action})


def branching_pairs(game: str, seats: Sequence[str], seeds: Sequence[int], learner: str = "player_0",
                    branch: Optional[BranchConfig] = None, config: Optional[dict] = None,
                    pool: Optional[PolicyPool] = None, as_spec: str = "smollm2") -> list[dict]:
    """Play one episode per seed with ``seats`` (a policy spec per seat); at the learner's
    decisions, branch (:func:`branch_decision`) and keep the significant pairs. A pair's prompt
    is the learner's whole chat at that decision (its LLM policy's layout; ``as_spec``'s for a
    learner without a model, see :mod:`socialgym_agents.llm.transcript`)."""
    branch = branch or BranchConfig()
    config = dict(config or {})
    pool = pool or PolicyPool()
    pairs = []
    chats: dict = {}
    for seed in seeds:
        env = socialgym_env.make(game, **config)
        env.reset(seed=seed)
        if learner not in env.possible_agents:
            raise ValueError(f"learner {learner!r} is not a seat of {game}: {', '.join(env.possible_agents)}")
        seat_spec = dict(zip(env.possible_agents, seats))
        policies = {agent: pool.get(spec) for agent, spec in seat_spec.items()}
        for agent, policy in policies.items():
            policy.reset((env.episode_id, agent), seed)
        spec = seat_spec[learner] if is_model_spec(seat_spec[learner]) else as_spec
        chat = chats.setdefault(spec, replay_policy(spec))     # rebuilds the learner's chat turn by turn
        chat.reset((env.episode_id, learner), seed)
        branched = 0
        env.skip_dead()
        while env.agents:
            agent = env.agent_selection
            policy = policies[agent]
            request = request_for(env, agent, policy, (env.episode_id, agent))
            decision = policy.act_batch([request])[0]
            if decision.error is not None:
                raise decision.error
            if agent == learner:
                messages = chat.replay_turn(Request((env.episode_id, agent), None, env.infos[agent],
                                                   env.prompt_parts(agent)), _played_reply(decision))
                if not branch.points_per_episode or branched < branch.points_per_episode:
                    branched += 1
                    row = _row(env, agent, messages, seat_spec, len(env.turns), env.config)
                    outcome = branch_decision(env, agent, policies, branch, f"{env.episode_id}@{env.state.step}", seed)
                    pair = _significant_pair(row, outcome, branch)
                    if pair is not None:
                        pairs.append(pair)
            env.step(decision.action)
            env.skip_dead()
        chat.release((env.episode_id, learner))
        for agent, policy in policies.items():
            if hasattr(policy, "release"):
                policy.release((env.episode_id, agent))
    return pairs


def logged_branching_pairs(rows: Sequence[dict], records: Sequence[dict], branch: Optional[BranchConfig] = None,
                           pool: Optional[PolicyPool] = None, rollout_policy: str = "",
                           report: Optional[dict] = None) -> list[dict]:
    """Branch at each decision row (:func:`socialgym_training.export.decision_rows`) of logged episodes:
    the env is restored to that decision (a snapshot rebuilt from the seed and the earlier raw
    actions), the candidates are rolled out with the episode's own policies (or
    ``rollout_policy`` in every seat), and the significant pairs are kept. Both replies of a pair
    are generated at the row's state, and the pair carries the row's ``episode_id``, so an
    episode split keeps state, chosen and rejected on one side. Decisions of a hidden-information
    game without enough worlds consistent with the seat's view are counted in
    ``report["undetermined"]`` (:func:`socialgym_agents.branching.branch_decision`)."""
    from socialgym_env.logs import restore_env
    report = {} if report is None else report
    report.setdefault("undetermined", 0)
    branch = branch or BranchConfig()
    pool = pool or PolicyPool()
    by_id = {r["episode_id"]: r for r in records}
    pairs = []
    for row in rows:
        record = by_id[row["episode_id"]]
        env = restore_env(record["game"], record["config"], record["seed"], record["episode_id"],
                          [turn["raw"] for turn in record["turns"][:row["turn_index"]]])
        specs = {seat["agent"]: rollout_policy or seat["policy"] for seat in record["roster"]}
        policies = {agent: pool.get(spec) for agent, spec in specs.items()}
        outcome = branch_decision(env, row["seat"], policies, branch, f"{row['episode_id']}@{row['turn_index']}",
                                  record["seed"])
        report["undetermined"] += bool(outcome.get("undetermined"))
        pair = _significant_pair({**row, "prompt": row["prompt"]}, outcome, branch)
        if pair is not None:
            pairs.append(pair)
    return pairs


if __name__ == "__main__":
    from socialgym_env.cli_errors import library_only
    library_only("socialgym_training.branching", "for branching DPO pairs run: socialgym export dpo LOGS... --out DIR")
