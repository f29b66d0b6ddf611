"""Social Gym: multi-agent social games as PettingZoo AEC envs with text observations.

>>> import socialgym_env
>>> env = socialgym_env.make("prisoners_dilemma")
>>> [g["id"] for g in socialgym_env.list_games()][:2]
['prisoners_dilemma', 'chicken']
"""
from .actions import Action, ActionError, ActionSpec, Grammar
from .env import SocialGymEnv
from .errors import (ConfigError, GameOverError, InvalidActionError, NotYourTurnError,
                     SocialGymError, UnknownGameError)
from .game import Game, GameInfo, Phase
from .registry import game_class, game_ids, list_games, make, register_all
from .state import State

__version__ = "0.1.0"

register_all()

__all__ = ["Action", "ActionError", "ActionSpec", "ConfigError", "Game", "GameInfo", "GameOverError",
           "Grammar", "InvalidActionError", "NotYourTurnError", "Phase", "SocialGymEnv", "SocialGymError",
           "State", "UnknownGameError", "game_class", "game_ids", "list_games", "make"]
