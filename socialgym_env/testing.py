"""Conformance checks for any Social Gym game, built-in or from another package.

One line in a game's test file runs them all::

    from socialgym_env.testing import check_game

    def test_my_game_conforms():
        check_game("my_game")          # the id of a registered game

Each check is also public on its own (``check_api``, ``check_seed``, ``check_parallel_api``,
``check_random_play``, ``check_determinism``, ``check_replay``, ``check_clone``,
``check_hostile_junk``) and raises
``AssertionError`` naming the game, the seed and what differed. PettingZoo's own test
functions do the API work (as PettingZoo and OpenSpiel ship theirs as library code); the rest
plays seeded random legal actions mixed with junk strings, so the invalid-action fallbacks run
too. Every check is seeded: it fails the same way every time.
"""
from __future__ import annotations

import json
import random
import warnings
from typing import Callable, Sequence

from .registry import make

# Strings no game accepts as they stand: empty, blank, near-misses ("eyes" is not "yes"), bad
# JSON, negative numbers, non-ASCII, repeated keywords and an over-long talk line.
JUNK = ("", "   ", "eyes", "vote", "{\"action_type\": 3}", "{broken", "contribute -1", "ßüñ ✓ 🙂",
        "pass pass pass", "say " + "x" * 5000)
REWARDS = {-1.0, 0.0, 1.0}


class _RaisingRepr:
    """An object whose ``__str__`` and ``__repr__`` raise (junk must never be formatted blindly)."""

    def __str__(self):
        raise RuntimeError("__str__ raised")

    def __repr__(self):
        raise RuntimeError("__repr__ raised")


class _ClaimsToBe:
    """An object that lies about its class: ``__class__`` says ``claimed`` (so ``isinstance``
    believes it is one) while ``type()`` tells the truth; it has none of that class's methods."""

    def __init__(self, claimed: type):
        self._claimed = claimed

    @property
    def __class__(self):
        return self._claimed


class _RaisingStr(str):
    """A str subclass whose own methods raise: it is read as the plain string it holds."""

    def strip(self, *args):
        raise RuntimeError("strip raised")

    def __str__(self):
        raise RuntimeError("__str__ raised")

    def __hash__(self):
        raise RuntimeError("__hash__ raised")


