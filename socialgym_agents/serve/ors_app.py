"""Every Social Gym game over the Open Reward Standard (ORS: ``ors-sdk``, the ``ors`` extra), the
same sessions as the OpenEnv server (:class:`~socialgym_agents.serve.game_session.GameSession`).

```python
from ors.client import ORS                      # the SDK's own client

with ORS(base_url="http://127.0.0.1:8080") as client:
    env = client.environment("socialgym")
    with env.session(split="train", index=0) as session:      # or task=Task("socialgym", {...})
        print(session.get_prompt()[0].text)
        out = session.call_tool("move", {"action": "..."})     # out.reward, out.finished
```

- **Environment** ``socialgym``; **splits** ``train`` (seeds from 0) and ``test`` (seeds from
  1,000,000), each :data:`TASKS_PER_GAME` tasks per game: task ``i`` is game
  ``games[i // TASKS_PER_GAME]`` at seed ``split base + i % TASKS_PER_GAME``. A task is a JSON
  object of the OpenEnv server's reset options (``game``, ``seed``, ``seat``, ``seats``,
  ``opponents``, ``config``); a client may send its own (``task_spec``), with the same rule:
  scripted opponents only, model specs only from the operator (``--opponents``).
- **Prompt**: the seat's observation (rules, role, what it has seen, legal moves).
- **Tool** ``move`` (``{"action": "<your move as text or JSON>"}``): the next observation,
  ``finished`` when the episode is over, and then ``reward``, the seat's rule-decided outcome
  (+1 win / 0 draw / -1 loss); before the end the reward is 0. ``metadata`` holds the legal
  actions, the seat, the seed and the episode id. A move after the end or an over-long one is
  answered with one error line, the episode unchanged.

The server (``socialgym serve-ors``) binds 127.0.0.1 unless ``--allow-remote``; ORS's own
reaper closes a session its client stopped pinging.
"""
from __future__ import annotations

import asyncio
from typing import Optional

from ors import Environment, Server, Split, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

import socialgym_env

from ..jobs import PolicyPool
from .game_session import MAX_ACTION_CHARS, BadRequest, GameDefaults, GameSession

ENV_NAME = "socialgym"
TASKS_PER_GAME = 100
SPLIT_FIRST_SEED = {"train": 0, "test": 1_000_000}


class Move(BaseModel):
    action: str = Field(..., max_length=MAX_ACTION_CHARS,
                        description="your move, as text or JSON: one of the observation's legal actions")


class SocialGym(Environment):
    """One seat of a Social Gym game per session, the other seats played by policies; the reward
    is the seat's rule-decided outcome. :func:`create_ors_app` sets the server's defaults."""

    defaults: GameDefaults = GameDefaults()
    pool: Optional[PolicyPool] = None           # one pool for every session: a model opponent loads once

    def __init__(self, task_spec: dict = {}, secrets: dict = {}) -> None:   # ORS's signature
        super().__init__(task_spec, secrets)
        self.session = GameSession(self.defaults, self.pool)
        self.last: Optional[dict] = None

    async def setup(self) -> None:
        self.last = await asyncio.to_thread(self.session.reset, **dict(self.task_spec))

    def teardown(self) -> None:
        self.session.close()

    def get_prompt(self):
        return [TextBlock(text=self.last["observation"]["text"])]

    @classmethod
    def list_splits(cls):
        return [Split(name="train", type="train"), Split(name="test", type="test")]

    @classmethod
    def list_tasks(cls, split: str):
        return [task_at(split, i) for i in range(len(socialgym_env.game_ids()) * TASKS_PER_GAME)]

    @classmethod
    async def num_tasks(cls, split: str) -> int:
        check_split(split)
        return len(socialgym_env.game_ids()) * TASKS_PER_GAME

    @classmethod
    async def get_task(cls, split: str, index: int) -> dict:
        return task_at(split, index)

    @tool
    async def move(self, params: Move) -> ToolOutput:
        """Play your move (text or JSON, one of the legal actions); answers what you see next and,
        once the game is over, your rule-decided reward."""
        try:
            self.last = await asyncio.to_thread(self.session.step, {"message": params.action})
        except BadRequest as err:
            return ToolOutput(blocks=[TextBlock(text=f"error: {err}")], metadata={"error": str(err)},
                              finished=bool(self.last and self.last["done"]))
        observation = self.last["observation"]
        return ToolOutput(blocks=[TextBlock(text=observation["text"])], reward=self.last["reward"],
                          finished=self.last["done"],
                          metadata={"legal_actions": observation["legal_actions"], "seat": observation["seat"],
                                    "seed": observation["seed"], "episode_id": observation["episode_id"]})


def check_split(split: str) -> int:
    if split not in SPLIT_FIRST_SEED:
        raise ValueError(f"unknown split {split!r}; the splits are {', '.join(SPLIT_FIRST_SEED)}")
    return SPLIT_FIRST_SEED[split]


def task_at(split: str, index: int) -> dict:
    """Task ``index`` of ``split`` (see the module docstring); IndexError past the end, as ORS
    expects."""
    first_seed, games = check_split(split), socialgym_env.game_ids()
    if not 0 <= index < len(games) * TASKS_PER_GAME:
        raise IndexError(f"task index {index} out of range")
    return {"game": games[index // TASKS_PER_GAME], "seed": first_seed + index % TASKS_PER_GAME}


def create_ors_app(defaults: Optional[GameDefaults] = None):
    """The ORS server's ASGI app, its sessions played with ``defaults`` (game, seat, opponents)."""
    defaults = defaults or GameDefaults()
    GameSession(defaults).check_defaults()               # a bad operator default fails here, not per session
    environment = type("SocialGym", (SocialGym,), {"defaults": defaults,
                                                   "pool": PolicyPool(seed=defaults.policy_seed)})
    return Server([environment]).app
