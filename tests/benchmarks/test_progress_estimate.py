"""Issue 45 item 5: the tournament bar's counts and ETA on simulated streams of records and
ticks (a fake clock: nothing here is timed)."""
import pytest

from socialgym_benchmarks.tournament.progress import ProgressEstimate, duration


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def plan(**games) -> dict:
    """``{episode id: (game, 1.0)}``: ``games`` episodes of each game, every one seating a model."""
    return {f"{game}-{i}": (game, 1.0) for game, count in games.items() for i in range(count)}


def estimate_of(clock, prior_turns=None, **games) -> ProgressEstimate:
    return ProgressEstimate(plan(**games), clock=clock, prior_turns=prior_turns)


def live(game, turns, ticks=0, index=0):
    return (game, turns, ticks, f"{game}-{index}")


def test_no_eta_before_a_basis_then_one_that_matches_a_steady_run():
    clock = Clock()
    estimate = estimate_of(clock, coup=4)
    # four episodes of 20 turns played together, one decision per episode per second
    for second in range(1, 20):
        clock.now = second
        estimate.tick([live("coup", second, index=i) for i in range(4)], 4 * second)
        assert estimate.eta() is None                       # no coup episode ended: length unknown
        assert "ETA once a coup episode ends" in estimate.status()
    clock.now = 20
    estimate.finished("coup", 20, "coup-0")
    estimate.tick([live("coup", 20, index=i) for i in (1, 2, 3)], 80)
    # 74 of 80 turns done, 70 of them in the 19 s since the first tick (which found 4 made); the 3
    # in play count for IN_PLAY_CAP of their 20 turns until they end: the ETA is short, not hours
    assert estimate.eta() == pytest.approx(6 * 19 / 70)
    assert "80 decisions (4.0/s)" in estimate.status()          # 76 made after the first tick, in 19 s
    for i in (1, 2, 3):
        estimate.finished("coup", 21, f"coup-{i}")
    estimate.tick([], 83)
    assert "ETA" not in estimate.status()                       # nothing left: no ETA


def test_between_ticks_the_eta_counts_down_instead_of_climbing():
    """The work in play is only known at ticks: over the time up to now, the main job's early
    ETA climbed from 13 to 20 min within every tick (eta_accuracy.py on a recorded run)."""
    clock = Clock()
    estimate = estimate_of(clock, coup=8)
    estimate.tick([live("coup", 0, index=i) for i in range(4)], 0)
    clock.now = 20.0
    estimate.finished("coup", 20, "coup-0")
    estimate.tick([live("coup", 20, 1, index=i) for i in (1, 2, 3)], 80)
    # 7 episodes (140 turns) planned, 3 x 18 of them in play: 86 left; 74 done in 20 s
    at_tick = 86 * 20 / 74
    assert estimate.eta() == pytest.approx(at_tick)
    clock.now = 30.0                                         # half a tick on: nothing new counted yet
    assert estimate.eta() == pytest.approx(at_tick - 10)     # the old rate would read 86 * 30 / 74
    assert "80 decisions (4.0/s)" in estimate.status()       # 80 in the 20 s to the tick, not over 30 s
    clock.now = 20.0 + at_tick + 5                           # the tick outlasts the estimate
    overrun = estimate.eta()
    assert overrun == pytest.approx(86 * (20 + at_tick + 5) / 74) and overrun > 5   # over all 25 + at_tick s
    clock.now += 10
    assert estimate.eta() > overrun                          # still nothing counted: it grows, never 0


def test_a_burst_of_records_after_a_long_wait_gives_no_multi_hour_eta():
    """The improvement loop's bar opened at 2 h 53 min: its first records arrive together."""
    clock = Clock()
    estimate = estimate_of(clock, liars_dice=120)
    estimate.tick([live("liars_dice", 0, index=i) for i in range(64)], 0)
    clock.now = 60.0
    for i in range(40):                                     # 40 episodes end within a second
        estimate.finished("liars_dice", 12, f"liars_dice-{i}")
    estimate.tick([live("liars_dice", 10, 1, index=i) for i in range(40, 64)], 720)
    # 80 episodes (960 turns) left, 720 turns done in 60 s: about a minute, as the run then takes
    assert 30 < estimate.eta() < 120, estimate.eta()


