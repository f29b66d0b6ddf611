"""What the tournament's bar says while a model plays: episodes logged, decisions made and their
rate, the games in play, and an ETA that is only shown when there is a basis for it.

The batched runner plays many episodes at once, so episodes tend to end together near the end of
a run: a bar that moves only when an episode ends sits still for minutes and then jumps, and
tqdm's smoothed rate (from the gaps between those bursts) gives ETAs of hours on a run of minutes.

:class:`ProgressEstimate` counts work in *seat-turns that take time*: an episode's turns times the
share of its seats held by a policy that is not scripted (a model's, a human's). An episode with
only scripted seats ends the moment it starts and counts for nothing; counted as an episode of
work, it would make the early rate too fast (it cost nothing). A game's expected length is the
mean length of its episodes already finished in this run, and before one has finished, the
length of a few episodes of it played by ``scripted:random`` seats when the run starts
(``prior_turns``: milliseconds; without it the bar said "ETA once a stag_hunt episode ends" for
most of the main job, whose short games start last). An episode in play counts for the turns it
has played, capped at :data:`IN_PLAY_CAP` of its expected length. The rate is the work done
from the first tick to the last over the time between them (a cumulative mean: a burst of
records is work done, not a rate; the turns in play are only known at a tick), and between ticks
the ETA counts down from what it was at the last one; no ETA is shown before
:data:`MIN_WORK_SHARE` of the planned work is done.

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
MIN_WORK_SHARE = 0.02  # share of the planned work this run must have made before an ETA is given
OUTLAST_SHARE = 0.25   # an episode longer than every finished one of its game: this share of its turns to go
NONE_LEFT = 1e-9       # a game's unfinished weight at or below this: nothing timed left (float sums)
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
    :meth:`tick` per round of decisions. ``planned`` is ``{episode id: (game, weight)}`` for the
    episodes to play in this run, ``weight`` the share of their seats that take time (see the
    module docstring; :func:`planned_episodes` makes it from jobs); ``prior_turns`` is ``{game:
    turns}`` to expect of a game before one of its episodes ends; ``clock`` is injectable so tests
    feed a simulated stream."""

    def __init__(self, planned: dict, clock: Callable[[], float] = time.monotonic,
                 prior_turns: Optional[dict] = None):
        self.clock = clock
        self.planned = dict(planned)              # episode id -> (game, weight)
        if not any(weight for _, weight in self.planned.values()):
            # nothing but scripted seats: then their turns are the work there is
            self.planned = {key: (game, 1.0) for key, (game, _) in self.planned.items()}
        self.unfinished = set(self.planned)
        # game -> the summed weight of its unfinished episodes (planned work = this x its length):
        # kept as episodes end, so the ETA does not walk the whole plan at every redraw
        self.weight_left: dict = defaultdict(float)
        for game, weight in self.planned.values():
            self.weight_left[game] += weight
        self.prior_turns = dict(prior_turns or {})
        self.lengths: dict = defaultdict(list)    # game -> turns of its finished episodes
        self.timed_turns: dict = defaultdict(lambda: [0, 0])   # game -> [turns, episodes] that seated a timed policy
        self.finished_work = 0.0
        self.live: list = []                      # InPlay-like (game, turns, ticks, episode id) in play
        self.decisions = 0
        self.first_decisions: Optional[int] = None   # turns at the first tick (a resume replays some)
        self.started: Optional[float] = None      # the first tick: loading before it is not play
        self.start_live: list = []                # the episodes in play at the first tick (a resume's)
        self.last_tick: Optional[float] = None
        self.tick_seconds: Optional[float] = None   # recent seconds per tick (a smoothed mean)

    def weight(self, episode_id) -> float:
        """An episode's share of timed seats; 1 for one not planned (a caller that gave no ids)."""
        return self.planned.get(episode_id, (None, 1.0))[1]

    def finished(self, game: str, turns: int, episode_id=None) -> None:
        weight = self.weight(episode_id)
        if episode_id in self.unfinished:
            self.unfinished.discard(episode_id)
            self.weight_left[game] -= weight
        if episode_id is not None:            # until the next tick, the live list still holds it
            self.live = [entry for entry in self.live if entry[3] != episode_id]
        self.lengths[game].append(turns)
        if weight > 0:
            self.timed_turns[game][0] += turns
            self.timed_turns[game][1] += 1
        self.finished_work += weight * turns

    def tick(self, live: list, decisions: int) -> None:
        """``live``: ``(game, turns, ticks, episode id)`` per episode in play (an
        :class:`socialgym_agents.runner.InPlay`)."""
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
            self.started = now
            self.start_live = list(live)

    def expected_turns(self, game: str) -> Optional[float]:
        """A game's expected length: the mean of its finished episodes that seated a timed policy
        (those are the ones left to wait for), else of all its finished ones, else its prior."""
        timed_turns, timed_episodes = self.timed_turns.get(game, (0, 0))
        if timed_episodes:
            return timed_turns / timed_episodes
        lengths = self.lengths.get(game)
        return sum(lengths) / len(lengths) if lengths else self.prior_turns.get(game)

    def _in_play_work(self, live: Optional[list] = None) -> Optional[float]:
        """Work in the episodes in play (or ``live``); None when a timed episode's game length is
        unknown."""
        work = 0.0
        for game, turns, _ticks, episode_id, *_ in (self.live if live is None else live):
            weight = self.weight(episode_id)
            if not weight:
                continue
            expected = self.expected_turns(game)
            if expected is None:
                return None
            work += weight * min(turns, IN_PLAY_CAP * max(expected, 1.0))
        return work

    def _planned_work(self) -> Optional[float]:
        """Work of the episodes not finished, as expected; None while a game's length is unknown."""
        work = 0.0
        for game, weight in self.weight_left.items():
            if weight <= NONE_LEFT:           # none left (or only scripted-only ones)
                continue
            expected = self.expected_turns(game)
            if expected is None:
                return None
            work += weight * max(expected, 1.0)
        return work

    def decision_rate(self) -> Optional[float]:
        """Decisions per second made by this run (turns replayed from a journal not counted), up
        to the last tick: decisions are counted at ticks, so the time since is not yet theirs."""
        if self.started is None:
            return None
        elapsed = self.last_tick - self.started
        made = self.decisions - (self.first_decisions or 0)
        return made / elapsed if elapsed > 0 else None

    def _work(self) -> Optional[tuple]:
        """(work done by this run, work remaining) as of the last tick; None before the first
        tick or while a game's length is unknown."""
        if self.started is None:
            # records before the first tick: the episodes in play are not counted yet (the
            # improvement loop's bar opened at 1 h 08 min when its first records came together)
            return None
        in_play_work, planned_work = self._in_play_work(), self._planned_work()
        # the turns in play at the first tick, valued at today's expected lengths, were not this run's
        start_work = self._in_play_work(self.start_live)
        if in_play_work is None or planned_work is None or start_work is None:
            return None
        return self.finished_work + in_play_work - start_work, max(planned_work - in_play_work, 0.0)

    def work_share(self) -> Optional[float]:
        """The share of this run's work done as of the last tick (None while unknown)."""
        work = self._work()
        if work is None or sum(work) <= 0:
            return None
        return max(work[0], 0.0) / sum(work)

    def eta(self) -> Optional[float]:
        """Seconds left, or None while there is no basis (see the module docstring)."""
        work = self._work()
        if work is None:
            return None
        done, remaining = work
        # The work in play is only known at ticks, so the rate is taken over the time up to the
        # last one and its ETA counts down from there. Over the time up to now, with the work of
        # the tick in progress not yet counted, the main job's early ETA climbed from 13 to 20 min
        # within every tick and dropped back when the tick ended (eta_accuracy.py).
        measured = self.last_tick - self.started
        if done <= 0 or measured <= 0 or done < MIN_WORK_SHARE * (done + remaining):
            return None
        at_tick = max(remaining * measured / done, self._critical_path())
        since = self.clock() - self.last_tick
        if since < at_tick:
            return at_tick - since
        # a tick outlasting the estimate: the rate up to now, which grows while nothing is counted
        return remaining * (measured + since) / done

    def _critical_path(self) -> float:
        """Seconds the slowest episode in play still needs at the recent tick rate (0 without
        tick counts)."""
        if not self.tick_seconds:
            return 0.0
        ticks_left = 0.0
        for game, turns, ticks, *_ in self.live:
            turns_left = self._turns_left(game, turns)
            if not ticks or turns_left is None:
                continue
            ticks_left = max(ticks_left, turns_left * ticks / max(turns, 1))
        return ticks_left * self.tick_seconds

    def _turns_left(self, game: str, turns: int) -> Optional[float]:
        """Turns an episode of ``game`` that has lasted ``turns`` still needs: the mean of what the
        finished episodes that lasted longer went on for (an episode still in play at the end of
        a run is one of the long ones, not an average one); past every finished one,
        :data:`OUTLAST_SHARE` of its turns so far. Before any episode of the game ended, its
        prior length, if any, stands for the finished ones."""
        lengths = self.lengths.get(game) or ([self.prior_turns[game]] if game in self.prior_turns else None)
        if not lengths:
            return None
        longer = [length - turns for length in lengths if length > turns]
        return sum(longer) / len(longer) if longer else max(OUTLAST_SHARE * turns, 1.0)

    def waiting_for(self) -> list:
        """The games with timed episodes left whose length is still unknown (no prior, and no
        episode finished yet), in the order of the plan."""
        return [game for game, weight in self.weight_left.items()
                if weight > NONE_LEFT and self.expected_turns(game) is None]

    def status(self) -> str:
        """The bar's status line: ``130 decisions (1.4/s); in play: coup x3; ETA 3 min 05 s``."""
        rate = self.decision_rate()
        parts = [f"{self.decisions} decisions" + (f" ({rate:.1f}/s)" if rate else "")]
        if self.live:
            parts.append(f"in play: {in_play(game for game, *_ in self.live)}")
        if not self.unfinished:
            return "; ".join(parts)              # all done: no ETA to give
        eta = self.eta()
        parts.append(f"ETA {duration(eta)}" if eta is not None else self._no_eta_yet())
        return "; ".join(parts)

    def _no_eta_yet(self) -> str:
        """What stands in for the ETA until there is a basis for one: what it waits for, and the
        share of the work done so far (a model's first round of decisions can take minutes, and
        "ETA: estimating" said nothing for all of them)."""
        waiting = self.waiting_for()
        if waiting:
            return f"ETA once a {waiting[0]} episode ends"
        if self.started is None or self.last_tick == self.started:
            return "ETA after the first round of decisions"
        share = self.work_share()
        if share is None:
            return "ETA: estimating"
        return f"{100 * share:.1f}% of the work done, ETA from {100 * MIN_WORK_SHARE:.0f}%"


