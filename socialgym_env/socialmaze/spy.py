"""SocialMaze Find the Spy (seed 004) as an observer task: Gymnasium env ``socialgym/FindTheSpy-v0``.

``n`` players (default 4); ``n - 1`` Civilians share word A, one Spy holds a related word B (an
Undercover word pair, ``socialgym_env/data/undercover_pairs.json``). For ``T`` rounds (default 3)
every player, in seat order, describes its own word; each sees the descriptions said before it.
The evaluated model is Player 1: it is told its own word but not whether it is A or B, writes no
description, and after all T rounds must name the Spy and its own role. Seed 004's setting: the
evaluated player holds the spy word in 25% of instances (exactly, within a data set), the
civilian word in 75%; when it is a Civilian the Spy is uniform over Players 2..n.

Descriptions come from a *describer*, ``(player, word, round, history) -> text``. This module
owns the rule-based one (:func:`hint_describer`: hint words of the pair bank, so instances
need no model); ``socialgym_benchmarks.studies.find_the_spy`` adds language-model describers and the data-set CLI.

Scoring is exact: reward 1.0 iff the named Spy is right and the stated role is right (the two
claims are tied: Player 1 is the Spy iff its role is Spy). Accepted answers, case-insensitive:
JSON ``{"spy": 3, "role": "Civilian"}``; ``Spy: Player 3; My role: Civilian`` (the prompt's
format); ``Player 3 is the spy``, ``I am a Civilian``, ``I am the spy``; a bare ``3``. Text
after the last "final answer" / "answer:" is read alone. Naming Player 1 implies role Spy and
role Spy alone implies Player 1; contradictory or missing parts score 0 with the reason.

=============  ============================================================
Observation    ``Dict({"text": Text})``: rules, Player 1's word, all descriptions, the question
Action         ``Text``: the answer
Reward         1.0 if both the Spy and Player 1's role are right, else 0.0; one step
Info (reset)   id, n_players, n_rounds, word (Player 1's), perspective ("Spy"/"Civilian")
               is withheld until the step
Info (step)    spy_correct, role_correct, parsed_spy, parsed_role, reason, answer, perspective
=============  ============================================================

``reset(seed=s)`` builds a fresh rule-described instance from ``s`` (or draws one of the env's
``instances``, e.g. a JSONL data set given as ``dataset=PATH``); ``reset(options={"instance": x})``
evaluates a given :class:`SpyInstance` (or its dict).
"""

from __future__ import annotations

import functools
import json
import random
from importlib import resources
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import gymnasium as gym
from gymnasium import spaces

from .dataset import read_rows
from .scoring import answer_region, player_number, single_player


@functools.lru_cache(maxsize=1)
def word_pairs() -> tuple:
    """The Undercover game's related word pairs (its package data file). Read here rather than
    imported from the game so that the socialmaze subpackage stays self-contained."""
    text = resources.files("socialgym_env").joinpath("data", "undercover_pairs.json").read_text("utf-8")
    return tuple(json.loads(text)["pairs"])

ENV_ID = "socialgym/FindTheSpy-v0"
SPY, CIVILIAN = "Spy", "Civilian"
DEFAULT_PLAYERS, DEFAULT_ROUNDS = 4, 3
SPY_PERSPECTIVE_SHARE = 0.25          # seed 004: Player 1 holds the spy word in 25% of instances
MAX_DESCRIPTION_CHARS = 300
MAX_ANSWER_CHARS = 4096

# (player, word, round, history) -> description; history = [(round, player, text), ...] so far.
Describer = Callable[[int, str, int, list], str]


