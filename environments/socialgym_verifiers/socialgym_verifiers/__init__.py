"""Social Gym games as a verifiers (0.4, ``verifiers.v1``) environment package.

```python
from socialgym_verifiers import load_environment

env = load_environment(game="liars_dice", seat=0, opponents="scripted:heuristic", num_tasks=64)
```

or, from verifiers' command line, ``vf-eval socialgym-verifiers --env.taskset.game liars_dice``
(every seat an agent: add ``--env.taskset.all-seats``)
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

**Every seat an agent** (``all_seats=True``, ``--env.taskset.all-seats``; verifiers' multi-agent
format): one rollout holds one agent per seat, ``seat_0`` .. ``seat_9`` (the largest game has 10),
each with its own trace named after it. The engine asks the seats in turn order; a seat's first
turn is its whole observation, each later one what is new for it, so each conversation holds
only what that seat could see; each seat's trace gets its own ``game_reward`` (the rule-decided
outcome of that seat) and ``format_reward``. By default every seat plays the run's model (and is
trained); a seat can be pinned to another model or endpoint with verifiers' own agent options
(``--env.seat-1.model NAME --env.seat-1.client.base-url URL``) and kept out of training with
``--env.frozen-seats 1`` (its traces carry ``trainable: false``, as prime-rl reads them). Its
requests go through verifiers' interception like the learner's, so they are on its trace.

An ``openai:`` opponent in the one-seat mode would be called by the env itself, off the trace:
it is refused with one message pointing at the all-seat mode (scripted and local-model
opponents stay part of the env).

The model is reached through verifiers' interception like any agent; the bundled
:class:`SocialGymHarness` is a tool-less chat loop run in-process (no sandbox, no program to
install), so an eval needs only an OpenAI-compatible endpoint.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Optional, Union

import verifiers.v1 as vf
from pydantic import field_validator
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
    all_seats: bool = False
    """Every seat an agent of the rollout (agents ``seat_0`` .. ``seat_9``); ``seat`` and
    ``opponents`` are then unused."""


class SocialGymData(vf.TaskData):
    info: dict
    """What the env rebuilds the episode from: game, seat, opponents, seed, config."""


class SocialGymTask(vf.Task[SocialGymData, vf.State, vf.TaskConfig]):
    pass


# Seats an all-seat rollout can hold: the largest game's (triadic_werewolf, 10).
MAX_SEATS = 10
SEAT_AGENTS = [f"seat_{i}" for i in range(MAX_SEATS)]


def check_opponents(specs: list) -> None:
    """Refuse an ``openai:`` opponent: the env would call that server itself, off verifiers'
    trace. A model opponent is a seat agent of an all-seat rollout, recorded like any agent."""
    remote = [spec for spec in specs if str(spec).strip().startswith("openai:")]
    if remote:
        raise ValueError(f"opponent {remote[0]!r}: an openai: opponent's requests would bypass verifiers' "
                         "recording; play it as a seat agent instead: all_seats=true (--env.taskset.all-seats) "
                         "and point that seat at the model (--env.seat-1.model NAME --env.seat-1.client.base-url "
                         "URL), with --env.frozen-seats 1 to keep it out of training")


def make_game(info: dict):
    """The seat's single-agent env for a task's ``info`` (one per episode: envs hold state)."""
    from socialgym_agents.single_agent import SingleAgentEnv

    check_opponents(info["opponents"])
    return SingleAgentEnv(info["game"], info["seat"], info["opponents"], **info["config"])


def make_table(info: dict):
    """The whole game (every seat played by an agent) for a task's ``info``."""
    import socialgym_env

    env = socialgym_env.make(info["game"], **info["config"])
    if len(env.possible_agents) > MAX_SEATS:
        raise ValueError(f"{info['game']} has {len(env.possible_agents)} seats; an all-seat rollout holds "
                         f"at most {MAX_SEATS}")
    return env


class SocialGymTaskset(vf.Taskset[SocialGymTask, SocialGymConfig]):
    def load(self) -> Iterator[SocialGymTask]:
        c = self.config
        for seed in range(c.first_seed, c.first_seed + c.num_tasks):
            info = {"game": c.game, "seat": c.seat, "opponents": list(c.opponents), "seed": seed,
                    "config": dict(c.game_config), "format_weight": c.format_weight, "all_seats": c.all_seats}
            if c.all_seats:        # each seat's agent is opened by its own first view (env.run)
                make_table(info).close()
                yield SocialGymTask(SocialGymData(name=f"{c.game}#{seed}", prompt=None, system_prompt=SYSTEM_PROMPT,
                                                  info=info), self.config.task)
                continue
            env = make_game(info)
            observation, _ = env.reset(seed=seed)     # the prompt is the seat's first view
            env.close()
            yield SocialGymTask(SocialGymData(name=f"{c.game}#{seed}", prompt=observation["text"],
                                              system_prompt=SYSTEM_PROMPT, info=info), self.config.task)