def planned_episodes(jobs) -> dict:
    """``{episode id: (game, weight)}`` of ``jobs`` (:class:`socialgym_agents.runner.EpisodeJob`):
    the weight is the share of a job's seats whose policy is not scripted (a model or a human
    decides there; a scripted seat's turn takes no time)."""
    return {job.episode_id: (job.game, sum(spec.kind != "scripted" for spec in job.specs) / len(job.specs))
            for job in jobs}


PRIOR_EPISODES = 2     # scripted:random episodes per game that set its length before one of its own ends


def random_play_turns(shards: dict, episodes: int = PRIOR_EPISODES) -> dict:
    """``{game: mean turns}`` of ``episodes`` episodes of each game of ``shards`` (``{game: [jobs]}``)
    played by ``scripted:random`` seats, with the config and seeds of its first jobs: the length
    the bar expects of a game until one of its own episodes ends (milliseconds a game; a model's
    episodes may run longer or shorter, and replace it as they end)."""
    from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode
    pool = PolicyPool()
    turns = {}
    for game, jobs in shards.items():
        played = [len(play_episode(EpisodeJob(game, job.seed, ["scripted:random"] * len(job.seats), config=job.config),
                                   pool)["turns"]) for job in list(jobs)[:episodes]]
        if played:
            turns[game] = sum(played) / len(played)
    return turns
