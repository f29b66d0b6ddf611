"""Social Gym: multi-agent social games as PettingZoo AEC envs with text observations.

Usage:

    >>> import socialgym_env
    >>> env = socialgym_env.make("prisoners_dilemma")
    >>> [g["id"] for g in socialgym_env.list_games()][:2]
    ['prisoners_dilemma', 'chicken']
"""
from . import patterns
from .actions import Action, ActionError, ActionSpec, Choice, Grammar, Int, Player, Text, Word
from .env import SocialGymEnv
from .errors import (ConfigError, EngineError, GameOverError, InvalidActionError, NotYourTurnError,
                     SocialGymError, UnknownAgentError, UnknownGameError)
from .game import CUSTOM, MEDIAN, TEAM, TWO_PLAYER, WINNER_TAKE_ALL, Game, GameInfo, Phase
from .registry import (env_id, game_class, game_ids, list_games, make, register_all, register_game,
                       unregister_game)
from .state import State

__version__ = "0.1.0"

register_all()

# What a game author needs: the game and phase types, the action spec types, the outcome rules,
# the shared talk/vote patterns and the registry.
__all__ = ["Action", "ActionError", "ActionSpec", "CUSTOM", "Choice", "ConfigError", "EngineError", "Game",
           "GameInfo", "GameOverError", "Grammar", "Int", "InvalidActionError", "MEDIAN", "NotYourTurnError",
           "Phase", "Player", "SocialGymEnv", "SocialGymError", "State", "TEAM", "TWO_PLAYER", "Text",
           "UnknownAgentError", "UnknownGameError", "WINNER_TAKE_ALL", "Word", "env_id", "game_class", "game_ids", "list_games",
           "make", "patterns", "register_game", "unregister_game"]
