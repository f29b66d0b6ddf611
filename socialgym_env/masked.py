"""The masked view: any game with a fixed ``Discrete(n)`` action space and an action mask.

```python
from socialgym_env.masked import masked_env

env = masked_env("liars_dice", num_players=2, dice=2)   # a PettingZoo AEC env
env.reset(seed=0)
for agent in env.agent_iter():
    obs, reward, terminated, truncated, info = env.last()
    # obs = {"observation": float32 vector, "action_mask": int8 vector, "text": the prompt view}
    action = None if terminated or truncated else env.action_space(agent).sample(obs["action_mask"])
    env.step(action)                                  # an int: no text is parsed
```

The observation follows PettingZoo classic's convention (``{"observation", "action_mask"}``),
plus ``"text"`` (the seat's prompt-ready view; ``with_text=False`` drops it).

**Actions.** Every seat of a game shares one catalogue of ``n`` slots (:class:`MaskedLayout`).
A slot is an action with player arguments written as seat ids, so it means the same thing in
every episode (``"vote player_3"``, ``"bid 2 5"``, ``"say I agree."``). The mask marks the
slots legal at the seat's current decision. The catalogue is generated from the game's
declarations -- each phase's action specs as the engine enumerates them -- over the decisions
of ``CALIBRATION_EPISODES`` seeded random-play episodes (seeds 0, 1, ...; the specs of most
phases depend on the state, e.g. the bids above the current one, so the reachable set is
collected rather than guessed), with every player argument widened to every seat (a team of
distinct, unordered seats stays one slot per set, in seat order, as enumerated). After the
catalogued slots come ``overflow`` spare slots: a legal action the catalogue lacks takes the
first free one, in legal-list order, so every decision has a legal slot and every legal action
one, up to the widest decision calibration saw (a wider one leaves its extra uncatalogued
actions masked out, i.e. unreachable; never a crash).

**Talk phases.** A decision without a finite legal list (free text) gets a fixed menu: every
free-text argument takes one of :data:`CANNED_MESSAGES`, a free word one of
:data:`CANNED_WORDS`, the other arguments their listed values (``vote NAME REASON`` becomes
one slot per seat and message); an action type whose menu would exceed :data:`MENU_LIMIT`
(``offer`` of six numbers) gets a single ``"<type> <sampled>"`` slot that plays a random legal
action drawn from a RNG seeded by the episode seed, step and seat. Menu actions are canned
text, the only ones that reach the engine's text parser.

**Integer steps.** Every slot is played by :func:`step_slot`; a listed legal action goes
through :func:`step_legal_index`, the one place that steps an index into
``legal_action_list``. A slot that is masked out now is an invalid action: the engine's
``invalid_action`` mode applies (``fallback``, the default, plays the phase's fallback). A
value outside ``0..n-1`` or not an integer raises ``ValueError``.

**Observation vector** (``layout.feature_names`` names every entry): the seat (one-hot), its
known role (one-hot over the roles dealt or shown in calibration), the phase (one-hot over the
declared phases), acting and alive flags, the round and the step as a share of the turn cap,
then the seat's structured ``game_state`` flattened by :func:`flatten_state`: numbers at a
path as ``sign(x) * log1p(|x|)``; a string that is a seat id as a one-hot over the seats; any
other string as a one-hot over the (at most :data:`VOCAB_LIMIT`) values calibration saw at that
path, plus an "other" entry; a list of strings as counts over the same vocabulary; other lists
by their newest :data:`LIST_LIMIT` entries (index ``-1`` is the last) plus their length; dict
keys as path parts. Paths calibration never saw are dropped, so the length is fixed.
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from .actions import ActionError, Text, Word
from .env import as_index
from .registry import make

CALIBRATION_EPISODES = 16
# Calibration stops adding episodes past this many decisions (chess games are long).
CALIBRATION_DECISIONS = 1500
CANNED_MESSAGES = (
    "I agree.",
    "I disagree.",
    "I trust you.",
    "I am suspicious.",
)
CANNED_WORDS = ("yes", "no", "maybe", "thing")
MENU_LIMIT = 64
VOCAB_LIMIT = 16
LIST_LIMIT = 8
SAMPLED = "<sampled>"
_INT_BOUND = 1e9


# --------------------------------------------------------------------------------------
# The decision menu: what one seat may do now, as (slot label, how to play it)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MenuEntry:
    label: str                     # the catalogue key: "vote player_3"
    legal_index: Optional[int]     # index into legal_action_list, or None for a canned text
    text: str = ""                 # the canned action (talk menus)


def _label(action_type: str, values) -> str:
    return " ".join([action_type] + [str(v) for v in values])


def _free_options(slot) -> Optional[list]:
    if isinstance(slot, Text):
        return [m for m in CANNED_MESSAGES if len(m) <= slot.max_length]
    if isinstance(slot, Word):
        return list(CANNED_WORDS)
    return slot.options()


def decision_menu(env, agent: str) -> list[MenuEntry]:
    """The seat's choices at its current decision, in a fixed order. Empty when it has none."""
    if not env.agents or agent not in env.pending_actors():
        return []
    grammar = env.grammar(agent)
    legal = grammar.enumerate()
    if legal is not None:
        # the same enumeration, in the same order, as legal_action_list
        labels = [_label(action.type, action.values) for action in grammar.actions()]
        return [MenuEntry(label, index) for index, label in enumerate(labels)]
    menu: list[MenuEntry] = []
    for spec in grammar.specs:
        options = [_free_options(slot) for slot in spec.slots]
        size = math.prod(len(o) for o in options) if all(o is not None for o in options) else MENU_LIMIT + 1
        if size <= MENU_LIMIT:
            for values in itertools.product(*options):
                try:
                    values = spec.validate(tuple(values))
                except ActionError:
                    continue
                menu.append(MenuEntry(_label(spec.type, values), None, spec.render(values)))
            continue
        rng = random.Random(f"{env.seed_value}/{env.state.step}/{agent}/{spec.type}")
        values = spec.sample(rng)
        if values is not None:
            menu.append(MenuEntry(f"{spec.type} {SAMPLED}", None, spec.render(values)))
    return menu


