"""Tournament rosters: balanced sides and seats, recorded seeds, overrides, quick preset."""
from collections import Counter, defaultdict

import pytest

import socialgym_env
from socialgym_benchmarks import tournament as tour

AGENTS = ["scripted:heuristic", "scripted:random", "scripted:tit_for_tat"]


def deal(job):
    env = socialgym_env.make(job.game, **job.config)
    env.reset(seed=job.seed)
    return [(s.role, s.team) for s in env.state.seats]


def test_hidden_role_sides_balanced(toy_spy):
    jobs = tour.plan_game(toy_spy, AGENTS, episodes=4, seed=11)
    assert len(jobs) == 3 * 4                                   # C(3,2) combinations x 4 episodes
    sides = defaultdict(Counter)
    seat_of_spy = Counter()
    for job in jobs:
        roles = deal(job)
        spy = [p for p, (role, _) in zip(job.seats, roles) if role == "spy"]
        town = {p for p, (role, _) in zip(job.seats, roles) if role == "civilian"}
        assert len(spy) == 1 and len(town) == 1 and spy[0] not in town   # one policy per side
        sides[spy[0]]["alt"] += 1
        sides[town.pop()]["main"] += 1
        assert job.tags["sides"] == {"spies": spy[0], "town": job.seats[[r for r, _ in roles].index("civilian")]}
        seat_of_spy[[r for r, _ in roles].index("spy")] += 1
    for policy in AGENTS:
        assert sides[policy]["alt"] == sides[policy]["main"] == 4, sides
    assert len(seat_of_spy) > 1                                 # the seat of the spy varies with the seed


def test_two_player_seats_balanced():
    jobs = tour.plan_game("prisoners_dilemma", AGENTS, episodes=3, seed=0)   # rounded up to 4
    assert len(jobs) == 3 * 4
    seats = defaultdict(Counter)
    for job in jobs:
        assert job.seats[0] != job.seats[1]
        for i, p in enumerate(job.seats):
            seats[p][i] += 1
    assert all(c[0] == c[1] == 4 for c in seats.values()), seats


def test_scripted_only_combinations_get_their_own_episode_count():
    agents = ["llm:a", "scripted:heuristic", "scripted:random"]
    jobs = tour.plan_game("prisoners_dilemma", agents, episodes=2, seed=0, scripted_episodes=8)
    per_matchup = Counter(job.tags["matchup"] for job in jobs)
    assert per_matchup == {"llm:a~scripted:heuristic": 2, "llm:a~scripted:random": 2,
                           "scripted:heuristic~scripted:random": 8}
    # still balanced inside each combination: each policy holds each seat equally often
    scripted = [job.seats for job in jobs if job.tags["matchup"] == "scripted:heuristic~scripted:random"]
    assert Counter(seats[0] for seats in scripted) == {"scripted:heuristic": 4, "scripted:random": 4}
    # a combination with a model policy in it ignores scripted_episodes
    assert len(tour.plan_game("minority_game", agents, episodes=3, seed=0, scripted_episodes=30)) == 3


def test_free_for_all_rotation_balances_seats():
    jobs = tour.plan_game("minority_game", AGENTS, episodes=3, seed=0)       # 5 seats, 3 policies
    assert len(jobs) == 3
    totals, per_seat = Counter(), defaultdict(Counter)
    for job in jobs:
        for i, p in enumerate(job.seats):
            totals[p] += 1
            per_seat[i][p] += 1
    assert set(totals.values()) == {5}
    assert all(sorted(c.values()) == [1, 1, 1] for c in per_seat.values())


def test_plan_is_deterministic_with_recorded_seeds():
    a = tour.plan_tournament(["prisoners_dilemma", "minority_game"], AGENTS, 2, seed=3)
    b = tour.plan_tournament(["prisoners_dilemma", "minority_game"], AGENTS, 2, seed=3)
    c = tour.plan_tournament(["prisoners_dilemma", "minority_game"], AGENTS, 2, seed=4)
    assert [(j.episode_id, j.seed, list(j.seats)) for j in a] == [(j.episode_id, j.seed, list(j.seats)) for j in b]
    assert len({j.episode_id for j in a}) == len(a)
    assert {j.seed for j in a}.isdisjoint({j.seed for j in c})
    assert all(str(j.seed) in j.episode_id and j.tags["matchup"] for j in a)


def test_overrides_and_quick_preset():
    assert tour.parse_overrides(["prisoners_dilemma.rounds=3", "*.max_steps=200", "x.name=abc"]) == {
        "prisoners_dilemma": {"rounds": 3}, "*": {"max_steps": 200}, "x": {"name": "abc"}}
    with pytest.raises(ValueError):
        tour.parse_overrides(["rounds=3"])
    configs = tour.game_configs(["prisoners_dilemma", "centipede"], tour.parse_overrides(["*.rounds=3"]), quick=True)
    # explicit override beats the preset; the preset's turn cap stays
    assert configs["prisoners_dilemma"] == {"rounds": 3, "max_steps": tour.QUICK_MAX_STEPS}
    assert configs["centipede"] == {"subgames": 2, "max_steps": tour.QUICK_MAX_STEPS}
    configs = tour.game_configs(["chess"], tour.parse_overrides(["chess.max_steps=60"]), quick=True)
    assert configs["chess"]["max_steps"] == 60
    with pytest.raises(ValueError):
        tour.game_configs(["prisoners_dilemma"], {"chess": {"x": 1}})


def test_available_games_lists_registered_playable_games():
    games = tour.available_games()
    assert "prisoners_dilemma" in games and set(games) <= set(socialgym_env.game_ids())


def test_demo_preset_finishes_every_game_without_truncation():
    """The main job's configs (``--preset demo``) end every episode by the game's own rules."""
    import socialgym_env
    from socialgym_agents.runner import PolicyPool, run_jobs
    from socialgym_benchmarks.tournament import DEMO_CONFIGS, game_configs, plan_tournament
    games = socialgym_env.game_ids()
    configs = game_configs(games, preset="demo")
    assert configs["chess"] == DEMO_CONFIGS["chess"] and "max_steps" not in configs["coup"]
    jobs = plan_tournament(games, ["scripted:heuristic", "scripted:random", "scripted:win_stay_lose_shift"],
                           2, seed=0, configs=configs)
    records = run_jobs(jobs, PolicyPool())
    assert {r["game"] for r in records} == set(games)
    assert all(r["finished"] and not r.get("failed") and not r.get("truncated") for r in records)


def test_one_process_runs_start_the_longest_games_first(tmp_path, monkeypatch):
    """run_local (one process) queues open-ended games with many seats before fixed-round ones,
    so a long hidden-role game does not start last and run on alone."""
    from socialgym_benchmarks import tournament_backends as backends
    started = []
    monkeypatch.setattr(backends, "run_jobs", lambda jobs, **kw: started.extend(j.game for j in jobs) or [])
    games = ["prisoners_dilemma", "chameleon", "triadic_werewolf", "coup", "resistance"]
    shards = {g: tour.plan_game(g, ["scripted:random"], 1) for g in games}
    backends.run_local(shards, tmp_path, workers=1, progress=False)
    assert list(dict.fromkeys(started)) == ["triadic_werewolf", "resistance", "coup", "prisoners_dilemma", "chameleon"]
