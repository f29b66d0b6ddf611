"""Social Gym games as a verifiers (0.4, ``verifiers.v1``) environment package.

```python
from socialgym_verifiers import load_environment

env = load_environment(game="liars_dice", seat=0, opponents="scripted:heuristic", num_tasks=64)
```

or, from verifiers' command line, ``vf-eval socialgym-verifiers --env.taskset.game liars_dice``
(the taskset id ``socialgym-verifiers`` imports this package, as any installed environment).

Laid out as verifiers' own multi-turn game environments (its TextArena taskset): a
:class:`SocialGymTaskset` yields one task per seed; :class:`SocialGymEnv` runs one episode per
task, the game engine host-side playing the user: the model's reply is the seat's move, the
other seats move (their policies chosen by ``opponents``: ``socialgym_agents.registry`` specs, default
the per-game heuristic), and what the seat sees next comes back as the next user turn, until
the game ends. The first user turn is the seat's whole observation (rules, role, status, legal
moves); each later one is what is new for the seat since its move (the messages it saw, the
next instructions and legal moves), so the conversation holds the seat's full context.

Rubric (recorded on the trace as verifiers rewards):

- ``game_reward`` (weight 1): the rule-decided outcome of the seat, +1 win / 0 draw / -1 loss
  (the game's own ``rewards``; a game over before the seat's first move still counts);
- ``format_reward`` (weight ``format_weight``, default 0 = reported, not scored): the share of
  the seat's replies the game parsed as a legal move (a reply it could not parse is an invalid
  action, for which the game plays its documented fallback).

The model is reached through verifiers' interception like any agent; the bundled
:class:`SocialGymHarness` is a tool-less chat loop run in-process (no sandbox, no program to
install), so an eval needs only an OpenAI-compatible endpoint.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Optional, Union

import verifiers.v1 as vf
from verifiers.v1.clients import ModelContext
from verifiers.v1.runtimes import ProgramResult

from socialgym_agents.single_agent import turn_text

TASKSET_ID = "socialgym-verifiers"
SYSTEM_PROMPT = ("You are playing a social game against other players. Each message tells you what you "
                 "see and which moves are legal. Answer with your move only: one of the legal moves "
                 "as written, or the JSON action the instructions ask for.")


class SocialGymConfig(vf.TasksetConfig):
    game: str = "prisoners_dilemma"
    """Game id (``socialgym list``)."""
    seat: Union[int, str] = 0
    """The model's seat: index, seat id (``player_1``) or role (``werewolf``)."""
    opponents: list[str] = ["scripted:heuristic"]
    """Policy specs of the other seats: one for all, or one per other seat."""
    num_tasks: int = 100
    """Tasks (episodes) in the taskset, seeds ``first_seed`` .. ``first_seed + num_tasks - 1``."""
    first_seed: int = 0
    game_config: dict = {}
    """Game config keys (``{"rounds": 3}``)."""
    format_weight: float = 0.0
    """Weight of ``format_reward`` in the total (0: recorded as a metric-like reward only)."""


class SocialGymData(vf.TaskData):
    info: dict
    """What the env rebuilds the episode from: game, seat, opponents, seed, config."""


class SocialGymTask(vf.Task[SocialGymData, vf.State, vf.TaskConfig]):
    pass


def make_game(info: dict):
    """The seat's single-agent env for a task's ``info`` (one per episode: envs hold state)."""
    from socialgym_agents.single_agent import SingleAgentEnv

    return SingleAgentEnv(info["game"], info["seat"], info["opponents"], **info["config"])


class SocialGymTaskset(vf.Taskset[SocialGymTask, SocialGymConfig]):
    def load(self) -> Iterator[SocialGymTask]:
        c = self.config
        for seed in range(c.first_seed, c.first_seed + c.num_tasks):
            info = {"game": c.game, "seat": c.seat, "opponents": list(c.opponents), "seed": seed,
                    "config": dict(c.game_config), "format_weight": c.format_weight}
            env = make_game(info)
            observation, _ = env.reset(seed=seed)     # the prompt is the seat's first view
            env.close()
            yield SocialGymTask(SocialGymData(name=f"{c.game}#{seed}", prompt=observation["text"],
                                              system_prompt=SYSTEM_PROMPT, info=info), self.config.task)


class SocialGymEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(runtime={"type": "subprocess"})


class SocialGymEnv(vf.Env[SocialGymEnvConfig]):
    async def run(self, task, agents):
        info = task.data.info
        game = make_game(info)
        _, seat_info = game.reset(seed=info["seed"])
        moves = 0
        # The seat's first view is the task prompt, so the model moves first (a bare turn());
        # the engine steps host-side and answers with what the seat sees next.
        async with agents.player.interaction(task) as interaction:
            if not game.done:
                segment = await interaction.turn()
                while not segment.terminated:
                    _, _, _, _, seat_info = game.step(segment.last_reply)
                    moves += 1
                    if game.done:
                        break
                    segment = await interaction.turn(turn_text(seat_info))
        trace = interaction.trace
        trace.record_reward("game_reward", game.final_reward() if game.done else 0.0, 1.0)
        invalid = seat_info.get("invalid_actions", 0)
        trace.record_reward("format_reward", 1.0 - invalid / moves if moves else 1.0, info["format_weight"])
        trace.info["game"] = {"episode_id": game.episode_id, "finished": game.done, "moves": moves,
                              "invalid_actions": invalid, "outcome": seat_info.get("outcome")}
        game.close()


class SocialGymHarnessConfig(vf.HarnessConfig):
    pass


class SocialGymHarness(vf.Harness[SocialGymHarnessConfig]):
    """A tool-less chat loop in-process: one model call per segment, through the interception
    endpoint (so verifiers records every token on the trace), replaying the conversation."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: ModelContext, trace, runtime, endpoint: str, secret: str, mcp_urls, data,
                     tool_interception_url: Optional[str] = None) -> ProgramResult:
        from openai import AsyncOpenAI
        from verifiers.v1.dialects.chat import message_to_wire

        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages.extend(message_to_wire(m) for m in prompt)
        async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        return ProgramResult(exit_code=0, stdout="", stderr="")


def load_environment(game: str = "prisoners_dilemma", seat: Union[int, str] = 0,
                     opponents: Union[str, list] = "scripted:heuristic", num_tasks: int = 100,
                     first_seed: int = 0, format_weight: float = 0.0, **game_config) -> SocialGymEnv:
    """The environment for ``game`` played at ``seat`` against ``opponents`` (one spec for every
    other seat, or a list); ``num_tasks`` episodes with seeds from ``first_seed``; any other
    keyword is a game config key (``rounds=3``)."""
    specs = [s.strip() for s in opponents.split(",")] if isinstance(opponents, str) else list(opponents)
    taskset = SocialGymConfig(id=TASKSET_ID, game=game, seat=seat, opponents=specs, num_tasks=num_tasks,
                              first_seed=first_seed, game_config=game_config, format_weight=format_weight)
    make_game({"game": game, "seat": seat, "opponents": specs, "config": game_config}).close()   # fail early
    return SocialGymEnv(SocialGymEnvConfig(taskset=taskset))


__all__ = ["SocialGymConfig", "SocialGymData", "SocialGymTask", "SocialGymTaskset", "SocialGymEnvConfig",
           "SocialGymEnv", "SocialGymHarnessConfig", "SocialGymHarness", "load_environment"]