def cached_menu(cache: dict, env, agent: str) -> list[MenuEntry]:
    """``decision_menu`` memoised in ``cache`` until the env's state moves (one epoch kept)."""
    key = (id(env.state), env.state.step, len(env.agents), agent)
    if key not in cache:
        cache.clear()
        cache[key] = decision_menu(env, agent)
    return cache[key]


def step_legal_index(env, index: int) -> None:
    """Step the acting seat with ``legal_action_list[index]``: the one integer path into the
    engine, ``env.step_index`` (no text is parsed)."""
    env.step_index(index)


def step_slot(env, layout: "MaskedLayout", menu: list[MenuEntry], slot) -> None:
    """Play catalogue ``slot`` for the acting seat, whose current menu is ``menu``."""
    slot = as_index(slot, f"a masked action (a slot 0..{layout.n - 1})")
    if not 0 <= slot < layout.n:
        raise ValueError(f"action slot {slot} is outside 0..{layout.n - 1}")
    entry = layout.slot_entries(menu).get(slot)
    if entry is None:
        env.step(f"<masked-out slot {slot}: {layout.slot_label(slot)}>")   # invalid: engine's fallback
    elif entry.legal_index is not None:
        step_legal_index(env, entry.legal_index)
    else:
        env.step(entry.text)


# --------------------------------------------------------------------------------------
# game_state flattening
# --------------------------------------------------------------------------------------
def flatten_state(value, seats: frozenset) -> list:
    """The ``(path, kind, value)`` leaves of a JSON-like game_state: kind "num" (a float),
    "seat" (a seat id), "str" (any other string) or "bag" (one string of a list of strings)."""
    leaves: list = []
    _flatten(value, seats, "", leaves)
    return leaves


def _flatten(value, seats: frozenset, path: str, leaves: list) -> None:
    if value is None:
        return
    if isinstance(value, (bool, int, float)):
        leaves.append((path, "num", float(value)))
    elif isinstance(value, str):
        leaves.append((path, "seat" if value in seats else "str", value))
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, seats, f"{path}/{key}", leaves)
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(item, str) for item in value):
            bag = f"{path}[*]"
            leaves.extend((bag, "bag", item) for item in value)
            return
        leaves.append((f"{path}#len", "num", float(len(value))))
        for back, item in enumerate(reversed(value[-LIST_LIMIT:])):
            _flatten(item, seats, f"{path}[-{back + 1}]", leaves)


def _squash(x: float) -> float:
    x = max(-_INT_BOUND, min(_INT_BOUND, x))
    return math.copysign(math.log1p(abs(x)), x)


