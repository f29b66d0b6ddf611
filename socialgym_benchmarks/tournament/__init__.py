"""Elo tournaments: planning rosters with balanced seats and sides and running them
(:mod:`.plan`), the local-process and Ray runners (:mod:`.backends`) and their progress line
(:mod:`.progress`), adaptive tournaments that stop when the ranking is settled
(:mod:`.adaptive`), and rating a newcomer against the shipped reference pool (:mod:`.reference`,
rebuilt by ``python -m socialgym_benchmarks.tournament.reference build``; not imported here, so
that command runs it as a script without a second copy of the module)."""
from .adaptive import AdaptiveResult, adaptive_tournament
from .plan import (DEFAULT_AGENTS, PRESETS, TournamentResult, available_games, episode_id, episode_seed, game_configs,
                   parse_game_episodes, parse_overrides, parse_rosters, plan_game, plan_tournament, run_tournament,
                   tournament)

__all__ = ["AdaptiveResult", "DEFAULT_AGENTS", "PRESETS", "TournamentResult", "adaptive_tournament",
           "available_games", "episode_id", "episode_seed", "game_configs", "parse_game_episodes", "parse_overrides",
           "parse_rosters", "plan_game", "plan_tournament", "run_tournament", "tournament"]
