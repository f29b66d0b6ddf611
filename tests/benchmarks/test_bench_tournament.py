"""Tournament rosters: balanced sides and seats, recorded seeds, overrides, quick preset."""
from collections import Counter, defaultdict

import pytest

import socialgym_env
from socialgym_benchmarks.tournament import plan as tour

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


def _plan_rows(jobs):
    return [(j.game, j.episode_id, j.seed, list(j.seats), j.config, j.tags) for j in jobs]


def test_a_game_s_own_roster_and_episodes_change_that_game_alone():
    games = ["prisoners_dilemma", "kuhn_poker", "chicken"]
    roster = ["scripted:heuristic", "scripted:tit_for_tat", "scripted:grim_trigger"]

    def plan(**kw):
        return tour.plan_tournament(games, AGENTS, 2, seed=5, scripted_episodes=6, **kw)
    plain = plan()
    jobs = plan(rosters={"kuhn_poker": roster}, game_episodes={"kuhn_poker": 3})
    # the other games are planned as without the overrides: same ids, seeds and seats
    assert _plan_rows(j for j in jobs if j.game != "kuhn_poker") == _plan_rows(j for j in plain if j.game != "kuhn_poker")
    kuhn = [j for j in jobs if j.game == "kuhn_poker"]
    assert {p for j in kuhn for p in j.seats} == set(roster)
    # its own count beats scripted_episodes (6) and episodes (2); rounded up to balance the 2 seats
    assert Counter(j.tags["matchup"] for j in kuhn) == {
        "~".join(pair): 4 for pair in [roster[:2], roster[::2], roster[1:]]}
    for matchup in {j.tags["matchup"] for j in kuhn}:
        first_seats = Counter(j.seats[0] for j in kuhn if j.tags["matchup"] == matchup)
        assert sorted(first_seats.values()) == [2, 2]
    assert _plan_rows(jobs) == _plan_rows(plan(rosters={"kuhn_poker": roster}, game_episodes={"kuhn_poker": 3}))
    assert len({j.episode_id for j in jobs}) == len(jobs)
    # an episode count alone keeps the roster: each combination gets its own count
    counted = [j for j in plan(game_episodes={"chicken": 5}) if j.game == "chicken"]
    assert set(Counter(j.tags["matchup"] for j in counted).values()) == {6}


def test_each_roster_is_checked_for_its_own_game_before_anything_is_played(tmp_path):
    from socialgym_agents.registry import PolicySpecError
    out = tmp_path / "out"
    # scripted:constant:defect is a policy of the Prisoner's Dilemma, not of Kuhn poker
    with pytest.raises(PolicySpecError, match="not an action of kuhn_poker"):
        tour.tournament(["prisoners_dilemma", "kuhn_poker"], ["scripted:random"], out=out,
                        rosters={"kuhn_poker": ["scripted:random", "scripted:constant:defect"]})
    with pytest.raises(ValueError, match="--roster names chess, not among this tournament's games"):
        tour.tournament(["prisoners_dilemma"], AGENTS, out=out, rosters={"chess": AGENTS})
    with pytest.raises(ValueError, match="--game-episodes names chess"):
        tour.tournament(["prisoners_dilemma"], AGENTS, out=out, game_episodes={"chess": 3})
    with pytest.raises(KeyError, match="unknown game 'nope'"):
        tour.tournament(["prisoners_dilemma"], AGENTS, out=out, rosters={"nope": AGENTS})
    assert not out.exists()
    # --agents are checked only for the games they play: the roster replaces them in Kuhn poker
    result = tour.tournament(["prisoners_dilemma", "kuhn_poker"], ["scripted:constant:defect", "scripted:random"],
                             episodes=2, out=out, progress=False, n_boot=10, workers=1,
                             rosters={"kuhn_poker": "scripted:heuristic,scripted:random"})
    assert result.planned == result.played == 4


def test_roster_and_game_episodes_items_parse_or_say_what_is_wrong():
    rosters = tour.parse_rosters(["liars_dice=smollm2?adapter=a/b&mode=score,scripted:heuristic"])
    assert [str(s) for s in rosters["liars_dice"]] == ["smollm2?adapter=a/b&mode=score", "scripted:heuristic"]
    assert tour.parse_game_episodes(["liars_dice=40", " chess = 3 "]) == {"liars_dice": 40, "chess": 3}
    for items, message in [(["liars_dice"], "expected GAME=SPEC"), (["=scripted:random"], "expected GAME=SPEC"),
                           (["chess=a", "chess=b"], "names chess more than once"),
                           (["chess=scripted:random,,x"], "--roster chess: .* has an empty entry")]:
        with pytest.raises(ValueError, match=message):
            tour.parse_rosters(items)
    for bad in ("chess=0", "chess=-2", "chess=1.5", "chess=x", "chess=", "chess=9999999"):
        with pytest.raises(ValueError, match="chess|GAME=N"):
            tour.parse_game_episodes([bad])


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
    from socialgym_benchmarks.tournament.plan import DEMO_CONFIGS, game_configs, plan_tournament
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
    from socialgym_benchmarks.tournament import backends
    started = []
    monkeypatch.setattr(backends, "run_jobs", lambda jobs, **kw: started.extend(j.game for j in jobs) or [])
    games = ["prisoners_dilemma", "chameleon", "triadic_werewolf", "coup", "resistance"]
    shards = {g: tour.plan_game(g, ["scripted:random"], 1) for g in games}
    backends.run_local(shards, tmp_path, workers=1, progress=False)
    assert list(dict.fromkeys(started)) == ["triadic_werewolf", "resistance", "coup", "prisoners_dilemma", "chameleon"]


def test_is_scripted_goes_by_the_kinds_declared_traits(monkeypatch):
    """A plugin kind counts as scripted (cheap: many worker processes, the scripted episode count)
    only when it declares no model and no person; an unknown kind is not scripted."""
    from socialgym_agents import registry
    from socialgym_benchmarks.tournament.plan import is_scripted

    monkeypatch.setattr(registry, "_PLUGINS", {})
    registry.register_kind("cheap", lambda spec, seed: None)
    registry.register_kind("weights", lambda spec, seed: None, loads_model=True)
    assert [is_scripted(s) for s in ("scripted:random", "cheap:x", "weights:x", "smollm2", "human", "nosuch:x")] == [
        True, True, False, False, False, False]


def test_the_demo_preset_leaves_out_its_long_games_unless_they_are_named():
    """--preset demo without --games plays every registered game but DEMO_LEFT_OUT (each would add
    minutes of model decisions); named with --games, they are played."""
    from socialgym_benchmarks.tournament.plan import DEMO_LEFT_OUT, preset_games
    demo = preset_games(None, "demo")
    assert demo and not set(demo) & set(DEMO_LEFT_OUT)
    assert set(demo) | set(DEMO_LEFT_OUT) == set(socialgym_env.game_ids())
    assert "colonel_blotto" in demo
    assert preset_games(["hanabi"], "demo") == ["hanabi"]
    assert preset_games(None, "quick") == socialgym_env.game_ids()