# --------------------------------------------------------------------------------------
# The layout: the catalogue and the feature schema of one game + config
# --------------------------------------------------------------------------------------
@dataclass
class MaskedLayout:
    """The fixed action catalogue and observation encoding of one game and config."""

    game_id: str
    seats: list
    roles: list
    phases: list
    actions: list                  # catalogue labels, slot order
    overflow: int                  # spare slots after the catalogue
    numeric: list                  # feature paths of numbers
    categorical: list              # (path, kind, vocabulary) of seat / str / bag features
    max_steps: int
    _slots: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._slots = {label: i for i, label in enumerate(self.actions)}
        self._seat_index = {s: i for i, s in enumerate(self.seats)}
        self._role_index = {r: i for i, r in enumerate(self.roles)}
        self._phase_index = {p: i for i, p in enumerate(self.phases)}
        self._numeric_index = {}
        offset = len(self.seats) + len(self.roles) + len(self.phases) + 4
        for path in self.numeric:
            self._numeric_index[path] = offset
            offset += 1
        self._categorical_index = {}
        for path, kind, vocab in self.categorical:
            width = len(self.seats) if kind == "seat" else len(vocab) + 1
            self._categorical_index[(path, kind)] = (offset, vocab)
            offset += width
        self.size = offset

    @property
    def n(self) -> int:
        return len(self.actions) + self.overflow

    def slot_label(self, slot: int) -> str:
        return self.actions[slot] if slot < len(self.actions) else f"<overflow {slot - len(self.actions)}>"

    def slot_entries(self, menu: list[MenuEntry]) -> dict:
        """slot -> menu entry for the current decision (catalogued first, the rest in overflow)."""
        entries, spare = {}, len(self.actions)
        for entry in menu:
            slot = self._slots.get(entry.label)
            if slot is None:
                if spare >= self.n:
                    continue             # wider than any calibrated decision: unreachable
                slot, spare = spare, spare + 1
            entries.setdefault(slot, entry)
        return entries

    def mask(self, menu: list[MenuEntry]) -> np.ndarray:
        mask = np.zeros(self.n, dtype=np.int8)
        for slot in self.slot_entries(menu):
            mask[slot] = 1
        return mask

    @property
    def feature_names(self) -> list[str]:
        names = ([f"seat={s}" for s in self.seats] + [f"role={r}" for r in self.roles]
                 + [f"phase={p}" for p in self.phases] + ["acting", "alive", "round", "step/max_steps"])
        names += [f"state{path}" for path in self.numeric]
        for path, kind, vocab in self.categorical:
            choices = self.seats if kind == "seat" else list(vocab) + ["<other>"]
            names += [f"state{path}={c}" for c in choices]
        return names

    def encode(self, env, agent: str) -> np.ndarray:
        """The seat's observation vector now (see the module docstring)."""
        vector = np.zeros(self.size, dtype=np.float32)
        state = env.state
        seat = state.seat[agent]
        role = env.game.known_role(state, agent)[0]
        vector[self._seat_index[agent]] = 1.0
        base = len(self.seats)
        if role in self._role_index:
            vector[base + self._role_index[role]] = 1.0
        base += len(self.roles)
        if state.phase in self._phase_index:
            vector[base + self._phase_index[state.phase]] = 1.0
        base += len(self.phases)
        vector[base] = float(bool(env.agents) and agent in env.pending_actors())
        vector[base + 1] = float(seat.alive)
        vector[base + 2] = _squash(state.round)
        vector[base + 3] = min(state.step / self.max_steps, 1.0)
        seat_set = frozenset(self.seats)
        for path, kind, value in flatten_state(env.game.public_data(state, agent), seat_set):
            if kind == "num":
                index = self._numeric_index.get(path)
                if index is not None:
                    vector[index] = _squash(value)
                continue
            found = self._categorical_index.get((path, kind))
            if found is None:
                continue
            offset, vocab = found
            if kind == "seat":
                vector[offset + self._seat_index[value]] = 1.0
            else:
                vector[offset + vocab.get(value, len(vocab))] += 1.0
        return vector


def _config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


