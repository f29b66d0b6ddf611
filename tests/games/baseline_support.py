"""Play and statistics shared by the heuristic-vs-random baseline tests (test_*_baseline.py).

Each test file keeps its own numbers (seeds, config, seating, test and threshold); this module
only builds the seatings, plays the seeded episodes and runs the binomial test, so that every
baseline is judged the same way."""
from statistics import fmean

from scipy.stats import binomtest

import socialgym_env
from socialgym_agents.base import Request
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs

HEURISTIC, RANDOM = "scripted:heuristic", "scripted:random"


# ------------------------------------------------------------------ playing
def play_matchups(game, matchups, config=None, pool=None) -> list[dict]:
    """Play each ``(seed, seats)`` through socialgym_agents.runner, as the CLI does; returns the records in
    order. A failed episode fails the test with its error."""
    config = dict(config or {}, log_observations=False)   # nothing reads the observations
    jobs = [EpisodeJob(game, seed, list(seats), config=config) for seed, seats in matchups]
    records = run_jobs(jobs, pool or PolicyPool(seed=0))
    for record in records:
        assert not record.get("failed"), record.get("error")
    return records


def rotated_seats(shift, num_seats, heuristic_seats=1, spec=HEURISTIC):
    """``heuristic_seats`` consecutive seats from ``shift`` (mod ``num_seats``) play ``spec``, the
    rest random: shifting through every seat balances any seat advantage."""
    seats = [RANDOM] * num_seats
    for j in range(heuristic_seats):
        seats[(shift + j) % num_seats] = spec
    return seats


def seat_rotation_wins(game, seeds, spec=HEURISTIC, pool=None) -> tuple[int, int, int]:
    """For each seed one ``spec`` seat against random seats, rotated through every seat.
    Returns (``spec``'s wins, episodes, seats); random play would win a seat's share, 1/seats."""
    num_seats = socialgym_env.game_class(game).info.num_players
    matchups = [(seed, rotated_seats(seat, num_seats, spec=spec)) for seed in seeds for seat in range(num_seats)]
    wins = sum(heuristic_won(record, spec) for record in play_matchups(game, matchups, pool=pool))
    return wins, len(matchups), num_seats


def role_balanced_wins(game, seeds, config=None) -> dict:
    """For each seed two episodes on the seed's deal: the heuristic plays the main-role side and
    random the other side, then the other way round (random vs random would win exactly half).
    Returns the heuristic's wins as ``{"main": n, "alt": n}``."""
    config = config or {}
    main = socialgym_env.game_class(game).info.main_role
    matchups, sides = [], []
    for seed in seeds:
        env = socialgym_env.make(game, **config)
        env.reset(seed=seed)
        roles = [env.state.role(a) for a in env.possible_agents]
        for side in ("main", "alt"):
            matchups.append((seed, [HEURISTIC if (role == main) == (side == "main") else RANDOM for role in roles]))
            sides.append(side)
    wins = {"main": 0, "alt": 0}
    for side, record in zip(sides, play_matchups(game, matchups, config)):
        wins[side] += heuristic_won(record)
    return wins


def assert_role_balanced_heuristic_beats_random(game, seeds, config=None, alpha=0.01):
    """Over the role-balanced episodes the heuristic wins significantly more than half, and the
    main side's heuristic wins most of its games."""
    seeds = list(seeds)
    wins = role_balanced_wins(game, seeds, config)
    total = wins["main"] + wins["alt"]
    assert_significantly_better(total, 2 * len(seeds) - total, alpha=alpha)
    assert wins["main"] > len(seeds) // 2, wins


def play_side(env, pool, seed, side, side_spec, other_spec) -> bool:
    """One episode on a reused env (building an env is the slow part); mirrors
    socialgym_agents.runner.play_episode. The team ``side`` plays ``side_spec``, everyone else
    ``other_spec``. Returns whether ``side`` won."""
    env.reset(seed=seed)
    specs = {a: side_spec if env.state.team(a) == side else other_spec for a in env.possible_agents}
    for agent in env.possible_agents:
        pool.get(specs[agent]).reset((str(seed), agent), seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        key = (str(seed), agent)
        env.step(pool.get(specs[agent]).act_batch([Request(key, env.observe(agent), info)])[0].action)
    return any(env.state.team(a) == side for a in env.state.result.winners)


def paired_side_counts(game, side, opponent, seeds, config=None, pool=None) -> tuple[int, int]:
    """Each seed played twice with the same deal and opponents: ``side`` by the heuristic, then by
    random. Returns (seeds only the heuristic won, seeds only random won)."""
    env = socialgym_env.make(game, log_observations=False, **(config or {}))
    pool = pool or PolicyPool(seed=0)
    better = worse = 0
    for seed in seeds:
        h = play_side(env, pool, seed, side, HEURISTIC, opponent)
        r = play_side(env, pool, seed, side, RANDOM, opponent)
        better += h and not r
        worse += r and not h
    return better, worse


def assert_plays_cleanly_through_the_runner(game, config=None, seed=7):
    """An all-heuristic table finishes through socialgym_agents.runner without one invalid action."""
    num_seats = len(socialgym_env.make(game, **dict(config or {})).possible_agents)
    record, = run_jobs([EpisodeJob(game, seed=seed, seats=[HEURISTIC] * num_seats, config=dict(config or {}))])
    assert record["finished"] and not record.get("failed"), record.get("error")
    assert sum(record["invalid_actions"].values()) == 0


# ------------------------------------------------------------------ scoring
def seats_playing(record, spec):
    return [r["agent"] for r in record["roster"] if r["policy"] == spec]


def heuristic_won(record, spec=HEURISTIC) -> bool:
    """Whether the (first) seat played by ``spec`` won; a draw is not a win."""
    return record["rewards"][seats_playing(record, spec)[0]] > 0


def reward_gap(record, spec=HEURISTIC, other=RANDOM) -> float:
    """Mean reward of the ``spec`` seats minus that of the ``other`` seats."""
    rewards = record["rewards"]
    mine, theirs = seats_playing(record, spec), seats_playing(record, other)
    return fmean(rewards[a] for a in mine) - fmean(rewards[a] for a in theirs)


def sign_counts(values) -> tuple[int, int]:
    """(how many are positive, how many negative); zeros (ties) drop out of a sign test."""
    values = list(values)
    return sum(v > 0 for v in values), sum(v < 0 for v in values)


def assert_significantly_better(successes, failures, alpha=0.01, chance=0.5, alternative="greater"):
    """Binomial test that ``successes`` of ``successes + failures`` beat the ``chance`` rate:
    above it and p < ``alpha``."""
    trials = successes + failures
    assert trials > 0, "no decisive episodes: nothing to test"
    p = binomtest(successes, trials, chance, alternative=alternative).pvalue
    assert successes > chance * trials and p < alpha, (successes, failures, p)


def assert_interval_above(successes, failures, chance=0.5, level=0.99):
    """The two-sided Clopper-Pearson interval (``level``) of the success rate lies wholly above
    ``chance``; returns the interval, for the test's message."""
    trials = successes + failures
    assert trials > 0, "no decisive episodes: nothing to test"
    interval = binomtest(successes, trials, chance).proportion_ci(confidence_level=level)
    assert interval.low > chance, (successes, failures, interval)
    return interval
