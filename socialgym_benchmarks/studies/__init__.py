"""Research studies built on the tournament and the ratings, each run on its own (``python -m
socialgym_benchmarks.studies.NAME`` or its ``socialgym`` command) and written up in the docs:
SPaRTan (:mod:`.spartan`), the Triadic Werewolf study (:mod:`.triadic`), self-play on Kuhn poker
and its sizing, credit and learned-strategy checks (``selfplay_*``), Find the Spy
(:mod:`.find_the_spy`), SocialMaze baselines, the branching-pairs null, masked RL, the
role-gap games, and two studies of the estimators themselves: interval coverage and
adaptive versus round-robin tournaments."""