@functools.lru_cache(maxsize=64)
def _layout(game_id: str, config_key: str) -> MaskedLayout:
    env = make(game_id, **json.loads(config_key))
    seen = _Calibration(env)
    for seed in range(CALIBRATION_EPISODES):
        if seen.decisions >= CALIBRATION_DECISIONS:
            break
        seen.play(seed)
    # Every seat in a player argument, but a team of distinct, unordered seats (Resistance's
    # "propose") is one slot per set: the enumeration lists each set once in seat order, so a
    # repeated seat or another order would be a slot no decision ever marks legal.
    labels = {label for label in _with_every_seat(seen.labels, seen.seats)
              if _canonical_team(label, seen.shapes, seen.seats)}
    return MaskedLayout(game_id=env.game_info.id, seats=seen.seats, roles=sorted(seen.roles),
                        phases=list(env.game._phases), actions=sorted(labels, key=_natural_key),
                        overflow=seen.overflow, numeric=sorted(seen.numeric), categorical=_categorical(seen.vocab),
                        max_steps=env.max_steps)


class _Calibration:
    """What seeded random episodes of a game show: the labels of its decision menus and the
    shapes of their specs, the widest menu, the roles, and the paths of the seats' public data
    (the numeric ones, and how often each value of the others was seen)."""

    def __init__(self, env):
        self.env = env
        self.seats = list(env.possible_agents)
        self.seat_set = frozenset(self.seats)
        self.labels: set = set()
        self.roles = {role for role, _ in env.game.role_deck()}
        self.overflow = 1
        self.numeric: set = set()
        self.vocab: dict = {}         # (path, kind) -> {value: times seen}
        self.shapes: dict = {}        # action type -> (distinct, unordered) of its spec
        self.decisions = 0

    def play(self, seed: int) -> None:
        """One episode of random menu entries, seen decision by decision."""
        env = self.env
        env.reset(seed=seed)
        rng = random.Random(seed)
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            # Every seat's view every few decisions (the paths of the acting seat every time):
            # seats see the same keys, and this keeps calibration of 10-seat games short.
            for seat in (self.seats if self.decisions % 16 == 0 else [agent]):
                self._see_view(seat)
            menu = self._see_menu(agent)
            self.decisions += 1
            entry = rng.choice(menu)
            if entry.legal_index is not None:
                step_legal_index(env, entry.legal_index)
            else:
                env.step(entry.text)

    def _see_view(self, seat: str) -> None:
        env = self.env
        self.roles.add(env.game.known_role(env.state, seat)[0])
        for path, kind, value in flatten_state(env.game.public_data(env.state, seat), self.seat_set):
            if kind == "num":
                self.numeric.add(path)
            else:
                self.vocab.setdefault((path, kind), {}).setdefault(value, 0)
                self.vocab[(path, kind)][value] += 1

    def _see_menu(self, agent: str) -> list:
        menu = decision_menu(self.env, agent)
        self.labels.update(entry.label for entry in menu)
        for spec in self.env.grammar(agent).specs:
            self.shapes[spec.type] = (spec.distinct, spec.unordered)
        self.overflow = max(self.overflow, len(menu))
        return menu


def _with_every_seat(labels: set, seats: list) -> set:
    """Player arguments widened: "vote player_1" seen means "vote player_k" exists for every seat."""
    widened = set(labels)
    for label in labels:
        words = label.split(" ")
        for position, word in enumerate(words):
            if word in seats:
                for other in seats:
                    widened.add(" ".join(words[:position] + [other] + words[position + 1:]))
    return widened


def _categorical(vocab: dict) -> list:
    """(path, kind, {value: slot}) per categorical path: a seat path indexes the seats, another
    keeps its ``VOCAB_LIMIT`` most often seen values."""
    categorical = []
    for (path, kind), counts in sorted(vocab.items()):
        if kind == "seat":
            categorical.append((path, kind, {}))
            continue
        kept = sorted(counts, key=lambda v: (-counts[v], v))[:VOCAB_LIMIT]
        categorical.append((path, kind, {value: i for i, value in enumerate(sorted(kept))}))
    return categorical


def _canonical_team(label: str, shapes: dict, seats: list) -> bool:
    """Whether ``label``'s seat arguments are as its spec enumerates them: all different for a
    ``distinct`` spec, in seat order for an ``unordered`` one."""
    words = label.split(" ")
    distinct, unordered = shapes.get(words[0], (False, False))
    order = [seats.index(word) for word in words[1:] if word in seats]
    if distinct and len(set(order)) < len(order):
        return False
    return not unordered or order == sorted(order)


def _natural_key(label: str):
    return [(0, int(w), "") if w.lstrip("-").isdigit() else (1, 0, w) for w in label.split(" ")]


def masked_layout(game_id: str, **config) -> MaskedLayout:
    """The catalogue and encoding of ``game_id`` with ``config`` (built once per process)."""
    return _layout(game_id, _config_key(config))