def test_a_resumed_run_does_not_count_replayed_turns_as_its_own_work():
    clock = Clock()
    estimate = estimate_of(clock, coup=2)
    clock.now = 1.0
    estimate.tick([live("coup", 30, index=0), live("coup", 30, index=1)], 60)   # restored from the journal
    clock.now = 11.0
    estimate.tick([live("coup", 35, index=0), live("coup", 35, index=1)], 70)
    assert estimate.decision_rate() == pytest.approx(10 / 10)
    estimate.finished("coup", 40, "coup-0")
    # 10 turns of the 40-turn coup-0 and 5 of coup-1 made in 10 s: the replayed 60 are not this
    # run's work (no tick counts here: the throughput alone)
    assert estimate.eta() == pytest.approx((40 - 35) * 10 / 15)


def test_eta_needs_every_game_with_episodes_left_to_have_ended_one_or_a_prior():
    clock = Clock()
    estimate = estimate_of(clock, coup=2, chess=2)
    estimate.tick([live("coup", 0, index=1), live("chess", 0)], 0)
    clock.now = 10
    estimate.finished("coup", 10, "coup-0")
    estimate.tick([live("coup", 5, 5, index=1), live("chess", 7, 7)], 22)
    assert estimate.eta() is None and estimate.waiting_for() == ["chess"]
    estimate.finished("chess", 8, "chess-1")
    estimate.tick([live("coup", 5, 5, index=1), live("chess", 7, 7)], 22)
    assert estimate.eta() is not None

    clock = Clock()
    estimate = estimate_of(clock, {"chess": 8}, coup=2, chess=2)
    estimate.tick([live("coup", 0, index=1), live("chess", 0)], 0)
    clock.now = 10
    estimate.finished("coup", 10, "coup-0")
    estimate.tick([live("coup", 5, 5, index=1), live("chess", 7, 7)], 22)
    assert estimate.waiting_for() == [] and estimate.eta() is not None


@pytest.mark.parametrize("seconds,text", [(42, "42 s"), (185, "3 min 05 s"), (4320, "1 h 12 min")])
def test_durations_read_as_words(seconds, text):
    assert duration(seconds) == text


def test_the_tail_eta_is_the_last_long_episode_at_the_recent_tick_rate():
    """The demo's last Triadic Werewolf episodes ran on for a minute under "ETA 2 s": near the
    end the throughput says little, the longest episode in play plays one decision a tick."""
    def feed(with_ticks: bool) -> ProgressEstimate:
        clock = Clock()
        estimate = estimate_of(clock, coup=10, triadic_werewolf=2)
        estimate.tick([], 0)
        for i in range(10):
            estimate.finished("coup", 10, f"coup-{i}")
        estimate.finished("triadic_werewolf", 200, "triadic_werewolf-0")
        # one werewolf episode left, 50 turns in after 50 ticks of 1 s: 150 turns to go
        for tick in range(1, 51):
            clock.now = 100.0 + tick
            estimate.tick([live("triadic_werewolf", tick, tick if with_ticks else 0, index=1)], 100 + tick)
        return estimate

    # the throughput alone: 350 turns done in 150 s, 150 to go
    assert feed(with_ticks=False).eta() == pytest.approx(150 * 150 / 350)
    assert feed(with_ticks=True).eta() == pytest.approx(150.0, rel=1e-3)               # 150 ticks of 1 s


