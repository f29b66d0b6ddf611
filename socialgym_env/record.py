"""The episode record: the JSON object one finished (or cut) episode is logged as.

A record holds what a replay needs -- the game, its config, the seed, the episode id and every
turn's raw action -- plus what readers want at hand (roster, board, transcript, result,
per-seat invalid counts, the game's metrics). Observation texts are kept only with the engine
option ``log_observations=true``; ``logs.replay_observations`` renders them from the seed and
the actions otherwise. Schema: ``socialgym.episode/1``.
"""
from __future__ import annotations

import copy
from typing import Optional

from .actions import encodable_data
from .game import outcome_label
from .machine import TurnMachine
from .state import PUBLIC
from .views import render_message

LOG_SCHEMA = "socialgym.episode/1"


def public_transcript(state) -> list[str]:
    """The board as an outside watcher sees it: the public lines, rendered."""
    return [render_message(m, state) for m in state.messages if m.visibility == PUBLIC]


def episode_record(machine: TurnMachine, config: dict, episode_id: str, policies: Optional[dict] = None,
                   playbooks: Optional[dict] = None, extra: Optional[dict] = None,
                   playbook_ids: Optional[dict] = None) -> dict:
    """The JSONL episode record of the machine's episode so far."""
    state = machine.state
    # What callers attach is cleaned as the engine's own text is (no lone surrogate).
    policies = encodable_data(policies or {})
    playbooks = encodable_data(playbooks or {})
    playbook_ids = encodable_data(playbook_ids or {})
    result = state.result
    roster = [{"agent": s.agent, "name": s.name, "role": s.role, "team": s.team,
               "policy": policies.get(s.agent), "playbook": playbooks.get(s.agent),
               "playbook_id": playbook_ids.get(s.agent), "alive_at_end": s.alive} for s in state.seats]
    record = {
        "schema": LOG_SCHEMA,
        "episode_id": episode_id,
        "game": machine.game_info.id,
        "game_version": machine.game_info.version,
        "seed": machine.seed_value,
        "config": {k: v for k, v in sorted(config.items())},
        "roster": roster,
        "turns": copy.deepcopy(machine.turns),
        "messages": [m.to_dict() for m in state.messages],
        "transcript": public_transcript(state),
        "steps": state.step,
        "finished": result is not None,
        "scores": dict(result.scores) if result else dict(state.scores),
        "rewards": dict(result.rewards) if result else None,
        "outcomes": {a: outcome_label(r) for a, r in result.rewards.items()} if result else None,
        "winners": list(result.winners) if result else [],
        "reason": result.reason if result else None,
        "truncated": bool(result.truncated) if result else False,
        "invalid_actions": dict(machine.invalid_counts),
        "metrics": machine.game.metrics(state),
    }
    if extra:
        record.update(encodable_data(extra))
    return record
