"""The game catalogue: ids, config validation, ``make`` and PettingZoo registration."""
from __future__ import annotations

import difflib
import importlib
import re
import sys
import warnings
from importlib.metadata import entry_points
from typing import Optional

import pettingzoo

from .actions import safe_repr
from .env import ENGINE_CONFIG, INVALID_MODES, SocialGymEnv
from .errors import ConfigError, EngineError, UnknownGameError
from .game import Game

_ENV_ID = re.compile(r"socialgym/(.+)-v(\d+)")

# game id -> module under socialgym_env.games that defines ``GAME`` (its Game subclass).
GAME_MODULES = {
    "prisoners_dilemma": "prisoners_dilemma",
    "chicken": "chicken",
    "battle_of_the_sexes": "battle_of_the_sexes",
    "stag_hunt": "stag_hunt",
    "minority_game": "minority_game",
    "rock_paper_scissors": "rock_paper_scissors",
    "public_goods": "public_goods",
    "centipede": "centipede",
    "bargaining": "bargaining",
    "liars_dice": "liars_dice",
    "skull": "skull",
    "coup": "coup",
    "sheriff_of_nottingham": "sheriff_of_nottingham",
    "survivor": "survivor",
    "dead_last": "dead_last",
    "chess": "chess",
    "chameleon": "chameleon",
    "insider": "insider",
    "spyfall": "spyfall",
    "undercover": "undercover",
    "resistance": "resistance",
    "avalon": "avalon",
    "codenames": "codenames",
    "werewolves": "werewolves",
    "triadic_werewolf": "triadic_werewolf",
    "kuhn_poker": "kuhn_poker",
    "leduc_poker": "leduc_poker",
    "hanabi": "hanabi",
    "colonel_blotto": "colonel_blotto",
}


# Games from outside the package (register_game, --game-module, entry points): game id -> how a
# fresh process finds it again, "pkg.mod" (a module defining GAME) or "pkg.mod:Class". Spawned
# tournament workers and Ray actors start with the built-in catalogue only and replay these.
_OUTSIDE: dict = {}

# Installed packages add games through this entry-point group, one entry per game id:
#   [project.entry-points."socialgym.games"]
#   my_game = "my_package.my_game"            # a module defining GAME, or "my_package:MyGame"
GAME_GROUP = "socialgym.games"
unavailable_games: dict = {}          # entry-point name -> why it could not be loaded


def _load_reference(reference: str) -> type[Game]:
    """The Game class a reference names: "pkg.mod" (its ``GAME``) or "pkg.mod:Attr"."""
    module_name, _, attr = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"cannot import game module {module_name!r}: {err}") from None
    target = module
    for part in (attr or "GAME").split("."):
        target = getattr(target, part, None)
        if target is None:
            what = f"no {attr!r}" if attr else "no GAME (the module must set GAME = YourGameClass)"
            raise ConfigError(f"game module {module_name!r} has {what}")
    if not (isinstance(target, type) and issubclass(target, Game)):
        raise ConfigError(f"{reference!r} is not a Game subclass")
    return target


def _reference_of(cls: type[Game]) -> Optional[str]:
    """"module:qualname" when a fresh process can import the class by that name, else None (a
    class defined in __main__ or inside a function exists only in the process that made it)."""
    module, qualname = cls.__module__, cls.__qualname__
    if module in ("__main__", "__mp_main__") or "<locals>" in qualname:
        return None
    found = sys.modules.get(module)          # the module that defined it (never imported again here)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}:{qualname}" if found is cls else None


def register_game(game: "type[Game] | str", replace: bool = False) -> None:
    """Add a game from outside the package: a Game subclass, or a reference to one (a dotted
    module path whose module defines ``GAME``, or ``"pkg.mod:Class"``). It then works with
    ``make``, ``list_games`` and PettingZoo (``socialgym/<id>-v<version>``), and reaches the
    tournament's worker processes when a fresh process can import it (see
    :func:`outside_registrations`). A built-in game is only replaced with ``replace=True``."""
    if isinstance(game, str):
        cls = _load_reference(game)
    elif isinstance(game, type) and issubclass(game, Game):
        cls = game
    else:
        raise TypeError(f"register_game needs a Game subclass or a 'pkg.mod' / 'pkg.mod:Class' string, "
                        f"got {type(game).__name__} {safe_repr(game, 60)}")
    game_id = cls.info.id
    if game_id in GAME_MODULES and not replace:
        raise ConfigError(f"a game {game_id!r} is already registered; pass replace=True to replace it")
    _unregister_with_pettingzoo(game_id)
    GAME_MODULES[game_id] = cls
    _OUTSIDE[game_id] = game if isinstance(game, str) else _reference_of(cls)
    _register_with_pettingzoo(game_id)


def unregister_game(game_id: str) -> None:
    """Remove a game added with :func:`register_game` (tests use it to clean up)."""
    _unregister_with_pettingzoo(game_id)
    GAME_MODULES.pop(game_id, None)
    _OUTSIDE.pop(game_id, None)