def test_no_eta_from_records_that_come_before_the_first_tick():
    """The runner logs the episodes a tick ended before it reports the tick: without waiting for
    that report, 64 episodes in play counted for nothing and the bar opened at 1 h 08 min."""
    clock = Clock()
    estimate = estimate_of(clock, liars_dice=120)
    clock.now = 34.0
    estimate.finished("liars_dice", 12, "liars_dice-0")
    assert estimate.eta() is None                      # no tick yet: nothing in play is counted
    # the runner reports the state before its first decision (tick 0), then each tick
    clock.now = 0.0
    estimate = estimate_of(clock, liars_dice=120)
    estimate.tick([live("liars_dice", 0, index=i) for i in range(64)], 0)
    clock.now = 34.0
    for i in range(12):
        estimate.finished("liars_dice", 12, f"liars_dice-{i}")
    estimate.tick([live("liars_dice", 6, 1, index=i) for i in range(12, 64)], 216)
    # 12 ended and 52 half-way in 34 s: 144 + 312 turns done, 108 * 12 - 312 left
    assert estimate.eta() == pytest.approx((108 * 12 - 312) * 34 / 456)


def test_the_tail_eta_is_conditioned_on_how_long_the_episode_has_lasted():
    """An episode still in play at the end is one of the long ones: its turns left are what the
    finished episodes that lasted longer went on for, not the game's mean length minus its turns
    (which gave the demo's last Triadic Werewolf episode "ETA 4-8 s" for 50 s); past every
    finished one, a quarter of its turns so far."""
    def tail_eta(lengths, turns):
        clock = Clock()
        estimate = estimate_of(clock, werewolves=len(lengths) + 1)
        estimate.tick([], 0)
        for i, length in enumerate(lengths):
            estimate.finished("werewolves", length, f"werewolves-{i + 1}")
        for tick in range(1, turns + 1):          # one turn a tick, 1 s a tick
            clock.now = 1000.0 + tick
            estimate.tick([live("werewolves", tick, tick)], 1000 + tick)
        return estimate._critical_path()

    # mean 65, but of the episodes that passed 50 turns the one that did went on to 200
    assert tail_eta([20, 20, 20, 200], 50) == pytest.approx(150.0, rel=1e-3)
    assert tail_eta([60, 80], 50) == pytest.approx(20.0, rel=1e-3)          # (10 + 30) / 2
    assert tail_eta([100, 120], 130) == pytest.approx(0.25 * 130, rel=1e-3)  # outlasted them all


def _steady_run(weights: dict, clock: Clock, scripted_first: int) -> list:
    """A run of 10 coup episodes seating a model, played one after another, 20 turns of 1 s each,
    after ``scripted_first`` scripted-only coup episodes that ended at once when it started;
    ``weights`` is the plan the estimate is given. Returns (seconds left, ETA) at every 10 s."""
    estimate = ProgressEstimate(weights, clock=clock)
    scripted = [key for key, (_, weight) in weights.items() if key.startswith("scripted")]
    model = [key for key in weights if key not in scripted]
    estimate.tick([], 0)
    for key in scripted[:scripted_first]:
        estimate.finished("coup", 20, key)
    seen = []
    for second in range(1, 200):
        clock.now = second
        episode, turns = divmod(second, 20)
        if turns == 0:
            estimate.finished("coup", 20, model[episode - 1])
        estimate.tick([("coup", turns, turns, model[episode])] if turns else [], second)
        if second % 10 == 0:
            seen.append((200 - second, estimate.eta()))
    return seen


def test_episodes_that_seat_no_model_count_for_nothing():
    """A scripted-only episode ends the moment it starts: counted as an episode of work, it would
    make the early rate too fast, as it cost nothing (planted: the same stream, with those episodes
    weighted as the model's, gives an ETA far too short)."""
    plan = {f"model-{i}": ("coup", 0.5) for i in range(10)}
    plan.update({f"scripted-{i}": ("coup", 0.0) for i in range(10)})
    for left, eta in _steady_run(plan, Clock(), scripted_first=10)[2:]:
        assert eta == pytest.approx(left, rel=0.1), (left, eta)
    counted = {key: (game, 1.0) for key, (game, _) in plan.items()}
    assert all(eta < left / 3 for left, eta in _steady_run(counted, Clock(), scripted_first=10)[2:8])


