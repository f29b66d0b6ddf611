"""Self-play bookkeeping shared by the LLM trainer (``socialgym_training/selfplay/``) and the tabular
benchmark (``socialgym_benchmarks/studies/selfplay_kuhn.py``): who plays which seat, the role-conditioned
baseline, zero-advantage filtering and the pool of past checkpoints. Pure Python, no model.

SPIRAL-style self-play (Liu et al., 2025): one shared policy plays every seat of a game; each
seat's trajectory is a training row scored by its own outcome. The advantage of a row is its
reward minus the moving average of rewards of the same (game, role) -- role-conditioned
advantage estimation (RAE) -- because seats are not symmetric (the first mover in poker, the
werewolves against the villagers) and a shared baseline would credit the role, not the play.
Rows whose advantage is zero carry no gradient and are dropped before the update.

**Seating** (:func:`seat_assignment`): an episode is either pure self-play (every seat played by
the current policy) or against a frozen opponent drawn by the :class:`CheckpointPool` (a past
checkpoint or a fixed policy such as a scripted baseline); then the current policy plays one
side and the opponent the rest: in games without teams one seat, ``player_<e mod N>`` in
episode ``e`` (every seat gets trained); in team games (``GameInfo.outcome == "team"``) every
seat of one team, the teams (or only the ``learner_teams``) taking turns by episode number
likewise (a team is the seat's real team; hidden roles stay hidden to the players). Only the
current policy's seats become training rows.

**Turn-level credit** (:func:`turn_advantages`): beside RAE, each turn of a row can get its own
advantage, from the return that follows it (MARSHAL-style, normalised per role or agent).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional, Sequence

CURRENT = "current"


# ------------------------------------------------------------------ role-conditioned baseline
@dataclass
class RoleBaseline:
    """Per-(game, role) exponential moving average of rewards.

    ``advantages(rows)`` uses the baselines as they stood before the batch (so the rows of one
    batch are scored alike, whatever their order); ``update(rows)`` then moves each role's
    baseline ``b <- b + rate * (R - b)`` once per row, in order. ``rate`` 0.05 is SPIRAL's decay
    0.95; a role starts at baseline 0 (the value of a fair zero-sum game)."""

    rate: float = 0.05
    values: dict = field(default_factory=dict)

    def __post_init__(self):
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"the baseline rate must be in (0, 1], got {self.rate}")

    def value(self, role_key) -> float:
        return self.values.get(role_key, 0.0)

    def advantages(self, rows: Sequence[tuple]) -> list:
        """``rows``: (role key, reward) pairs; returns reward - baseline(role) per row."""
        return [reward - self.value(role_key) for role_key, reward in rows]

    def update(self, rows: Sequence[tuple]) -> None:
        for role_key, reward in rows:
            b = self.value(role_key)
            self.values[role_key] = b + self.rate * (reward - b)

    def advantages_then_update(self, rows: Sequence[tuple]) -> list:
        out = self.advantages(rows)
        self.update(rows)
        return out


# ------------------------------------------------------------------ turn-level credit
def returns_to_go(turn_rewards: Sequence[float], discount: float = 1.0) -> list:
    """The return that follows each turn: ``G_t = r_t + discount * G_{t+1}``, where ``r_t`` is
    the reward the seat was dealt after its turn ``t`` and before its next (the terminal reward
    goes to its last turn)."""
    out, total = [0.0] * len(turn_rewards), 0.0
    for t in range(len(turn_rewards) - 1, -1, -1):
        total = turn_rewards[t] + discount * total
        out[t] = total
    return out


def turn_advantages(rows: Sequence[tuple], discount: float = 1.0, eps: float = 1e-6,
                    deals: Optional[Sequence] = None) -> list:
    """Turn-level advantages in the style of MARSHAL: per row (``(group key, turn rewards)``,
    the group being the role or the agent), each turn's return-to-go minus the mean return of
    the batch's turns of the same group at the same turn position, divided by the standard
    deviation of the group's returns (agent-specific normalisation). With ``deals`` (per row,
    the GRPO group: episodes replaying one seed and role deal) the mean is taken within the
    deal, so a turn is compared with the same seat's turns on the same cards. A mean or a scale
    taken over returns that are all equal gives zero advantages (nothing to learn from; the
    filter drops them)."""
    import statistics
    deals = deals if deals is not None else [None] * len(rows)
    returns = [returns_to_go(rewards, discount) for _, rewards in rows]
    by_position: dict = {}
    by_group: dict = {}
    for (group, _), deal, values in zip(rows, deals, returns):
        for t, value in enumerate(values):
            by_position.setdefault((group, deal, t), []).append(value)
            by_group.setdefault(group, []).append(value)
    mean = {key: sum(v) / len(v) for key, v in by_position.items()}
    scale = {key: statistics.pstdev(v) for key, v in by_group.items()}
    return [[(value - mean[(group, deal, t)]) / scale[group] if scale[group] > eps else 0.0
             for t, value in enumerate(values)] for (group, _), deal, values in zip(rows, deals, returns)]


def keep_nonzero(advantages: Sequence[float], eps: float = 1e-8) -> list:
    """Indices of the rows to train on: those whose advantage is not (numerically) zero."""
    return [i for i, a in enumerate(advantages) if abs(a) > eps]


# ------------------------------------------------------------------ the opponent pool
class CheckpointPool:
    """Past checkpoints of the learner, as opponents.

    ``add(step, checkpoint)`` keeps at most ``capacity`` of them (the oldest is dropped).
    ``sample(rng)`` draws the opponent of one episode: the current policy itself (:data:`CURRENT`)
    with probability ``self_play``, otherwise a stored checkpoint chosen uniformly at random
    (the current policy while the pool is empty). ``checkpoint`` is whatever the caller plays
    from: LoRA weights, a tabular policy. ``fixed``: frozen opponents that are not checkpoints
    (policy specs such as ``scripted:heuristic``); when the draw is not self-play, one of them,
    uniformly, with probability ``fixed_share`` (always while the pool is empty), else a
    checkpoint."""

    def __init__(self, capacity: int = 4, self_play: float = 0.5, fixed: Sequence[str] = (), fixed_share: float = 0.0):
        if capacity < 0 or not 0.0 <= self_play <= 1.0 or not 0.0 <= fixed_share <= 1.0:
            raise ValueError("capacity must be >= 0 and self_play and fixed_share probabilities")
        self.capacity = capacity
        self.self_play = self_play
        self.fixed, self.fixed_share = list(fixed), fixed_share if fixed else 0.0
        self.entries: list = []          # [(step, checkpoint)], oldest first

    def add(self, step: int, checkpoint) -> None:
        if self.capacity == 0:
            return
        self.entries.append((step, checkpoint))
        del self.entries[:-self.capacity]

    def names(self) -> list:
        return [f"step{step}" for step, _ in self.entries]

    def get(self, name: str):
        for step, checkpoint in self.entries:
            if f"step{step}" == name:
                return checkpoint
        raise KeyError(name)

    def sample(self, rng: random.Random) -> str:
        if not (self.entries or self.fixed) or rng.random() < self.self_play:
            return CURRENT
        if self.fixed and (not self.entries or rng.random() < self.fixed_share):
            return rng.choice(self.fixed)
        return rng.choice(self.names())

    def state(self) -> dict:
        """What a resumed run needs besides the checkpoints' weights: the steps kept."""
        return {"steps": [step for step, _ in self.entries]}