# --------------------------------------------------------------------------------------
# The AEC env
# --------------------------------------------------------------------------------------
class MaskedEnv(AECEnv):
    """A Social Gym game with ``Discrete(n)`` actions and ``action_mask`` observations (see the
    module docstring). The turn order, rewards and episode record are the wrapped env's."""

    def __init__(self, game_id: str, with_text: bool = True, render_mode: Optional[str] = None,
                 classic_infos: bool = False, **config):
        super().__init__()
        self.env = make(game_id, render_mode=render_mode, **config)
        self.layout = masked_layout(game_id, **config)
        self.with_text = with_text
        self.classic_infos = classic_infos
        self.metadata = dict(self.env.metadata)
        self.possible_agents = list(self.env.possible_agents)
        self.render_mode = render_mode
        self._observation_spaces: dict = {}
        self._action_spaces: dict = {}
        self._menus: dict = {}

    # The AEC bookkeeping is the wrapped env's own.
    agents = property(lambda self: self.env.agents, lambda self, value: setattr(self.env, "agents", value))
    agent_selection = property(lambda self: self.env.agent_selection,
                               lambda self, value: setattr(self.env, "agent_selection", value))
    rewards = property(lambda self: self.env.rewards)
    terminations = property(lambda self: self.env.terminations)
    truncations = property(lambda self: self.env.truncations)
    # classic_infos (masked_env's docstring): empty infos, as PettingZoo's classic envs have
    # (TorchRL's PettingZooWrapper turns every info value into a tensor, and the text env's hold
    # strings, lists and dicts); the text env's own stay at ``env.env.infos``.
    infos = property(lambda self: {agent: {} for agent in self.env.infos} if self.classic_infos else self.env.infos)
    _cumulative_rewards = property(lambda self: self.env._cumulative_rewards)

    def observation_space(self, agent):
        if agent not in self._observation_spaces:
            self._observation_spaces[agent] = masked_observation_space(self.layout, self.env.observation_space(agent)
                                                                       if self.with_text else None)
        return self._observation_spaces[agent]

    def action_space(self, agent):
        if agent not in self._action_spaces:
            self._action_spaces[agent] = spaces.Discrete(self.layout.n)
        return self._action_spaces[agent]

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        self._menus = {}
        self.env.reset(seed=seed, options=options)

    def menu(self, agent: str) -> list[MenuEntry]:
        return cached_menu(self._menus, self.env, agent)

    def observe(self, agent):
        obs = masked_observation(self.env, self.layout, agent, self.menu(agent), self.with_text)
        if self.classic_infos and self._finished(agent):
            obs["action_mask"][:] = 1      # a finished seat's step takes None whatever is picked
        return obs

    def _finished(self, agent) -> bool:
        return self.terminations.get(agent, False) or self.truncations.get(agent, False)

    def step(self, action):
        agent = self.agent_selection
        if self.classic_infos and self._finished(agent):
            action = None
        if action is None or self.terminations[agent] or self.truncations[agent]:
            self.env.step(action)
        else:
            step_slot(self.env, self.layout, self.menu(agent), action)

    def episode_record(self, **kwargs) -> dict:
        return self.env.episode_record(**kwargs)

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


def masked_observation_space(layout: MaskedLayout, text_space=None) -> spaces.Dict:
    parts = {"observation": spaces.Box(-np.inf, np.inf, (layout.size,), np.float32),
             "action_mask": spaces.Box(0, 1, (layout.n,), np.int8)}
    if text_space is not None:
        parts["text"] = text_space["text"]
    return spaces.Dict(parts)


def masked_observation(env, layout: MaskedLayout, agent: str, menu: list[MenuEntry], with_text: bool) -> dict:
    obs = {"observation": layout.encode(env, agent), "action_mask": layout.mask(menu)}
    if with_text:
        obs["text"] = env.observation_text(agent)
    return obs


def masked_env(game_id: str, with_text: bool = True, classic_infos: bool = False, **config) -> MaskedEnv:
    """``game_id`` as a masked PettingZoo AEC env; ``config`` takes the game's and engine's keys.
    ``classic_infos=True`` is PettingZoo-classic compatibility, what TorchRL's
    ``PettingZooWrapper`` needs (with ``with_text=False``): empty infos, and a finished seat's mask
    marks every slot (a random action must exist) while its step takes None, whatever is picked."""
    return MaskedEnv(game_id, with_text=with_text, classic_infos=classic_infos, **config)
