"""One seat of any game as a Gymnasium env: the other seats are fixed policies.

```python
from socialgym_agents.single_agent import make_single_agent_env

env = make_single_agent_env("rock_paper_scissors", "player_0", opponents=["scripted:constant:rock"], rounds=3)
obs, info = env.reset(seed=0)                 # obs["text"]: the seat's prompt-ready view
while True:
    obs, reward, terminated, truncated, info = env.step("paper")   # or JSON, or any text
    if terminated or truncated:
        break                                  # reward: the terminal outcome (+1 / 0 / -1)
```

- **Seat or role.** ``seat_or_role`` is a seat id (``"player_2"``), a seat index, or a role of
  the game (``"werewolf"``): with a role, every ``reset`` picks the first seat dealt that role
  (roles are dealt by the seed), so the learner always plays that role.
- **Opponents.** One policy spec per other seat, in seat order (``socialgym_agents.registry`` specs:
  scripted, heuristic, ``smollm2``, ``hf:``, ``openai:``), or a single spec for all of them.
  Policies are built once per env (a :class:`socialgym_agents.runner.PolicyPool`; pass ``pool=`` to share
  one, e.g. one loaded model, between envs). An opponent seat's policy key is
  ``(game-seed-learner, seat)`` and its randomness is seeded with
  :func:`socialgym_agents.base.seat_seed` (game, seed, seat), as in the runners: the same seed gives the
  same opponent randomness, in any env.
- **Spaces.** The game's own: observation ``Dict(text=Text)``, action ``Text``. Junk text is
  never an error: the env records it as an invalid action and applies the game's fallback
  (``invalid_action="fallback"``, the default; any engine config key can be passed). Any
  object is taken (it is read safely, never ``str()``-ed); what is not an action of the game is
  junk. With ``invalid_action="raise"`` the learner's invalid action raises InvalidActionError
  and changes nothing; the opponents' invalid moves still take the fallback (recorded invalid),
  so they never escape the learner's ``step``.
- **Every episode has a decision.** An episode can end before the learner acts (the learner is
  killed in the first night, or the game ends first). ``reset`` then redeals: it plays the
  game seeds ``derived_seed(seed, 1)``, ``derived_seed(seed, 2)``, ... (deterministic) until the
  learner has a decision, so ``reset`` never hands out a finished episode. ``info["seed"]`` is
  the seed played, ``info["redeals"]`` how many deals were skipped.
- **Steps.** ``step(action)`` applies the action to the learner's seat only (the env never
  lets the learner act for another seat), then plays the opponents until the learner must act
  again or the game is over. The reward is 0 until the end, then the learner's outcome reward.
  ``info`` is the seat's decision view (``legal_action_list`` when finite, ``legal_actions``,
  ``action_schema``, ``role``, ``new_messages`` ...) plus ``learner``, ``invalid_actions``
  (count so far) and, at the end, ``score``, ``outcome`` and the episode ``record``.

:class:`MaskedSingleAgentEnv` (``make_masked_single_agent_env``) is the same env in the masked
view of :mod:`socialgym_env.masked`: ``Discrete(n)`` actions, an action mask (``action_masks()``
for sb3-contrib's MaskablePPO) and a numeric observation.

:class:`SingleAgentVecEnv` runs many of these at once: the opponents' decisions of every env
are gathered each tick and sent to each policy as one ``act_batch`` (so an LLM opponent decodes
one padded batch with per-seat KV caches, as in :mod:`socialgym_agents.batched`). Model-backed opponents
are shared by all envs; envs playing the same seed (a GRPO group) then share that seat's cache
key, which is safe for reuse (the local backend reuses a cache only up to the common token
prefix); a sampled (temperature > 0) LLM opponent's draws follow the seat's seed, not its key.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Optional, Sequence, Union

import gymnasium as gym
import numpy as np

import socialgym_env
from socialgym_env.errors import GameOverError, InvalidActionError
from socialgym_env.masked import (cached_menu, masked_layout, masked_observation, masked_observation_space,
                                  step_slot)

from .base import Request, seat_seed
from .runner import PolicyPool
from .specs import AgentSpec

# Deals tried for one reset before giving up (a seat that can never act).
MAX_REDEALS = 100


def learner_text(action):
    """The learner's action as the engine takes it: None is the empty action; anything else goes
    as it is, since the engine reads any object safely (never ``str()``, which a 200,000-deep
    list, a huge int or a ``__str__`` returning a non-string would raise on) and records what is
    not an action of the game as an invalid one."""
    return "" if action is None else action


@contextlib.contextmanager
def fallback_for_opponents(game):
    """The engine's invalid-action rule set to ``fallback`` for the block (an opponent's move)."""
    config = game.config
    before = config.get("invalid_action", "fallback")
    config["invalid_action"] = "fallback"
    try:
        yield
    finally:
        config["invalid_action"] = before


def derived_seed(seed: int, redeal: int) -> int:
    """The game seed of the ``redeal``-th redeal of a reset with ``seed``: a hash of the pair
    (NumPy's SeedSequence), so it is fixed by the seed and never depends on the opponents."""
    return int(np.random.SeedSequence([int(seed) % 2**63, redeal]).generate_state(1)[0]) % 2**31


def turn_text(info: dict) -> str:
    """What is new for the seat since its last move, from its decision view ``info``: the
    messages it saw, then what to do now and the legal moves. A chat-style trainer sends it as
    the next user (or tool) turn after the first, whole observation."""
    lines = list(info.get("new_messages") or [])
    if info.get("instructions"):
        lines.append(f"Now: {info['instructions']}")
    legal = info.get("legal_action_list") or info.get("legal_actions")
    if legal:
        lines.append("Legal moves: " + "; ".join(map(str, legal)))
    return "\n".join(lines) or "(nothing new) Your move."


class SingleAgentEnv(gym.Env):
    """A ``gymnasium.Env`` over one seat of a Social Gym game (see the module docstring)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, game: str, seat_or_role: Union[str, int] = 0, opponents: Sequence[str] = ("scripted:random",),
                 pool: Optional[PolicyPool] = None, policy_seed: int = 0, render_mode: Optional[str] = None,
                 **config):
        self.game_id = game
        self.config = dict(config)
        self.game = socialgym_env.make(game, **config)        # raises ConfigError on bad game/config
        seats = list(self.game.possible_agents)
        self._seat, self._role = self._resolve(seat_or_role, seats)
        if isinstance(opponents, str):
            opponents = [opponents]
        opponents = list(opponents)
        if len(opponents) == 1:
            opponents = opponents * (len(seats) - 1)
        if len(opponents) != len(seats) - 1:
            raise ValueError(f"{game} has {len(seats)} seats: give one opponent spec for each of the other "
                             f"{len(seats) - 1} seats, or one spec for all of them (got {len(opponents)})")
        self._opponents = [AgentSpec.of(spec) for spec in opponents]     # parsed once, here
        self.opponent_specs = [str(spec) for spec in self._opponents]
        self.pool = pool or PolicyPool(seed=policy_seed)
        for spec in set(self._opponents):
            self.pool.get(spec)                                 # bad specs fail here, not mid-episode
        self.render_mode = render_mode
        self.learner: Optional[str] = None
        self.seat_spec: dict = {}
        self.episode_id = ""
        first = seats[0] if self._seat is None else self._seat
        self.observation_space = self.game.observation_space(first)
        self.action_space = self.game.action_space(first)
        self.record: Optional[dict] = None

    # ------------------------------------------------------------------ setup
    def _resolve(self, seat_or_role, seats):
        if isinstance(seat_or_role, str) and seat_or_role.strip().isdigit() and seat_or_role not in seats:
            seat_or_role = int(seat_or_role)      # a command line's "0" (verifiers' vf-eval passes text)
        if isinstance(seat_or_role, int) and not isinstance(seat_or_role, bool):
            if not 0 <= seat_or_role < len(seats):
                raise ValueError(f"seat index {seat_or_role} out of range 0..{len(seats) - 1} for {self.game_id}")
            return seats[seat_or_role], None
        if seat_or_role in seats:
            return seat_or_role, None
        roles = sorted({role for role, _ in self.game.game.role_deck()})
        by_name = {role.lower(): role for role in roles}        # "werewolf" or "Werewolf"
        if str(seat_or_role).lower() in by_name:
            return None, by_name[str(seat_or_role).lower()]
        raise ValueError(f"{seat_or_role!r} is neither a seat nor a role of {self.game_id}; "
                         f"seats: {', '.join(seats)}; roles: {', '.join(roles)}")

    def _pick_learner(self) -> str:
        if self._seat is not None:
            return self._seat
        return next(a for a in self.game.possible_agents if self.game.state.seat[a].role == self._role)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        self.begin(seed)
        self._advance(until_out=True)
        while self.done or self._learner_out():   # no decision for the learner: redeal (module docstring)
            self.redeal()
            self._advance(until_out=True)
        return self._observation(), self._info()

    def _learner_out(self) -> bool:
        """The learner is eliminated in a game where eliminated seats never act again."""
        game = self.game
        return (not game.state.seat[self.learner].alive
                and not any(phase.allow_eliminated for phase in game.game._phases.values()))

    def begin(self, seed: Optional[int] = None) -> None:
        """Start an episode without playing the opponents yet (the vector env batches them)."""
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        self.requested_seed = seed
        self.redeals = 0
        self._deal(seed)

    def redeal(self) -> None:
        """Deal the next derived seed of the requested one (after an episode that ended before
        the learner's first decision); raises after MAX_REDEALS."""
        self.redeals += 1
        if self.redeals > MAX_REDEALS:
            raise RuntimeError(f"{self.game_id}: {self.learner} ({self._seat or self._role}) had no decision in "
                               f"{MAX_REDEALS} deals from seed {self.requested_seed}")
        self._deal(derived_seed(self.requested_seed, self.redeals))

    def _deal(self, seed: int) -> None:
        self.seed_played = seed
        self._release()                  # a reset mid-episode frees the opponents' seat state
        # The seat keys depend on the game, seed and learner seat only, so the same seed gives
        # the same opponent randomness in every env (a GRPO group plays like against like).
        self.episode_id = f"{self.game_id}-{seed}-learner-{self._seat or self._role}"
        self.game.reset(seed=seed, options={"episode_id": self.episode_id})
        self.learner = self._pick_learner()
        others = [a for a in self.game.possible_agents if a != self.learner]
        self.seat_spec = {self.learner: "learner", **dict(zip(others, self._opponents))}
        self.record = None
        for agent in others:
            self.pool.get(self.seat_spec[agent]).reset((self.episode_id, agent), seat_seed(self.game_id, seed, agent))

    def step(self, action):
        if self.learner is None:
            raise GameOverError("call reset() before step()")
        if self.done:
            raise GameOverError("the episode is over; call reset()")
        if self.game.agent_selection != self.learner:           # cannot happen: _advance stops only here
            raise RuntimeError(f"internal error: {self.game.agent_selection} is to act, not the learner")
        self._act(action)
        self._advance()
        reward = self.final_reward() if self.done else 0.0
        return self._observation(), reward, self.done and not self.truncated, self.truncated, self._info()

    def _act(self, action) -> None:
        """Apply the learner's action (text here; the masked view takes a slot)."""
        self.game.step(learner_text(action))

    def render(self):
        if self.render_mode == "ansi" and self.learner is not None:
            return self.game.observation_text(self.learner)
        return None

    def close(self):
        self._release()

    # ------------------------------------------------------------------ opponents
    @property
    def done(self) -> bool:
        return self.record is not None

    @property
    def truncated(self) -> bool:
        return bool(self.record and self.record.get("truncated"))

    def pending_request(self):
        """The next opponent decision due before the learner acts: (policy, agent, Request), or
        None when the learner is to act or the game is over. One per call (AEC order)."""
        env = self.game
        env.skip_dead()
        if not env.agents or self.record is not None:
            return None
        agent = env.agent_selection
        if agent == self.learner:
            return None
        policy = self.pool.get(self.seat_spec[agent])
        parts = env.prompt_parts(agent) if getattr(policy, "needs_prompt_parts", False) else None
        return policy, agent, Request((self.episode_id, agent), env.observe(agent), env.infos[agent], parts)

    def apply(self, agent: str, decision) -> None:
        """Step an opponent's decision (from :meth:`pending_request`)."""
        if decision.error is not None:
            raise decision.error
        if agent == self.learner or self.game.agent_selection != agent:
            raise RuntimeError(f"an opponent decision for {agent} arrived when it is not its turn")
        try:
            self.game.step(decision.action)
        except InvalidActionError:
            # invalid_action="raise" is the learner's contract: an opponent's invalid move must
            # not escape the learner's step() half-way; it takes the game's fallback (recorded
            # invalid). A raised action left the env unchanged, so it is played again.
            with fallback_for_opponents(self.game):
                self.game.step(decision.action)
        if decision.meta:
            self.game.annotate_last_turn(agent_meta=decision.meta)

    def _advance(self, until_out: bool = False) -> None:
        """Play the opponents until the learner must act or the game is over (``until_out``:
        or the learner is out for good, so that reset redeals without playing the rest)."""
        while (pending := self.pending_request()) is not None:
            if until_out and self._learner_out():
                return
            policy, agent, request = pending
            self.apply(agent, policy.act_batch([request])[0])
        self._finish_if_over()

    def _finish_if_over(self) -> None:
        self.game.skip_dead()
        if self.record is None and (not self.game.agents or self.game.state.finished):
            while self.game.agents:                              # the learner's own terminal step
                self.game.step(None)
            self.record = self.game.episode_record(policies={agent: str(spec) for agent, spec in self.seat_spec.items()})
            self._release()

    def _release(self) -> None:
        for agent, spec in self.seat_spec.items():
            if agent != self.learner:
                policy = self.pool.get(spec)
                if hasattr(policy, "release"):
                    policy.release((self.episode_id, agent))

    # ------------------------------------------------------------------ views
    def final_reward(self) -> float:
        return float((self.record or {}).get("rewards", {}).get(self.learner, 0.0) or 0.0)

    def _observation(self) -> dict:
        if self.record is not None:
            return {"text": self.game.observation_text(self.learner) if self.game.state else ""}
        return self.game.observe(self.learner)

    def _info(self) -> dict:
        learner = self.learner
        if self.record is not None:
            info = dict(self.game.infos.get(learner, {})) if self.game.infos else {}
            info.update(score=self.record["scores"][learner], outcome=self.record["outcomes"][learner],
                        reward=self.final_reward(), record=self.record)
        else:
            info = dict(self.game.infos[learner])
        role = self.game.state.seat[learner].role
        info.update(learner=learner, true_role=role, invalid_actions=self.game.invalid_counts[learner],
                    seed=self.seed_played, redeals=self.redeals)
        return info


class MaskedSingleAgentEnv(SingleAgentEnv):
    """One seat in the masked view (:mod:`socialgym_env.masked`): ``Discrete(n)`` actions (the
    game's catalogue slots), observation ``Dict(observation=Box, action_mask=Box(int8))`` (plus
    ``text`` with ``with_text=True``), and :meth:`action_masks` for sb3-contrib's MaskablePPO.
    Opponents, seats, roles, rewards and redeals are as in :class:`SingleAgentEnv`."""

    def __init__(self, game: str, seat_or_role: Union[str, int] = 0, opponents: Sequence[str] = ("scripted:random",),
                 pool: Optional[PolicyPool] = None, policy_seed: int = 0, render_mode: Optional[str] = None,
                 with_text: bool = False, **config):
        super().__init__(game, seat_or_role, opponents, pool=pool, policy_seed=policy_seed,
                         render_mode=render_mode, **config)
        self.layout = masked_layout(game, **config)
        self.with_text = with_text
        self._menus: dict = {}
        self.observation_space = masked_observation_space(self.layout, self.observation_space if with_text else None)
        self.action_space = gym.spaces.Discrete(self.layout.n)

    def menu(self):
        """The learner's choices now (empty when the episode is over)."""
        return [] if self.done else cached_menu(self._menus, self.game, self.learner)

    def action_masks(self) -> np.ndarray:
        """The legal slots now, as booleans (sb3-contrib's MaskablePPO calls this)."""
        return self.layout.mask(self.menu()).astype(bool)

    def _act(self, action) -> None:
        step_slot(self.game, self.layout, self.menu(), action)

    def _observation(self) -> dict:
        return masked_observation(self.game, self.layout, self.learner, self.menu(), self.with_text)


def make_masked_single_agent_env(game: str, seat_or_role: Union[str, int] = 0,
                                 opponents: Sequence[str] = ("scripted:random",), **config) -> MaskedSingleAgentEnv:
    """The masked single-seat env: as :func:`make_single_agent_env`, with integer actions and
    an action mask; ``with_text=True`` adds the text view to the observation."""
    return MaskedSingleAgentEnv(game, seat_or_role, opponents, **config)


def make_single_agent_env(game: str, seat_or_role: Union[str, int] = 0, opponents: Sequence[str] = ("scripted:random",),
                          **config) -> SingleAgentEnv:
    """A Gymnasium env in which the caller plays ``seat_or_role`` of ``game`` against
    ``opponents`` (policy specs). ``config`` takes the game's and engine's keys (``rounds=3``,
    ``max_steps=60``, ``invalid_action="fallback"``) plus ``pool``, ``policy_seed`` and
    ``render_mode``."""
    return SingleAgentEnv(game, seat_or_role, opponents, **config)


class SingleAgentVecEnv:
    """Many single-agent envs stepped together; opponents' decisions batched per policy.

    Envs share one :class:`PolicyPool` (one loaded model). ``reset(seeds)`` and
    ``step(actions)`` take and return one entry per env; an env whose episode ended is not
    stepped again (its action is ignored and its last result repeated) until it is reset, so
    episodes of different lengths can be played to the end together (``all(dones)``)."""

    def __init__(self, game: str, seat_or_role: Union[str, int] = 0, opponents: Sequence[str] = ("scripted:random",),
                 num_envs: int = 1, pool: Optional[PolicyPool] = None, policy_seed: int = 0, **config):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.pool = pool or PolicyPool(seed=policy_seed)
        specs = [AgentSpec.of(spec) for spec in ([opponents] if isinstance(opponents, str) else opponents)]
        # Model-backed policies are shared (one loaded model, one batch per tick); scripted ones
        # are per env, so that envs with one seed draw the same opponent randomness.
        shared = {spec: self.pool.get(spec) for spec in set(specs)
                  if getattr(self.pool.get(spec), "needs_prompt_parts", False)}
        self.envs = [SingleAgentEnv(game, seat_or_role, specs, pool=PolicyPool(self.pool.seed, shared), **config)
                     for _ in range(num_envs)]
        self.num_envs = num_envs
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self._last: list = [None] * num_envs

    def reset(self, seeds: Sequence[Optional[int]]):
        if len(seeds) != self.num_envs:
            raise ValueError(f"give one seed per env ({self.num_envs}), got {len(seeds)}")
        for env, seed in zip(self.envs, seeds):
            env.begin(seed)
        self._advance_all(range(self.num_envs))
        while unplayed := [index for index, env in enumerate(self.envs) if env.done]:
            for index in unplayed:       # the learner had no decision: redeal, as SingleAgentEnv.reset
                self.envs[index].redeal()
            self._advance_all(unplayed)
        self._last = [(env._observation(), 0.0, env.done and not env.truncated, env.truncated, env._info())
                      for env in self.envs]
        return [last[0] for last in self._last], [last[4] for last in self._last]

    def step(self, actions: Sequence[Optional[str]]):
        if len(actions) != self.num_envs:
            raise ValueError(f"give one action per env ({self.num_envs}), got {len(actions)}")
        stepped = []
        for index, (env, action) in enumerate(zip(self.envs, actions)):
            if env.learner is None:
                raise GameOverError("call reset() before step()")
            if env.done:
                continue
            env.game.step(learner_text(action))
            stepped.append(index)
        self._advance_all(stepped)
        for index in stepped:
            env = self.envs[index]
            reward = env.final_reward() if env.done else 0.0
            self._last[index] = (env._observation(), reward, env.done and not env.truncated, env.truncated,
                                 env._info())
        return tuple([last[k] for last in self._last] for k in range(5))

    @property
    def dones(self) -> list[bool]:
        return [env.done for env in self.envs]

    def _advance_all(self, indices) -> None:
        """Play every env's opponents to the learner's next turn, one batched call per policy per tick."""
        live = list(indices)
        while live:
            by_policy: dict = defaultdict(list)
            for index in list(live):
                pending = self.envs[index].pending_request()
                if pending is None:
                    live.remove(index)
                    self.envs[index]._finish_if_over()
                    continue
                policy, agent, request = pending
                by_policy[id(policy)].append((policy, index, agent, request))
            for items in by_policy.values():
                decisions = items[0][0].act_batch([request for _, _, _, request in items])
                for (_, index, agent, _), decision in zip(items, decisions):
                    self.envs[index].apply(agent, decision)

    def close(self) -> None:
        for env in self.envs:
            env.close()
