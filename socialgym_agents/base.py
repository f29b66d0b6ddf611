"""The policy protocol: observation (text + info) in, action string out.

A policy sees what a seat sees: ``observation["text"]`` (prompt-ready) and ``info`` (the
structured view: role, team, phase, legal actions, ``legal_action_list`` when finite,
``game_state``, new messages). ``act_batch`` decides many independent requests at once; the
default loops over ``act`` and LLM policies override it to batch model calls.
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence, runtime_checkable


@dataclass
class Decision:
    """An action string plus what the policy wants logged with the turn (prompt, raw model
    output, parse attempts...)."""

    action: str
    meta: dict = field(default_factory=dict)
    # Set when the policy could not decide at all (a model server that stays down after its
    # retries): the runner records the episode as failed with this reason instead of stepping.
    error: Optional[BaseException] = None


@dataclass(frozen=True)
class Request:
    """One pending decision: which env/seat, and what the seat sees."""

    key: tuple            # (episode_id, agent) — stable identity for per-seat caches
    observation: dict
    info: dict
    # The Appendix-E prompt slots (env.prompt_parts(agent)): filled by the runners for policies
    # that set ``needs_prompt_parts = True`` (LLM policies), else None.
    prompt_parts: Optional[dict] = None


def seat_seed(game: str, seed: int, seat: str) -> int:
    """The seed of one seat's randomness in an episode (scripted draws, LLM sampling seeds): a
    function of the game, the episode seed and the seat only. The runners pass it to
    ``Policy.reset``, so two episodes that differ only in a seat's playbook (SPaRTan's baseline,
    playbook and placebo arms) or in the episode id give every seat the same random stream:
    common random numbers, and a playbook-blind policy replays identically."""
    return zlib.crc32(f"{game}|{seed}|{seat}".encode())


@runtime_checkable
class Policy(Protocol):
    policy_id: str

    def act(self, observation: dict, info: dict) -> Decision: ...

    def act_batch(self, requests: Sequence[Request]) -> list[Decision]: ...

    def reset(self, key: tuple, seed: Optional[int] = None) -> None: ...


class BasePolicy:
    """Convenience base: per-seat RNGs seeded from the seed ``reset`` gets (the runners give
    :func:`seat_seed`) and the seat name, never the episode id; batch = loop."""

    policy_id = "base"
    # True for policies that decide in microseconds and gain nothing from batching (scripted):
    # the batched runner plays their turns as soon as they are due instead of one per tick, so
    # a scripted seat never waits for a model's forward pass.
    instant = False

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._rngs: dict = {}

    def reset(self, key: tuple, seed: Optional[int] = None) -> None:
        # With a seed, the stream is (policy, seed, seat): the key's episode id (which names the
        # arm) stays out. Without one (a key never reset), the whole key keeps seats apart.
        stream = (self.seed, key) if seed is None else (seed, key[-1])
        self._rngs[key] = random.Random(f"{self.policy_id}|{stream[0]}|{stream[1]}")

    def release(self, key: tuple) -> None:
        """Forget a finished seat (runners call it at episode end)."""
        self._rngs.pop(key, None)

    def rng(self, key: tuple) -> random.Random:
        if key not in self._rngs:
            self.reset(key)
        return self._rngs[key]

    def act(self, observation: dict, info: dict, key: tuple = ("", "")) -> Decision:
        raise NotImplementedError

    def act_batch(self, requests: Sequence[Request]) -> list[Decision]:
        return [self.act(r.observation, r.info, key=r.key) for r in requests]