def outside_registrations(game_ids=None) -> dict:
    """``{game id: reference}`` for the games registered from outside the package (all, or
    those among ``game_ids``), for a worker process to replay with
    :func:`restore_registrations`. Raises ConfigError, before anything is played, for a game
    that a fresh process could not import (defined in ``__main__`` or inside a function)."""
    wanted = _OUTSIDE if game_ids is None else [g for g in game_ids if g in _OUTSIDE]
    lost = sorted(g for g in wanted if _OUTSIDE[g] is None)
    if lost:
        raise ConfigError(
            f"game(s) {', '.join(lost)} were registered from a class that worker processes cannot "
            "import (defined in __main__ or inside a function): define the class in an importable "
            "module and register it by its path (register_game('pkg.mod'), socialgym --game-module "
            "pkg.mod, or a socialgym.games entry point), or play with one worker")
    return {g: _OUTSIDE[g] for g in wanted}


def restore_registrations(references: dict) -> None:
    """Register, in this process, the games :func:`outside_registrations` listed in another."""
    for game_id, reference in references.items():
        if game_id not in _OUTSIDE or _OUTSIDE[game_id] != reference:
            register_game(reference, replace=True)


def _load_entry_point_games() -> None:
    """Register every installed game of the ``socialgym.games`` group. A broken one is
    reported (a warning, and ``unavailable_games``) and does not break ``import socialgym_env``."""
    for entry in sorted(entry_points(group=GAME_GROUP), key=lambda e: e.name):
        if entry.name in GAME_MODULES and entry.name not in _OUTSIDE:
            why = f"its id {entry.name!r} is a built-in game"
        else:
            try:
                cls = _load_reference(entry.value)
                why = None if cls.info.id == entry.name else \
                    f"the entry point is named {entry.name!r} but the game's id is {cls.info.id!r}"
            except (ConfigError, EngineError, ValueError) as err:
                why = str(err)
        if why:
            unavailable_games[entry.name] = why
            warnings.warn(f"socialgym: installed game {entry.name!r} ({entry.value}) is not loaded: {why}",
                          stacklevel=2)
            continue
        register_game(entry.value, replace=True)


def env_id(game_id: str) -> str:
    """The PettingZoo id of a game, carrying its version: ``socialgym/werewolves-v0``."""
    return f"socialgym/{game_id}-v{game_class(game_id).info.version}"


# The longest game id a message or a suggestion looks at (game ids are a few words).
MAX_ID_CHARS = 100
# The bound of a config count whose range has no upper bound (rounds, max_plies, ...): far past
# any playable episode, short of a value that would hang or exhaust memory at setup.
MAX_OPEN_COUNT = 1_000_000


def close_ids(wanted: str, ids, limit: int = 3) -> list[str]:
    """The ids a mistyped ``wanted`` most likely meant, best first: ids it starts, then by
    similarity of the whole id (difflib), so ``werewolf`` finds ``werewolves`` before
    ``triadic_werewolf`` and ``chese`` finds ``chess``."""
    if len(wanted) > MAX_ID_CHARS:        # no id is this long; difflib on it would take seconds
        return []
    key = wanted.replace("-", "_").lower()
    scored = [(not g.startswith(key), -difflib.SequenceMatcher(None, key, g).ratio(), g) for g in ids]
    return [g for prefix_miss, score, g in sorted(scored) if not prefix_miss or key in g or -score >= 0.6][:limit]


def game_class(game_id: str) -> type[Game]:
    if not isinstance(game_id, str):
        raise TypeError(f"a game id is a string such as 'werewolves' (socialgym_env.game_ids() lists them), "
                        f"got {type(game_id).__name__} {safe_repr(game_id, 60)}")
    wanted_version = None
    if game_id not in GAME_MODULES:
        # Accept the PettingZoo-style id too: socialgym/<id>-v<version>.
        match = _ENV_ID.fullmatch(game_id)
        stripped = match.group(1) if match else game_id
        wanted_version = int(match.group(2)) if match else None
        if stripped not in GAME_MODULES:
            close = close_ids(stripped, GAME_MODULES)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise UnknownGameError(f"unknown game {safe_repr(game_id, MAX_ID_CHARS)}.{hint} "
                                   f"Valid games: {', '.join(sorted(GAME_MODULES))}")
        game_id = stripped
    module_name = GAME_MODULES[game_id]
    if isinstance(module_name, type):
        cls = module_name
    else:
        name = module_name if "." in module_name else f"socialgym_env.games.{module_name}"
        # make() asks at every env: an imported module is one dict look-up, not importlib's path
        module = sys.modules.get(name) or importlib.import_module(name)
        cls = module.GAME
    if wanted_version is not None and wanted_version != cls.info.version:
        raise UnknownGameError(f"{game_id} is at version {cls.info.version} here, not {wanted_version} "
                               f"(use socialgym/{game_id}-v{cls.info.version})")
    return cls


def list_games() -> list[dict]:
    """The catalogue: one metadata dict per registered game, in catalogue order."""
    return [game_class(g).info.to_dict() for g in GAME_MODULES]


def game_ids() -> list[str]:
    return list(GAME_MODULES)