_IN_PROCESS = {"type": "subprocess"}


class SocialGymEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    """The one learner seat (``all_seats`` off)."""
    seat_0: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_1: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_2: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_3: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_4: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_5: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_6: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_7: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_8: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    seat_9: vf.AgentConfig = vf.AgentConfig(runtime=_IN_PROCESS)
    frozen_seats: list[int] = []
    """Seat indices whose agents are not trained (``trainable`` off on their traces): a fixed
    opponent, e.g. a seat pinned to another model with ``--env.seat-1.model``."""

    @field_validator("frozen_seats")
    @classmethod
    def _seat_indices(cls, value: list) -> list:
        wrong = [i for i in value if not 0 <= i < MAX_SEATS]
        if wrong:
            raise ValueError(f"frozen seat {wrong[0]} is not a seat index 0..{MAX_SEATS - 1}")
        return value


class SocialGymEnv(vf.Env[SocialGymEnvConfig]):
    async def setup(self, agents):
        for index in self.config.frozen_seats:
            getattr(agents, SEAT_AGENTS[index]).trainable = False

    async def run(self, task, agents):
        if task.data.info.get("all_seats"):
            await self.run_all_seats(task, agents)
            return
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

    async def run_all_seats(self, task, agents):
        """Every seat an agent (``seat_<i>``): the engine asks each seat in turn order, the
        seat's agent answers, its reply is the seat's move. A seat's first turn is its whole
        observation, each later one what is new for it since its move (:func:`turn_text`), so
        every conversation holds only what that seat could see. Each seat's trace gets its
        own rule-decided reward; a seat that never had a decision has no trace."""
        import contextlib

        info = task.data.info
        game = make_table(info)
        game.reset(seed=info["seed"])
        seats = list(game.possible_agents)
        interactions, moves, ended = {}, dict.fromkeys(seats, 0), set()
        async with contextlib.AsyncExitStack() as stack:
            while game.agents:
                seat = game.agent_selection
                if game.terminations[seat] or game.truncations[seat]:
                    game.step(None)
                    continue
                reply = ""                # an agent whose run ended (a limit) moves nothing: the game's fallback
                if seat not in ended:
                    if seat not in interactions:
                        agent = getattr(agents, SEAT_AGENTS[seats.index(seat)])
                        interactions[seat] = await stack.enter_async_context(agent.interaction(task))
                        message = game.observe(seat)["text"]
                    else:
                        message = turn_text(game.infos[seat])
                    segment = await interactions[seat].turn(message)
                    if segment.terminated:
                        ended.add(seat)
                    else:
                        reply = segment.last_reply
                game.step(reply)
                moves[seat] += 1
        record = game.episode_record()
        for seat, interaction in interactions.items():
            trace = interaction.trace
            invalid = game.invalid_counts[seat]
            trace.record_reward("game_reward", record["rewards"][seat], 1.0)
            trace.record_reward("format_reward", 1.0 - invalid / moves[seat] if moves[seat] else 1.0,
                                info["format_weight"])
            trace.info["game"] = {"episode_id": record.get("episode_id"), "seat": seat, "finished": True,
                                  "moves": moves[seat], "invalid_actions": invalid,
                                  "outcome": record["outcomes"][seat], "truncated": bool(record.get("truncated"))}
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
                     first_seed: int = 0, format_weight: float = 0.0, all_seats: bool = False,
                     frozen_seats: Optional[list] = None, **game_config) -> SocialGymEnv:
    """The environment for ``game`` played at ``seat`` against ``opponents`` (one spec for every
    other seat, or a list) or, ``all_seats``, with every seat an agent (``frozen_seats``: the
    indices kept out of training); ``num_tasks`` episodes with seeds from ``first_seed``; any
    other keyword is a game config key (``rounds=3``)."""
    specs = [s.strip() for s in opponents.split(",")] if isinstance(opponents, str) else list(opponents)
    taskset = SocialGymConfig(id=TASKSET_ID, game=game, seat=seat, opponents=specs, num_tasks=num_tasks,
                              first_seed=first_seed, game_config=game_config, format_weight=format_weight,
                              all_seats=all_seats)
    info = {"game": game, "seat": seat, "opponents": specs, "config": game_config}
    (make_table(info) if all_seats else make_game(info)).close()   # fail early
    return SocialGymEnv(SocialGymEnvConfig(taskset=taskset, frozen_seats=list(frozen_seats or [])))


__all__ = ["SocialGymConfig", "SocialGymData", "SocialGymTask", "SocialGymTaskset", "SocialGymEnvConfig",
           "SocialGymEnv", "SocialGymHarnessConfig", "SocialGymHarness", "load_environment"]
