"""What the tournament's bar says while a model plays: episodes logged, decisions made and their
rate, the games in play, and an ETA that is only shown when there is a basis for it.

The batched runner plays many episodes at once, so episodes tend to end together near the end of
a run: a bar that moves only when an episode ends sits still for minutes and then jumps, and
tqdm's smoothed rate (from the gaps between those bursts) gives ETAs of hours on a run of minutes.
:class:`ProgressEstimate` counts work in episodes, an episode in play counting for the share of its
game's expected turns it has played (the mean length of that game's episodes already finished in
this run, capped at :data:`IN_PLAY_CAP` of an episode), and takes the rate as the work done since
the run started over the time since (a cumulative mean: a burst of records is work done, not a
rate). No ETA is shown until every game with episodes left has finished one (its length is
otherwise unknown) and the run has made :data:`MIN_WORK` episodes of work.

Near the end the throughput says little: the last long episodes play one decision a tick, however
few they are, so the ETA is also never below their critical path -- the most ticks any episode in
play still needs (its turns left, over the turns it has made per tick) times the recent seconds
per tick. Without that, the demo's last Triadic Werewolf episodes ran on for a minute under
"ETA 2 s". An episode's turns left are conditioned on how long it has already lasted: the mean
of what the finished episodes of its game that lasted longer went on for (the last episodes of a
run are the long ones, which the game's mean length cut short: "ETA 4-8 s" over the demo's final
50 s), or, when it has outlasted them all, :data:`OUTLAST_SHARE` of its turns so far (a guess,
not an estimate: nothing observed says how much longer it goes).
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable, Optional

IN_PLAY_CAP = 0.9      # an episode in play counts for at most this share until it ends
TICK_SMOOTHING = 0.3   # weight of the newest tick in the seconds-per-tick mean
MIN_WORK = 0.25        # episodes of work this run must have made before an ETA is given
OUTLAST_SHARE = 0.25   # an episode longer than every finished one of its game: this share of its turns to go
IN_PLAY_SHOWN = 3      # games named on the status line; a wide run would push the bar off the screen


def in_play(games) -> str:
    """``werewolves x3, coup`` -- the games of the episodes in flight, for the bar's status:
    the first :data:`IN_PLAY_SHOWN` games, then how many more."""
    counts: dict = {}
    for game in games:
        counts[game] = counts.get(game, 0) + 1
    shown = [f"{g} x{n}" if n > 1 else g for g, n in list(counts.items())[:IN_PLAY_SHOWN]]
    more = len(counts) - len(shown)
    return ", ".join(shown) + (f" +{more} more" if more else "")


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 12 min``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class ProgressEstimate:
    """Counts and ETA of one run from the runner's stream: :meth:`finished` per episode record,
    :meth:`tick` per round of decisions. ``planned`` is ``{game: episodes to play in this run}``;
    ``clock`` is injectable so tests feed a simulated stream."""

    def __init__(self, planned: dict, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.started = clock()
        self.left = dict(planned)                 # game -> episodes not yet finished
        self.lengths: dict = defaultdict(list)    # game -> turns of its finished episodes
        self.live: list = []                      # (game, turns) of the episodes in play
        self.decisions = 0
        self.first_decisions: Optional[int] = None   # turns at the first tick (a resume replays some)
        self.start_work: Optional[float] = None
        self.last_tick: Optional[float] = None
        self.tick_seconds: Optional[float] = None   # recent seconds per tick (a smoothed mean)

    def finished(self, game: str, turns: int) -> None:
        self.left[game] = self.left.get(game, 1) - 1
        self.lengths[game].append(turns)

    def tick(self, live: list, decisions: int) -> None:
        """``live``: ``(game, turns)`` or ``(game, turns, ticks)`` per episode in play."""
        now = self.clock()
        if self.last_tick is not None:
            gap = now - self.last_tick
            self.tick_seconds = gap if self.tick_seconds is None else \
                (1 - TICK_SMOOTHING) * self.tick_seconds + TICK_SMOOTHING * gap
        self.last_tick = now
        self.live = list(live)
        self.decisions = decisions
        if self.first_decisions is None:
            # turns in play at the first tick were mostly replayed from a journal, not made now
            self.first_decisions = decisions
            self.start_work = self._in_play_work() or 0.0

    def _expected(self, game: str) -> Optional[float]:
        lengths = self.lengths.get(game)
        return sum(lengths) / len(lengths) if lengths else None

    def _in_play_work(self) -> Optional[float]:
        """Episodes' worth of work in the episodes in play; None when a game's length is unknown."""
        work = 0.0
        for game, turns, *_ in self.live:
            expected = self._expected(game)
            if expected is None:
                return None
            work += min(turns / max(expected, 1.0), IN_PLAY_CAP)
        return work

    def decision_rate(self) -> Optional[float]:
        """Decisions per second made by this run (turns replayed from a journal not counted)."""
        elapsed = self.clock() - self.started
        made = self.decisions - (self.first_decisions or 0)
        return made / elapsed if elapsed > 0 and self.first_decisions is not None else None

    def eta(self) -> Optional[float]:
        """Seconds left, or None while there is no basis (see the module docstring)."""
        if self.first_decisions is None:
            # records before the first tick: the episodes in play are not counted yet (the
            # improvement loop's bar opened at 1 h 08 min when its first records came together)
            return None
        if any(left > 0 and not self.lengths.get(game) for game, left in self.left.items()):
            return None
        in_play_work = self._in_play_work()
        if in_play_work is None:
            return None
        done = sum(len(lengths) for lengths in self.lengths.values()) + in_play_work - (self.start_work or 0.0)
        remaining = sum(max(left, 0) for left in self.left.values()) - in_play_work
        if done < MIN_WORK:
            return None
        throughput = max(remaining, 0.0) * (self.clock() - self.started) / done
        return max(throughput, self._critical_path())

    def _critical_path(self) -> float:
        """Seconds the slowest episode in play still needs at the recent tick rate (0 without
        tick counts)."""
        if not self.tick_seconds:
            return 0.0
        ticks_left = 0.0
        for game, turns, *rest in self.live:
            turns_left = self._turns_left(game, turns)
            if not rest or not rest[0] or turns_left is None:
                continue
            ticks_left = max(ticks_left, turns_left * rest[0] / max(turns, 1))
        return ticks_left * self.tick_seconds

    def _turns_left(self, game: str, turns: int) -> Optional[float]:
        """Turns an episode of ``game`` that has lasted ``turns`` still needs: the mean of what the
        finished episodes that lasted longer went on for (an episode still in play at the end of
        a run is one of the long ones, not an average one); past every finished one,
        :data:`OUTLAST_SHARE` of its turns so far. None before any episode of the game ended."""
        lengths = self.lengths.get(game)
        if not lengths:
            return None
        longer = [length - turns for length in lengths if length > turns]
        return sum(longer) / len(longer) if longer else max(OUTLAST_SHARE * turns, 1.0)

    def waiting_for(self) -> list:
        """The games whose length is still unknown (no episode finished yet) with episodes left."""
        return [game for game, left in self.left.items() if left > 0 and not self.lengths.get(game)]

    def status(self) -> str:
        """The bar's status line: ``130 decisions (1.4/s); in play: coup x3; ETA 3 min 05 s``."""
        rate = self.decision_rate()
        parts = [f"{self.decisions} decisions" + (f" ({rate:.1f}/s)" if rate else "")]
        if self.live:
            parts.append(f"in play: {in_play(game for game, *_ in self.live)}")
        if not any(left > 0 for left in self.left.values()):
            return "; ".join(parts)              # all done: no ETA to give
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {duration(eta)}")
        else:
            waiting = self.waiting_for()
            parts.append(f"ETA once a {waiting[0]} episode ends" if waiting else "ETA: estimating")
        return "; ".join(parts)