# ------------------------------------------------------------------ seating and roles
def seat_assignment(agents: Sequence[str], teams: Sequence[str], team_game: bool, opponent: str,
                    episode_index: int, learner_teams: Sequence[str] = ()) -> dict:
    """{agent: player name} for one episode: every seat :data:`CURRENT` against itself; against
    a checkpoint ``opponent`` the current policy takes one seat (games without teams) or one
    team (team games), alternating by ``episode_index`` as the module docstring says; with
    ``learner_teams`` only those teams take turns (e.g. always the werewolves)."""
    if opponent == CURRENT:
        return {a: CURRENT for a in agents}
    if team_game:
        # by team name, not by seat: the seats' teams change with the deal, the turn order must not
        order = sorted(set(teams) & set(learner_teams) if learner_teams else set(teams))
        if not order:
            raise ValueError(f"no seat is on the learner's teams {sorted(learner_teams)} (teams: {sorted(set(teams))})")
        mine = order[episode_index % len(order)]
        return {a: CURRENT if t == mine else opponent for a, t in zip(agents, teams)}
    mine = agents[episode_index % len(agents)]
    return {a: CURRENT if a == mine else opponent for a in agents}


def role_key(game_id: str, agent: str, role: str, has_roles: bool) -> tuple:
    """The RAE group of a seat: (game, role) in games with roles, (game, seat) otherwise (the
    seat order is the role of a two-player game: the first mover's value differs)."""
    return (game_id, role if has_roles else agent)


@dataclass
class Row:
    """One training row: one seat's whole trajectory in one episode."""

    episode: int
    agent: str
    role_key: tuple
    reward: float
    player: str = CURRENT
    advantage: Optional[float] = None
    data: object = None          # what the learner trains on (token ids, tabular decisions)