@dataclass(frozen=True)
class SpyInstance:
    id: str
    civilian_word: str
    spy_word: str
    spy: int                                  # 1-based seat of the Spy
    descriptions: list                        # [round][player-1] -> text
    describer: str = "hints"                  # what produced the descriptions (policy spec)
    seed: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def n_players(self) -> int:
        return len(self.descriptions[0]) if self.descriptions else 0

    @property
    def n_rounds(self) -> int:
        return len(self.descriptions)

    @property
    def player1_role(self) -> str:
        return SPY if self.spy == 1 else CIVILIAN

    @property
    def player1_word(self) -> str:
        return self.spy_word if self.spy == 1 else self.civilian_word

    def prompt(self) -> str:
        return render_prompt(self)

    def to_dict(self) -> dict:
        return {"id": self.id, "civilian_word": self.civilian_word, "spy_word": self.spy_word, "spy": self.spy,
                "player1_role": self.player1_role, "descriptions": [list(r) for r in self.descriptions],
                "describer": self.describer, "seed": self.seed, "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, data: Mapping) -> "SpyInstance":
        desc = [list(map(str, r)) for r in data["descriptions"]]
        if not desc or len({len(r) for r in desc}) != 1 or len(desc[0]) < 3:
            raise ValueError("descriptions must be T >= 1 rounds of the same n >= 3 players")
        spy = int(data["spy"])
        if not 1 <= spy <= len(desc[0]):
            raise ValueError(f"spy {spy} is out of range 1..{len(desc[0])}")
        return cls(id=str(data["id"]), civilian_word=str(data["civilian_word"]), spy_word=str(data["spy_word"]),
                   spy=spy, descriptions=desc, describer=str(data.get("describer", "")),
                   seed=int(data.get("seed", 0)), meta=dict(data.get("meta") or {}))


def render_prompt(inst: SpyInstance) -> str:
    n, t = inst.n_players, inst.n_rounds
    lines = [
        f"Find the Spy. {n} players each got a secret word: {n - 1} Civilians share the same word, and "
        f"one Spy got a different but related word. Over {t} rounds every player described their own "
        "word without saying it.",
        f"You are Player 1. Your word is \"{inst.player1_word}\". You do not know whether you are a "
        "Civilian or the Spy.",
        "",
    ]
    for r, row in enumerate(inst.descriptions, start=1):
        lines.append(f"Round {r}:")
        lines += [f"Player {p}: {text}" for p, text in enumerate(row, start=1)]
    lines += ["", "Which player is the Spy, and what is your own role (Civilian or Spy)? "
                  "Answer in the format: Spy: Player k; My role: Civilian"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- generation
def hint_describer(rng: random.Random) -> Describer:
    """Rule-based descriptions: one of the word's hint words from the pair bank, in one of a
    few sentence templates (the same bank the Undercover heuristic uses)."""
    hints = {entry["word"]: entry["hints"] for pair in word_pairs() for entry in pair}
    templates = ("It makes me think of {}.", "You often find it with {}.", "Picture {}.", "Think {}.")

    def describe(player: int, word: str, round_no: int, history: list) -> str:
        return rng.choice(templates).format(rng.choice(hints.get(word) or ["something"]))
    return describe


def mask_word(text: str, word: str) -> str:
    """One line, at most MAX_DESCRIPTION_CHARS, with the speaker's own word blanked (a describer
    that says its word would make the task trivial)."""
    line = " ".join(str(text).split())[:MAX_DESCRIPTION_CHARS]
    return re.sub(rf"\b{re.escape(word)}(?:e?s)?\b", "___", line, flags=re.I) or "(no description)"


def build_instance(instance_id: str, seed: int, spy_is_player1: bool, describer: Optional[Describer] = None,
                   describer_name: str = "hints", n_players: int = DEFAULT_PLAYERS,
                   n_rounds: int = DEFAULT_ROUNDS) -> SpyInstance:
    """One instance from ``seed``: a word pair (which word is the Civilians' drawn too), the
    Spy's seat, then T rounds of descriptions in seat order."""
    if n_players < 3 or n_rounds < 1:
        raise ValueError(f"need n_players >= 3 and n_rounds >= 1, got {n_players} and {n_rounds}")
    rng = random.Random(seed)
    pair = [entry["word"] for entry in rng.choice(word_pairs())]
    rng.shuffle(pair)
    civilian_word, spy_word = pair
    spy = 1 if spy_is_player1 else rng.randint(2, n_players)
    describer = describer or hint_describer(random.Random(rng.getrandbits(64)))
    history, rows = [], []
    for round_no in range(1, n_rounds + 1):
        row = []
        for player in range(1, n_players + 1):
            word = spy_word if player == spy else civilian_word
            text = mask_word(describer(player, word, round_no, list(history)), word)
            row.append(text)
            history.append((round_no, player, text))
        rows.append(row)
    return SpyInstance(instance_id, civilian_word, spy_word, spy, rows, describer_name, seed)


def spy_perspectives(n: int, seed: int, share: float = SPY_PERSPECTIVE_SHARE) -> list:
    """Which of ``n`` instances put Player 1 in the Spy's seat: exactly round(share * n) of them,
    at seeded positions."""
    flags = [i < round(share * n) for i in range(n)]
    random.Random(f"perspective|{seed}").shuffle(flags)
    return flags


# ----------------------------------------------------------------------------- scoring
_JSON = re.compile(r"\{[^{}]*\}", re.S)
_SPY_PATTERNS = [
    re.compile(r"\bspy\s*(?:is|was|:|=|-)?\s*(?:the\s+)?(?:player|p)\s*#?\s*(\d+)\b", re.I),
    re.compile(r"\bspy\s*(?:is|was|:|=|-)\s*#?\s*(\d+)\b", re.I),
    re.compile(r"\b(?:player|p)\s*#?\s*(\d+)\s+(?:is|was)\s+(?:the\s+|a\s+)?spy\b", re.I),
]
_ROLE_PATTERNS = [
    re.compile(r"\b(?:my|player\s*1['\u2019]?s|own)\s+(?:true\s+)?role\s*(?:is|:|=|-)?\s*(?:the\s+|a\s+)?(civilian|spy)\b", re.I),
    re.compile(r"\bi\s*(?:am|['\u2019]m)\s+(?:the\s+|a\s+)?(civilian|spy)\b", re.I),
]
_TERSE = re.compile(r"^\W*(?:player|p)?\s*#?\s*(\d+)\W*$", re.I)


@dataclass(frozen=True)
class SpyScore:
    reward: float
    spy_correct: bool
    role_correct: bool
    parsed_spy: Optional[int]
    parsed_role: Optional[str]
    reason: Optional[str]

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def parse_spy_answer(answer: Any, n_players: int) -> tuple[Optional[int], Optional[str], Optional[str]]:
    """(spy, role, reason why something is missing or None) from a text or mapping answer."""
    problems: list = []
    if isinstance(answer, Mapping):
        obj, text = {str(k).lower(): v for k, v in answer.items()}, ""
    elif isinstance(answer, str):
        text = answer_region(answer)
        obj = _spy_json(text)
    else:
        return None, None, f"answer must be text, got {type(answer).__name__}"
    spies, roles = _claims_from_json(obj, problems) if obj is not None else _claims_from_text(text)
    if spies == {1} and not roles:         # "Player 1 is the spy" and "I am the spy" are one claim
        roles.add(SPY)
    if roles == {SPY} and not spies:
        spies.add(1)
    spy = single_player(spies, n_players, "spy", problems, plural="spies")
    role = None
    if len(roles) > 1:
        problems.append("both roles named")
    elif roles:
        role = next(iter(roles))
    else:
        problems.append("no role found")
    return spy, role, "; ".join(problems) or None


def _spy_json(text: str) -> Optional[dict]:
    """The last JSON object in ``text`` with a spy or role key (keys case-insensitive)."""
    found = None
    for raw in _JSON.findall(text):
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and ({"spy", "role", "my_role"} & {str(k).lower() for k in data}):
            found = {str(k).lower(): v for k, v in data.items()}
    return found


def _claims_from_json(obj: dict, problems: list) -> tuple[set, set]:
    spies, roles = set(), set()
    if "spy" in obj:
        player = player_number(obj["spy"])
        if player is None:
            problems.append(f"spy value {obj['spy']!r} is not a player")
        else:
            spies.add(player)
    role = obj.get("role", obj.get("my_role"))
    if role is not None:
        if str(role).strip().lower() in ("spy", "civilian"):
            roles.add(str(role).strip().capitalize())
        else:
            problems.append(f"role value {role!r} is not Civilian or Spy")
    return spies, roles


def _claims_from_text(text: str) -> tuple[set, set]:
    spies = {int(m.group(1)) for p in _SPY_PATTERNS for m in p.finditer(text)}
    roles = {m.group(1).capitalize() for p in _ROLE_PATTERNS for m in p.finditer(text)}
    if not spies and (terse := _TERSE.match(text)):
        spies.add(int(terse.group(1)))
    return spies, roles


def score_spy_answer(answer: Any, inst: SpyInstance) -> SpyScore:
    spy, role, reason = parse_spy_answer(answer, inst.n_players)
    spy_ok, role_ok = spy == inst.spy, role == inst.player1_role
    return SpyScore(1.0 if spy_ok and role_ok else 0.0, spy_ok, role_ok, spy, role, reason)


# ----------------------------------------------------------------------------- baselines
# Words that say nothing about the secret word: the rule-based templates' and common fillers.
_STOP = {"makes", "make", "think", "often", "find", "with", "picture", "something", "that", "this", "from",
         "your", "have", "they", "when", "what", "like", "very", "about", "also", "used", "would", "could",
         "there", "their", "which", "word", "describe", "round", "player"}


def _content_words(text: str) -> set:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3 and w not in _STOP}


def odd_one_out_answer(inst: SpyInstance) -> str:
    """The player whose descriptions share the fewest content words with the others' (ties: the
    lower number); Player 1's role follows from it."""
    n = inst.n_players
    words = [set().union(*(_content_words(r[p]) for r in inst.descriptions)) for p in range(n)]
    overlap = [sum(len(words[p] & words[q]) for q in range(n) if q != p) for p in range(n)]
    spy = min(range(n), key=lambda p: (overlap[p], p)) + 1
    return f"Spy: Player {spy}; My role: {SPY if spy == 1 else CIVILIAN}"


def random_answer(inst: SpyInstance, rng: Optional[random.Random] = None) -> str:
    """A uniform guess over the n players (expected accuracy 1/n), seeded by the instance."""
    spy = (rng or random.Random(inst.id)).randint(1, inst.n_players)
    return f"Spy: Player {spy}; My role: {SPY if spy == 1 else CIVILIAN}"


def always_civilian_answer(inst: SpyInstance) -> str:
    """Trust that Player 1 is a Civilian (right 75% of the time) and pick the odd one out of the
    others."""
    n = inst.n_players
    words = [set().union(*(_content_words(r[p]) for r in inst.descriptions)) for p in range(n)]
    others = range(1, n)
    overlap = {p: sum(len(words[p] & words[q]) for q in range(n) if q != p) for p in others}
    spy = min(others, key=lambda p: (overlap[p], p)) + 1
    return f"Spy: Player {spy}; My role: {CIVILIAN}"


BASELINES = {"odd_one_out": odd_one_out_answer, "always_civilian": always_civilian_answer, "random": random_answer}


# ----------------------------------------------------------------------------- env
def read_instances(path) -> list:
    return read_rows(path, SpyInstance.from_dict, "a Find the Spy data set (JSONL from socialgym spy generate)")


class FindTheSpyEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, dataset: Optional[str] = None, instances: Optional[Sequence] = None,
                 n_players: int = DEFAULT_PLAYERS, n_rounds: int = DEFAULT_ROUNDS,
                 render_mode: Optional[str] = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}")
        self.instances = [i if isinstance(i, SpyInstance) else SpyInstance.from_dict(i) for i in (instances or [])]
        if dataset:
            self.instances += read_instances(dataset)
        self.n_players, self.n_rounds = n_players, n_rounds
        self.render_mode = render_mode
        self.observation_space = spaces.Dict({"text": spaces.Text(max_length=self._bound(), min_length=1,
                                                                  charset=_charset())})
        self.action_space = spaces.Text(max_length=MAX_ANSWER_CHARS, min_length=0, charset=_charset())
        self.instance: Optional[SpyInstance] = None
        self._done = False

    def _bound(self) -> int:
        sizes = [(i.n_players, i.n_rounds) for i in self.instances] + [(self.n_players, self.n_rounds)]
        return 1024 + max(p * r for p, r in sizes) * (MAX_DESCRIPTION_CHARS + 16)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        given = (options or {}).get("instance")
        if given is not None:
            inst = given if isinstance(given, SpyInstance) else SpyInstance.from_dict(given)
        elif self.instances:
            inst = self.instances[int(self.np_random.integers(len(self.instances)))]
        else:
            draw = int(self.np_random.integers(0, 2**63 - 1))
            inst = build_instance(f"spy-s{draw}", draw, spy_is_player1=self.np_random.random() < SPY_PERSPECTIVE_SHARE,
                                  n_players=self.n_players, n_rounds=self.n_rounds)
        if len(inst.prompt()) > self.observation_space["text"].max_length:
            raise ValueError(f"instance {inst.id} is too large for this env's observation space")
        self.instance, self._done = inst, False
        return {"text": inst.prompt()}, {"id": inst.id, "n_players": inst.n_players, "n_rounds": inst.n_rounds,
                                         "word": inst.player1_word}

    def step(self, action):
        if self.instance is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over (one answer per instance); call reset()")
        self._done = True
        result = score_spy_answer(action, self.instance)
        info = result.to_dict()
        info.update(answer={"spy": self.instance.spy, "role": self.instance.player1_role},
                    perspective=self.instance.player1_role, id=self.instance.id)
        return {"text": self.instance.prompt()}, result.reward, True, False, info

    def render(self):
        if self.render_mode == "ansi" and self.instance is not None:
            return self.instance.prompt()
        return None


def _charset() -> str:
    import string
    return string.printable + "’‘“”–—…éèàçñöüäß"


def register() -> None:
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=FindTheSpyEnv)
