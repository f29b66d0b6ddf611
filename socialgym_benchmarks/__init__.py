"""Benchmarks: Elo tournaments (``tournament``), Bradley–Terry ratings (``elo``), the
leaderboard (``leaderboard``), episode replays (``replay``), the CLI sub-app (``cli``) and
performance suites (``perf``)."""
