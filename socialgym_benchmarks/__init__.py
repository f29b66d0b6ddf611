"""Benchmarks, in rooms by purpose, each layer importing only the ones below it:

- :mod:`.ratings`: the Bradley–Terry fit, bootstrap and profile intervals, online Elo, win
  rates, the log records they read and the ratings-validity check;
- :mod:`.leaderboard`: the leaderboard's numbers, its files and the episode replays;
- :mod:`.tournament`: planning and running tournaments (fixed and adaptive), progress, the
  reference pool;
- :mod:`.studies`: research studies (SPaRTan, Triadic, self-play, Find the Spy, ...);
- :mod:`.cli`: the ``socialgym`` commands on top.

``perf/`` holds benchmark scripts run from a checkout (``python socialgym_benchmarks/perf/NAME.py``);
it is not a package and is not shipped in the wheel.
"""
