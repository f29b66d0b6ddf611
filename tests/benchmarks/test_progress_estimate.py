"""Issue 45 item 5: the tournament bar's counts and ETA on simulated streams of records and
ticks (a fake clock: nothing here is timed)."""
import pytest

from socialgym_benchmarks.progress import ProgressEstimate, duration


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_no_eta_before_a_basis_then_one_that_matches_a_steady_run():
    clock = Clock()
    estimate = ProgressEstimate({"coup": 4}, clock=clock)
    # four episodes of 20 turns played together, one decision per episode per second
    for second in range(1, 20):
        clock.now = second
        estimate.tick([("coup", second)] * 4, 4 * second)
        assert estimate.eta() is None                       # no coup episode ended: length unknown
        assert "ETA once a coup episode ends" in estimate.status()
    clock.now = 20
    estimate.finished("coup", 20)
    estimate.tick([("coup", 20)] * 3, 80)
    # the 3 in play count IN_PLAY_CAP each until they end: the ETA is short, not hours
    assert estimate.eta() == pytest.approx(0.3 * 20 / 3.7)
    assert "80 decisions (3.8/s)" in estimate.status()          # 76 made after the first tick, in 20 s
    for _ in range(3):
        estimate.finished("coup", 21)
    estimate.tick([], 83)
    assert "ETA" not in estimate.status()                       # nothing left: no ETA


def test_a_burst_of_records_after_a_long_wait_gives_no_multi_hour_eta():
    """The improvement loop's bar opened at 2 h 53 min: its first records arrive together."""
    clock = Clock()
    estimate = ProgressEstimate({"liars_dice": 120}, clock=clock)
    clock.now = 60.0
    estimate.tick([("liars_dice", 10)] * 64, 640)
    for _ in range(40):                                     # 40 episodes end within a second
        estimate.finished("liars_dice", 12)
    clock.now = 61.0
    estimate.tick([("liars_dice", 10)] * 24, 700)
    eta = estimate.eta()
    # 80 episodes left, ~40 + 24*0.83 done in 61 s: about 1.5 min, as the run then takes
    assert 60 < eta < 120, eta


def test_a_resumed_run_does_not_count_replayed_turns_as_its_own_rate():
    clock = Clock()
    estimate = ProgressEstimate({"coup": 2}, clock=clock)
    clock.now = 1.0
    estimate.tick([("coup", 30), ("coup", 30)], 60)         # restored from the journal at the start
    clock.now = 11.0
    estimate.tick([("coup", 35), ("coup", 35)], 70)
    assert estimate.decision_rate() == pytest.approx(10 / 11)


def test_eta_needs_every_game_with_episodes_left_to_have_ended_one():
    clock = Clock()
    estimate = ProgressEstimate({"coup": 2, "chess": 2}, clock=clock)
    clock.now = 10
    estimate.finished("coup", 10)
    estimate.tick([("coup", 5), ("chess", 7)], 22)
    assert estimate.eta() is None and estimate.waiting_for() == ["chess"]
    estimate.finished("chess", 8)
    estimate.tick([("coup", 5), ("chess", 7)], 22)
    assert estimate.eta() is not None


@pytest.mark.parametrize("seconds,text", [(42, "42 s"), (185, "3 min 05 s"), (4320, "1 h 12 min")])
def test_durations_read_as_words(seconds, text):
    assert duration(seconds) == text


def test_the_tail_eta_is_the_last_long_episode_at_the_recent_tick_rate():
    """The demo's last Triadic Werewolf episodes ran on for a minute under "ETA 2 s": near the
    end the throughput says little, the longest episode in play plays one decision a tick."""
    def feed(with_ticks: bool) -> ProgressEstimate:
        clock = Clock()
        estimate = ProgressEstimate({"coup": 10, "triadic_werewolf": 2}, clock=clock)
        estimate.tick([], 0)
        for _ in range(10):
            estimate.finished("coup", 10)
        estimate.finished("triadic_werewolf", 200)
        # one werewolf episode left, 50 turns in after 50 ticks of 1 s: 150 turns to go
        for tick in range(1, 51):
            clock.now = 100.0 + tick
            estimate.tick([("triadic_werewolf", tick, tick) if with_ticks else ("triadic_werewolf", tick)],
                          100 + tick)
        return estimate

    throughput_only = feed(with_ticks=False).eta()      # an older caller: no tick counts
    assert throughput_only == pytest.approx((1 - 50 / 200) * 150 / (11 + 50 / 200))   # ~10 s
    assert feed(with_ticks=True).eta() == pytest.approx(150.0, rel=1e-3)               # 150 ticks of 1 s


def test_no_eta_from_records_that_come_before_the_first_tick():
    """The runner logs the episodes a tick ended before it reports the tick: without waiting for
    that report, 64 episodes in play counted for nothing and the bar opened at 1 h 08 min."""
    clock = Clock()
    estimate = ProgressEstimate({"liars_dice": 120}, clock=clock)
    clock.now = 34.0
    estimate.finished("liars_dice", 12)
    assert estimate.eta() is None                      # no tick yet: nothing in play is counted
    # the runner reports the state before its first decision (tick 0), then each tick
    clock.now = 0.0
    estimate = ProgressEstimate({"liars_dice": 120}, clock=clock)
    estimate.tick([("liars_dice", 0, 0)] * 64, 0)
    clock.now = 34.0
    for _ in range(12):
        estimate.finished("liars_dice", 12)
    estimate.tick([("liars_dice", 6, 1)] * 52, 216)
    # 12 ended and 52 half-way in 34 s: 120 - 12 - 26 = 82 episodes of work left at 38 per 34 s
    assert estimate.eta() == pytest.approx(82 * 34 / 38)


def test_the_tail_eta_is_conditioned_on_how_long_the_episode_has_lasted():
    """An episode still in play at the end is one of the long ones: its turns left are what the
    finished episodes that lasted longer went on for, not the game's mean length minus its turns
    (which gave the demo's last Triadic Werewolf episode "ETA 4-8 s" for 50 s); past every
    finished one, a quarter of its turns so far."""
    def tail_eta(lengths, turns):
        clock = Clock()
        estimate = ProgressEstimate({"werewolves": len(lengths) + 1}, clock=clock)
        estimate.tick([], 0)
        for length in lengths:
            estimate.finished("werewolves", length)
        for tick in range(1, turns + 1):          # one turn a tick, 1 s a tick
            clock.now = 1000.0 + tick
            estimate.tick([("werewolves", tick, tick)], 1000 + tick)
        return estimate._critical_path()

    # mean 65, but of the episodes that passed 50 turns the one that did went on to 200
    assert tail_eta([20, 20, 20, 200], 50) == pytest.approx(150.0, rel=1e-3)
    assert tail_eta([60, 80], 50) == pytest.approx(20.0, rel=1e-3)          # (10 + 30) / 2
    assert tail_eta([100, 120], 130) == pytest.approx(0.25 * 130, rel=1e-3)  # outlasted them all