def resolve_config(cls: type[Game], config: dict) -> dict:
    """Merge defaults and check every key and value; errors name what is valid."""
    defaults = dict(ENGINE_CONFIG)
    defaults.update(cls.config_defaults)
    defaults.setdefault("num_players", cls.info.num_players)
    unknown = sorted(set(config) - set(defaults) - {"render_mode"})
    if unknown:
        raise ConfigError(f"{cls.info.id}: unknown config key(s) {unknown}; valid keys: {sorted(defaults)}")
    merged = dict(defaults)
    merged.update({k: v for k, v in config.items() if k != "render_mode"})
    _check_types(cls, defaults, merged)
    _check_engine_keys(cls, merged)
    _check_game_keys(cls, merged)
    return merged


def _check_types(cls: type[Game], defaults: dict, merged: dict) -> None:
    """Every value of the type of its default (an int stands for a float, and becomes one;
    a bool is no int); a None on either side is not checked."""
    for key, default in defaults.items():
        value = merged[key]
        if default is None or value is None:
            continue
        expected = type(default)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            merged[key] = value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{cls.info.id}: config {key!r} must be {expected.__name__}, got {safe_repr(value, 80)}")


def _check_engine_keys(cls: type[Game], merged: dict) -> None:
    """The keys every game has: invalid_action, max_steps, num_players."""
    if merged["invalid_action"] not in INVALID_MODES:
        raise ConfigError(f"{cls.info.id}: invalid_action must be one of {INVALID_MODES}, "
                          f"got {safe_repr(merged['invalid_action'], 80)}")
    if merged["max_steps"] is not None and (not isinstance(merged["max_steps"], int) or merged["max_steps"] < 1):
        raise ConfigError(f"{cls.info.id}: max_steps must be a positive integer, got {safe_repr(merged['max_steps'], 80)}")
    counts = getattr(cls, "player_counts", (cls.info.num_players,))
    if merged["num_players"] not in counts:
        allowed = " or ".join(map(str, counts))
        raise ConfigError(f"{cls.info.id} is played by {allowed} players, got {safe_repr(merged['num_players'], 80)}")


def _check_game_keys(cls: type[Game], merged: dict) -> None:
    """The game's own bounds: its ranges, its choices, then its ``validate_config``."""
    for key, (low, high) in cls.config_ranges.items():
        value = merged[key]
        if value < low or value > (MAX_OPEN_COUNT if high is None else high):
            bounds = (f"at least {low}" if value < low and high is None
                      else f"from {low} to {MAX_OPEN_COUNT if high is None else high}")
            raise ConfigError(f"{cls.info.id}: {key} must be {bounds}, got {safe_repr(value, 80)}")
    for key, allowed in cls.config_choices.items():
        if merged[key] not in allowed:
            raise ConfigError(f"{cls.info.id}: config {key!r} must be one of {list(allowed)}, "
                              f"got {safe_repr(merged[key], 80)}")
    try:
        cls.validate_config(merged)
    except ConfigError:
        raise
    except ValueError as err:
        raise ConfigError(f"{cls.info.id}: {err}") from None


# Checked configs by (game class, given keys, value types and values): make() is called once
# per episode by runners, and checking a config costs as much as a short episode's reset.
# Bounded; configs holding other than plain scalars are checked every time. The value's type
# is part of the key, so 1, 1.0 and True (equal as dict keys) are checked apart.
_RESOLVED: dict = {}
_RESOLVED_MAX = 1024
_SCALARS = (str, int, float, bool, type(None))


def _resolve_config_cached(cls: type[Game], config: dict) -> dict:
    if not all(type(value) in _SCALARS for value in config.values()):
        return resolve_config(cls, config)
    key = (cls, tuple(sorted((k, type(v).__name__, v) for k, v in config.items())))
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = resolve_config(cls, config)
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[key] = resolved
    return dict(resolved)                 # each env owns its config dict


def make(game_id: str, render_mode: Optional[str] = None, **config) -> SocialGymEnv:
    """Create the AEC env of a game: ``socialgym_env.make("werewolves", invalid_action="raise")``."""
    cls = game_class(game_id)
    if render_mode is not None and render_mode not in SocialGymEnv.metadata["render_modes"]:
        raise ConfigError(f"render_mode must be one of {SocialGymEnv.metadata['render_modes']}, "
                          f"got {safe_repr(render_mode, 80)}")
    return SocialGymEnv(cls, _resolve_config_cached(cls, config), render_mode=render_mode)


def _register_with_pettingzoo(game_id: str) -> None:
    name = env_id(game_id)
    if name not in pettingzoo.aec_registry:
        pettingzoo.register("aec", name, entry_point=make, kwargs={"game_id": game_id})


def _unregister_with_pettingzoo(game_id: str) -> None:
    for name in [n for n in pettingzoo.aec_registry if n.startswith(f"socialgym/{game_id}-v")]:
        pettingzoo.aec_registry.pop(name)


def register_all() -> None:
    """Register every built-in and installed (entry-point) game with PettingZoo."""
    for game_id in GAME_MODULES:
        _register_with_pettingzoo(game_id)
    _load_entry_point_games()
