"""Ratings from episode records: the Bradley–Terry fit on the Elo scale and everything around it.

- :mod:`.battles`: the pairwise outcomes of episodes (:class:`Battles`), ties, the battle graph;
- :mod:`.fit`: the regularised Bradley–Terry fit (:func:`fit_bt`, :func:`fit_bt_batch`);
- :mod:`.bootstrap`: resampled win counts by episode or battle (:func:`bootstrap_wins`);
- :mod:`.profile`: Firth profile-likelihood intervals of ratings and contrasts;
- :mod:`.estimate`: a rating with its interval per competitor (:func:`rate`), the games-equal fit;
- :mod:`.online`: the online Elo of the paper's released code;
- :mod:`.win_rates`: win counts and Wilson intervals;
- :mod:`.records`: the episode records a log folder holds, and each game's metadata;
- :mod:`.validity`: which rating choice predicts held-out outcomes best (``socialgym ratings-validity``).

Callers use the package: ``from socialgym_benchmarks import ratings as bt``; ``bt.fit_bt(...)``.
"""
from .battles import (TIES, Battles, check_ties, collect_battles, components, episode_pairs, games_equal_battles,
                      is_team_record, restrict, seat_values)
from .bootstrap import (N_BOOTSTRAP, PoissonTable, bootstrap_wins, episode_patterns, multinomial_counts,
                        poisson_counts)
from .estimate import INTERVALS, Ratings, finite_or_none, games_equal_fit, rate, rate_records, stream_seed
from .fit import ANCHOR, BASE, C_DEFAULT, LN_BASE, SCALE, bt_objective, fit_bt, fit_bt_batch, to_elo
from .online import ONLINE_K, online_elo
from .profile import (PROFILE_REACH, PROFILE_TOL, contrast_excludes, contrast_interval, design_effect, estimable,
                      profile_elo_intervals, profile_interval)
from .records import game_info, load_records, skipped_note
from .win_rates import seat_win_counts, wilson_interval, win_rates

__all__ = ["ANCHOR", "BASE", "Battles", "C_DEFAULT", "INTERVALS", "LN_BASE", "N_BOOTSTRAP", "ONLINE_K",
           "PROFILE_REACH", "PROFILE_TOL", "PoissonTable", "Ratings", "SCALE", "TIES", "bootstrap_wins",
           "bt_objective", "check_ties", "collect_battles", "components", "contrast_excludes", "contrast_interval",
           "design_effect", "episode_pairs", "episode_patterns", "estimable", "finite_or_none", "fit_bt",
           "fit_bt_batch", "game_info", "games_equal_battles", "games_equal_fit", "is_team_record", "load_records",
           "multinomial_counts", "online_elo", "poisson_counts", "profile_elo_intervals", "profile_interval", "rate",
           "rate_records", "restrict", "seat_values", "seat_win_counts", "skipped_note", "stream_seed", "to_elo",
           "wilson_interval", "win_rates"]