def _nested(depth: int, leaf=None):
    """A Python list nested ``depth`` deep, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def hostile_junk() -> dict:
    """Label -> an action a careless or hostile caller might pass to ``step``: huge and odd
    numbers, deep JSON, lone surrogates, NUL, a 1 MB string, bytes, wrong types, objects that
    cannot be printed. Built fresh on each call (some are mutable)."""
    import numpy as np
    deep_json = "[" * 10_000 + "]" * 10_000
    return {
        "int 10**5000": 10**5000, "int -10**5000": -10**5000, "int -1": -1, "int 2**64": 2**64,
        "float 1.5": 1.5, "float nan": float("nan"), "float inf": float("inf"), "float -inf": float("-inf"),
        "complex": 3j, "bool": True, "numpy int64": np.int64(1), "numpy float32": np.float32(2.5),
        "numpy array": np.arange(5), "None": None,
        "deep JSON text (10,000)": deep_json,
        "deep JSON argument (10,000)": '{"action_type": "vote", "argument": ' + deep_json + "}",
        "deep JSON under the length cap": '{"action_type": "vote", "argument": ' + "[" * 1500 + "]" * 1500 + "}",
        "JSON integer past the digit limit": '{"action_type": "vote", "argument": ' + "7" * 3990 + "}",
        "text of a 5000-digit number": "bid " + "9" * 5000,
        "lone surrogate": "\udcff", "lone surrogate in talk": "say half \ud83d an emoji",
        "JSON-escaped lone surrogate": '{"action_type": "say", "argument": "\\ud83d escaped"}',
        "NUL": "\x00", "NUL in a word": "vote \x00", "1 MB string": "x" * 1_000_000,
        "1 MB bytes": b"y" * 1_000_000, "bytes": b"cooperate", "bytearray": bytearray(b"defect"),
        "list": ["vote", "Alice"], "deep list (10,000)": _nested(10_000), "dict": {"action_type": "pass"},
        "set": {1, 2}, "tuple": ("a",), "raising __str__/__repr__": _RaisingRepr(), "object": object(),
        "a type": int, "a function": len, "list holding a huge int": [10**5000],
        "object whose __class__ says str": _ClaimsToBe(str), "object whose __class__ says int": _ClaimsToBe(int),
        "str subclass whose methods raise": _RaisingStr("pass"),
    }
OUTCOMES = {"win", "draw", "loss"}


def _fail(message: str) -> None:
    raise AssertionError(message)       # not `assert`: the checks must hold under python -O too


def grammar_sample(env, agent: str, info: dict, rng: random.Random) -> str:
    """A random legal action of ``agent`` now, drawn from its action grammar with ``rng``."""
    return env.grammar(agent).sample(rng).text


def random_junk_episode(game_id: str, seed: int, junk: Sequence[str] = JUNK, junk_rate: float = 0.2,
                        legal: Callable = grammar_sample, **config):
    """Play one episode of random legal actions (``legal(env, agent, info, rng)``, by default the
    action grammar's sample) mixed with about ``junk_rate`` strings drawn from ``junk``, all from
    ``random.Random(seed)``; ``config`` goes to ``make``. Returns the finished env."""
    env = make(game_id, **config)
    env.reset(seed=seed)
    return play_out(env, random.Random(seed), junk, junk_rate, legal)


def play_out(env, rng: random.Random, junk: Sequence[str] = JUNK, junk_rate: float = 0.2,
             legal: Callable = grammar_sample):
    """Play ``env`` to its end from where it stands, as :func:`random_junk_episode` does."""
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        env.step(rng.choice(junk) if rng.random() < junk_rate else legal(env, agent, info, rng))
    return env


def canonical(record: dict) -> str:
    """An episode record as canonical JSON, the form byte-for-byte comparisons use."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


def check_api(game_id: str, num_cycles: int = 60, **config) -> None:
    """PettingZoo's ``api_test`` on the AEC env."""
    from pettingzoo.test import api_test
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # api_test warns that Text spaces are not Box/Discrete
        api_test(make(game_id, **config), num_cycles=num_cycles)


def check_seed(game_id: str, num_cycles: int = 20, **config) -> None:
    """PettingZoo's ``seed_test``: two envs reset with one seed behave identically."""
    from pettingzoo.test import seed_test
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(lambda: make(game_id, **config), num_cycles=num_cycles)


def check_parallel_api(game_id: str, num_cycles: int = 60, **config) -> None:
    """PettingZoo's ``parallel_api_test`` through ``aec_to_parallel``; only for games whose
    every phase is simultaneous (``GameInfo.simultaneous``)."""
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import aec_to_parallel
    if not make(game_id, **config).game_info.simultaneous:
        _fail(f"{game_id}: GameInfo.simultaneous is False, so it has no parallel form to test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(aec_to_parallel(make(game_id, **config)), num_cycles=num_cycles)


def check_random_play(game_id: str, episodes: int = 6, junk: Sequence[str] = JUNK, **config) -> None:
    """Seeded random legal play mixed with ~20% junk ends every episode within the turn cap,
    with rewards in {-1, 0, 1}, outcomes win/draw/loss and every turn's validity logged."""
    for seed in range(episodes):
        env = random_junk_episode(game_id, seed, junk, **config)
        record = env.episode_record()
        where = f"{game_id} seed {seed}"
        if not record["finished"]:
            _fail(f"{where}: the episode did not finish")
        if record["steps"] > env.max_steps:
            _fail(f"{where}: {record['steps']} steps, over the turn cap of {env.max_steps}")
        if not set(record["rewards"].values()) <= REWARDS:
            _fail(f"{where}: rewards {record['rewards']} are not all in {{-1, 0, 1}}")
        if not set(record["outcomes"].values()) <= OUTCOMES:
            _fail(f"{where}: outcomes {record['outcomes']} are not all win/draw/loss")
        if not all(isinstance(turn["valid"], bool) for turn in record["turns"]):
            _fail(f"{where}: a logged turn has no valid flag")


def check_determinism(game_id: str, seed: int = 123, junk: Sequence[str] = JUNK, **config) -> None:
    """The same seed and the same actions give the same episode record, byte for byte."""
    first = canonical(random_junk_episode(game_id, seed, junk, **config).episode_record())
    again = canonical(random_junk_episode(game_id, seed, junk, **config).episode_record())
    if first != again:
        at = next(i for i, (a, b) in enumerate(zip(first, again)) if a != b) if len(first) == len(again) else None
        _fail(f"{game_id} seed {seed}: two plays of the same actions logged different records"
              + (f" (first difference at character {at}: {first[max(0, at - 60):at + 60]!r})" if at is not None else ""))


def check_replay(game_id: str, seed: int = 3, junk: Sequence[str] = JUNK, **config) -> None:
    """The record/replay round trip: a default log (no observations) replays to exactly the
    observations a fully logged run (``log_observations=True``) holds, and the option changes
    nothing else in the record."""
    from .logs import replay_observations
    config = {k: v for k, v in config.items() if k != "log_observations"}
    lean = random_junk_episode(game_id, seed, junk, junk_rate=0.1, **config).episode_record()
    full = random_junk_episode(game_id, seed, junk, junk_rate=0.1, log_observations=True, **config).episode_record()
    if not lean["turns"]:
        _fail(f"{game_id} seed {seed}: the episode logged no turns")
    if any("observation" in turn for turn in lean["turns"]):
        _fail(f"{game_id}: the default log repeats observations (log_observations is off)")
    stripped = json.loads(canonical(full))
    stripped["config"].pop("log_observations", None)
    for turn in stripped["turns"]:
        turn.pop("observation", None)
    lean_config = json.loads(canonical(lean))
    lean_config["config"].pop("log_observations", None)
    if canonical(stripped) != canonical(lean_config):
        _fail(f"{game_id} seed {seed}: log_observations=True changed more than the logged observations")
    rebuilt = replay_observations(lean)
    for index, (turn, text) in enumerate(zip(full["turns"], rebuilt)):
        if turn["observation"] != text:
            _fail(f"{game_id} seed {seed}: replay rebuilt turn {index}'s observation differently")
    if len(rebuilt) != len(full["turns"]):
        _fail(f"{game_id} seed {seed}: replay rebuilt {len(rebuilt)} observations for {len(full['turns'])} turns")


def check_clone(game_id: str, seed: int = 11, decisions: int = 5, max_steps: int = 60, **config) -> None:
    """``env.clone()`` taken a few decisions in and continued with the same actions gives the
    record the original gives, and stepping a clone leaves the original untouched."""
    env = make(game_id, max_steps=max_steps, **config)
    env.reset(seed=seed)
    rng = random.Random(5)
    for _ in range(decisions):       # a few decisions in, so the clone copies a game in progress
        if env.state.finished:       # a game shorter than that (one Colonel Blotto allocation)
            break
        agent = env.agent_selection
        _, _, terminated, truncated, info = env.last(observe=False)
        env.step(None if terminated or truncated else grammar_sample(env, agent, info, rng))
    restored, other_future = env.clone(), env.clone()
    before = canonical(env.episode_record())
    # junk too, so that random fallbacks draw on the env's own RNG
    play_out(other_future, random.Random(99), ("junk",), junk_rate=0.1)
    if canonical(env.episode_record()) != before:
        _fail(f"{game_id}: stepping a clone changed the original env")
    original = canonical(play_out(env, random.Random(7), ("junk",), junk_rate=0.1).episode_record())
    if not json.loads(original)["finished"]:
        _fail(f"{game_id}: the episode did not finish within {max_steps} steps")
    if canonical(play_out(restored, random.Random(7), ("junk",), junk_rate=0.1).episode_record()) != original:
        _fail(f"{game_id}: a clone continued with the same actions logged a different record")


def check_hostile_junk(game_id: str, seed: int = 0, junk=None, **config) -> dict:
    """Every :func:`hostile_junk` action (or the given ``{label: action}``), after a few seeded
    legal moves, in each invalid-action mode: ``step`` never raises except
    InvalidActionError in "raise" mode (and then nothing changed); a rejected action is logged
    invalid with a reason and then played by the fallback ("fallback") or ends the episode as
    a forfeit ("forfeit"); a non-string is never accepted; and the episode record and the
    infos stay strict JSON (no NaN) that encodes as UTF-8 after every step, and the record
    passes the strict reader's checks (``logs.validate_record``). Returns the
    outcome counts per mode."""
    junk = hostile_junk() if junk is None else junk
    counts: dict = {}
    for mode in ("fallback", "forfeit", "raise"):
        env = make(game_id, **{**config, "invalid_action": mode})
        rng = random.Random(seed)
        episode = seed
        env.reset(seed=episode)
        tally = counts[mode] = {"invalid": 0, "accepted": 0, "raised": 0}
        for label, action in junk.items():
            where = f"{game_id} ({mode}) junk {label!r}"
            episode = _fresh_decision(env, rng, episode)
            tally[_step_junk(env, action, mode, where)] += 1
            _check_strict_record(env, where)
    return counts


def _fresh_decision(env, rng: random.Random, episode: int) -> int:
    """Bring ``env`` to a fresh decision: a few seeded legal moves, a new episode (seed
    ``episode + 1``) whenever one is over. Returns the episode seed now played."""
    for _ in range(3):
        env.skip_dead()
        if not env.agents:
            episode += 1
            env.reset(seed=episode)
        elif rng.random() < 0.5:
            env.step(grammar_sample(env, env.agent_selection, {}, rng))
    env.skip_dead()
    if not env.agents:
        episode += 1
        env.reset(seed=episode)
    return episode


def _step_junk(env, action, mode: str, where: str) -> str:
    """Step ``action`` and check what the env made of it in ``mode``; returns the outcome:
    "raised", "accepted" or "invalid"."""
    from .errors import InvalidActionError
    before = len(env.turns)
    try:
        env.step(action)
    except InvalidActionError:
        if mode != "raise" or len(env.turns) != before:
            _fail(f"{where}: InvalidActionError outside raise mode, or the raised step changed the log")
        return "raised"
    except Exception as err:      # what the check is for: junk must not raise anything else
        _fail(f"{where}: step raised {type(err).__name__}: {str(err)[:200]}")
    if len(env.turns) != before + 1:
        _fail(f"{where}: the step logged {len(env.turns) - before} turns")
    turn = env.turns[-1]
    if turn["valid"]:
        if not issubclass(type(action), str):
            _fail(f"{where}: a {type(action).__name__} was accepted as an action")
        return "accepted"
    _check_rejected_turn(env, turn, mode, where)
    return "invalid"


def _check_rejected_turn(env, turn: dict, mode: str, where: str) -> None:
    """A rejected action's turn: a reason, a clipped raw, and the mode's consequence."""
    from .actions import MAX_ACTION_CHARS
    if mode == "raise" or not turn.get("reason") or len(turn["raw"]) > MAX_ACTION_CHARS:
        _fail(f"{where}: an invalid turn without a reason, too long a raw, or not raised: {turn}")
    if mode == "fallback" and not (turn.get("fallback") and turn["action"]):
        _fail(f"{where}: no fallback action was played")
    if mode == "forfeit" and (turn["action"] is not None or env.state.result is None):
        _fail(f"{where}: the invalid action did not forfeit the episode")


def _check_strict_record(env, where: str) -> None:
    """The episode record and the infos are strict UTF-8 JSON; the record passes the strict reader."""
    from .errors import LogFormatError
    from .logs import validate_record
    record = env.episode_record()
    for name, data in (("episode record", record), ("infos", env.infos)):
        try:
            json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as err:
            _fail(f"{where}: the {name} is not strict UTF-8 JSON: {str(err)[:200]}")
    try:
        validate_record(record)
    except LogFormatError as err:
        _fail(f"{where}: the episode record fails the strict reader: {err}")


def check_game(game_id: str, episodes: int = 6, **config) -> None:
    """Every check above on one registered game (the parallel API test only for simultaneous
    games); ``config`` goes to each ``make``."""
    check_api(game_id, **config)
    check_seed(game_id, **config)
    if make(game_id, **config).game_info.simultaneous:      # the configured game's (a config may change it)
        check_parallel_api(game_id, **config)
    check_random_play(game_id, episodes=episodes, **config)
    check_determinism(game_id, **config)
    check_replay(game_id, **config)
    check_clone(game_id, **{k: v for k, v in config.items() if k != "max_steps"})
    check_hostile_junk(game_id, **{k: v for k, v in config.items() if k != "invalid_action"})


__all__ = ["JUNK", "canonical", "check_api", "check_clone", "check_determinism", "check_game", "check_hostile_junk",
           "check_parallel_api", "check_random_play", "check_replay", "check_seed", "grammar_sample", "hostile_junk",
           "play_out", "random_junk_episode"]