def test_a_prior_length_gives_an_eta_before_a_game_has_ended_an_episode():
    """The main job's short games start last: without a prior the bar said "ETA once a stag_hunt
    episode ends" for most of the run. With one, the ETA matches a steady run; a prior that is
    wrong by half is replaced by the length observed once an episode of the game ends."""
    def run(prior):
        clock = Clock()
        estimate = estimate_of(clock, prior, coup=1, stag_hunt=2)
        estimate.tick([live("coup", 0)], 0)
        seen = []
        for second in range(1, 60):           # coup: 20 turns, then the two stag hunts, 20 each
            clock.now = second
            episode, turns = divmod(second, 20)
            if turns == 0:
                estimate.finished(*(("coup", 20, "coup-0") if episode == 1 else ("stag_hunt", 20, "stag_hunt-0")))
            current = live("coup", turns, turns) if episode == 0 else live("stag_hunt", turns, turns, index=episode - 1)
            estimate.tick([current] if turns else [], second)
            seen.append((60 - second, estimate.eta(), estimate.status()))
        return seen

    without = run(None)
    assert all(eta is None and "ETA once a coup episode ends" in status for _, eta, status in without[:19])
    assert all(eta is None and "ETA once a stag_hunt episode ends" in status for _, eta, status in without[19:39])
    for left, eta, _ in run({"coup": 20, "stag_hunt": 20})[5:55]:   # the last turns: IN_PLAY_CAP
        assert eta == pytest.approx(left, rel=0.1), (left, eta)
    wrong = run({"coup": 20, "stag_hunt": 10})
    assert all(eta < 0.75 * left for left, eta, _ in wrong[5:19])   # 20 + 20 expected, 40 + 20 really
    for left, eta, _ in wrong[45:55]:
        assert eta == pytest.approx(left, rel=0.2), (left, eta)       # a stag hunt ended: 20 turns seen


def test_random_play_sets_each_games_prior_length():
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.progress import random_play_turns
    shards = {"prisoners_dilemma": [EpisodeJob("prisoners_dilemma", seed, ["smollm2", "scripted:random"],
                                               config={"rounds": rounds}) for seed, rounds in ((0, 3), (1, 3))],
              "rock_paper_scissors": [EpisodeJob("rock_paper_scissors", 0, ["smollm2", "scripted:random"],
                                                 config={"rounds": 4})]}
    # simultaneous rounds: each seat moves once a round
    assert random_play_turns(shards) == {"prisoners_dilemma": 6, "rock_paper_scissors": 8}


def test_a_jobs_weight_is_its_share_of_seats_that_are_not_scripted():
    from socialgym_agents.runner import EpisodeJob
    from socialgym_benchmarks.tournament.progress import planned_episodes
    jobs = [EpisodeJob("coup", 0, ["smollm2", "scripted:random", "scripted:random", "scripted:heuristic"]),
            EpisodeJob("coup", 1, ["scripted:random"] * 4)]
    assert list(planned_episodes(jobs).values()) == [("coup", 0.25), ("coup", 0.0)]
    # nothing but scripted seats: their turns are the work, so the bar still gives an ETA
    estimate = ProgressEstimate(planned_episodes(jobs[1:]), clock=Clock())
    assert estimate.weight(jobs[1].episode_id) == 1.0


def test_until_there_is_an_eta_the_line_says_what_is_done():
    """Issue 65: ``socialgym rate`` said "ETA: estimating" for two minutes (a model's first round
    of decisions, then under MIN_WORK_SHARE of the work): the line says what it waits for and how
    much is done."""
    clock = Clock()
    estimate = estimate_of(clock, prior_turns={"coup": 20}, coup=10)       # 200 turns planned
    estimate.tick([live("coup", 0, index=i) for i in range(2)], 0)
    assert estimate.status().endswith("ETA after the first round of decisions")
    clock.now = 60.0
    estimate.tick([live("coup", 1, 1, index=i) for i in range(2)], 2)
    status = estimate.status()
    assert estimate.eta() is None and "estimating" not in status
    assert status.endswith("1.0% of the work done, ETA from 2%"), status
    assert estimate.work_share() == pytest.approx(2 / 200)
