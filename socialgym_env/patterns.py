"""Building blocks that several games share: actor selectors, talk and vote phases, vote
counting, and the repeated simultaneous-move game. Games compose these instead of copying."""
from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable, Optional, Sequence

from .actions import ActionSpec, Player, Text
from .game import Phase
from .state import PUBLIC, TEAM, State

TALK_MAX_CHARS = 600


# ------------------------------------------------------------------ actor selectors
def everyone(state: State) -> list[str]:
    """All live seats in seat order."""
    return state.alive()


def role_actors(*roles: str) -> Callable[[State], list[str]]:
    return lambda state: state.with_role(*roles)


def rotating_from(first: Callable[[State], str]) -> Callable[[State], list[str]]:
    """All live seats in seat order starting at ``first(state)`` (rotating speaker order)."""
    def actors(state: State) -> list[str]:
        start = first(state)
        order = [start]
        while len(order) < len(state.alive()):
            order.append(state.next_alive(order[-1]))
        return [a for a in order if state.seat[a].alive]
    return actors


# ------------------------------------------------------------------ grammar helpers
def player_arg(state: State, agents: Iterable[str], name: str = "NAME") -> Player:
    return Player(tuple((a, state.name(a)) for a in agents), name=name)


_TALK_SPECS: dict = {}


def talk_specs(max_length: int = TALK_MAX_CHARS, allow_pass: bool = True) -> list[ActionSpec]:
    # the same specs for every talk turn of every game: built once per (length, pass) pair,
    # a new list each call
    specs = _TALK_SPECS.get((max_length, allow_pass))
    if specs is None:
        specs = _TALK_SPECS[max_length, allow_pass] = (
            (ActionSpec("say", (Text(max_length, name="MESSAGE"),), help="speak"),)
            + ((ActionSpec("pass", help="stay silent"),) if allow_pass else ()))
    return list(specs)


# ------------------------------------------------------------------ splits of a whole number
def random_split(rng, parts: int, total: int) -> tuple:
    """``parts`` non-negative integers summing to ``total``, from ``parts - 1`` random cut points
    in ``0..total`` (the env's RNG): a legal random split for an action whose numbers must add up
    (Dead Last's offer, Colonel Blotto's allocation) without enumerating every split."""
    cuts = sorted(rng.randint(0, total) for _ in range(parts - 1))
    bounds = [0, *cuts, total]
    return tuple(bounds[i + 1] - bounds[i] for i in range(parts))


# ------------------------------------------------------------------ talk phase
def is_talk_turn(info: dict) -> bool:
    """Whether a seat's decision is a talk turn it may pass (its only actions: ``say``, ``pass``):
    a policy that stays silent in talk answers it ``pass`` without reading the table."""
    return sorted(info.get("action_types") or ()) == ["pass", "say"]


def talk_phase(name: str, next_phase: Callable[[State], None], *,
               actors: Callable[[State], Sequence[str]] = everyone,
               visibility: str = PUBLIC, team: Optional[str] = None,
               instructions: str = "Say one message to the others, or pass.",
               max_length: int = TALK_MAX_CHARS) -> Phase:
    """Round-robin talk: each actor speaks once (or passes); later speakers see earlier ones.
    ``next_phase(state)`` moves the FSM when everyone has spoken. Invalid input: pass."""

    def on_action(state: State, agent: str, action) -> None:
        if action.type == "say":
            if visibility == TEAM:
                state.post(action.arg, sender=agent, visibility=TEAM, team=team or state.team(agent))
            else:
                state.say(agent, action.arg)

    return Phase(name, actors=actors, grammar=lambda s, a: talk_specs(max_length),
                 resolve=lambda state, actions: next_phase(state), on_action=on_action,
                 fallback="pass", instructions=instructions)


# ------------------------------------------------------------------ votes
def vote_specs(state: State, voter: str, candidates: Sequence[str], keyword: str = "vote",
               allow_abstain: bool = False, help: str = "") -> list[ActionSpec]:
    specs = [ActionSpec(keyword, (player_arg(state, candidates),), help=help)]
    if allow_abstain:
        specs.append(ActionSpec("abstain", help="vote for nobody"))
    return specs


def tally(votes: dict) -> Counter:
    """Count the targets of ``{voter: target}`` (None = abstained), ignoring abstentions."""
    return Counter(t for t in votes.values() if t is not None)


def plurality(state: State, votes: dict, *, tie: str = "none", announce: bool = True,
              label: str = "Votes", team: Optional[str] = None) -> Optional[str]:
    """The plurality target. ``tie="none"``: a tie picks nobody; ``tie="rng"``: the env's
    RNG breaks it and the transcript says so. Announces the tally in seat order — publicly, or
    to ``team`` only for a secret team vote."""
    say = (lambda text: state.tell_team(team, text)) if team else state.announce
    counts = tally(votes)
    if announce:
        cast = "; ".join(f"{state.name(v)} → {state.name(t) if t else 'nobody'}"
                         for v, t in sorted(votes.items(), key=lambda kv: state.seat[kv[0]].index))
        say(f"{label}: {cast}." if cast else f"{label}: none cast.")
    if not counts:
        return None
    top = max(counts.values())
    # The shared rules, "Votes": abstention is a candidate; if it has or ties the plurality,
    # nobody is chosen (one vote among three abstentions exiles nobody).
    abstentions = sum(1 for t in votes.values() if t is None)
    if abstentions >= top:
        if announce:
            say(f"Abstention has {abstentions} of {len(votes)} votes, as many as anyone or more: "
                "nobody is chosen.")
        return None
    leaders = sorted((a for a, c in counts.items() if c == top), key=lambda a: state.seat[a].index)
    if len(leaders) == 1:
        return leaders[0]
    if tie == "none":
        if announce:
            say(f"Tie between {state.names(leaders)}: nobody is chosen.")
        return None
    chosen = state.rng.choice(leaders)
    if announce:
        say(f"Tie between {state.names(leaders)}: broken at random, {state.name(chosen)} is chosen.")
    return chosen


def strict_majority(votes: dict, electorate: int) -> Optional[str]:
    """The target with more than half of ``electorate`` votes, else None."""
    counts = tally(votes)
    if not counts:
        return None
    target, count = max(counts.items(), key=lambda kv: kv[1])
    return target if count >= electorate // 2 + 1 else None


def vote_values(actions: dict, keyword: str = "vote") -> dict:
    """``{voter: target or None}`` from a simultaneous vote's actions."""
    return {a: (act.arg if act.type == keyword else None) for a, act in actions.items()}


def team_plurality(state: State, votes: dict, team: str, *, tie: str = "rng",
                   label: str = "Votes") -> Optional[str]:
    """:func:`plurality` for a team's secret vote (the Werewolves' night kill): the tally and
    any tie-break are told to ``team`` only, never announced publicly."""
    return plurality(state, votes, tie=tie, label=label, team=team)


# ------------------------------------------------------------------ hidden-role helpers
def normalize_word(text: str) -> str:
    """Case- and punctuation-insensitive form of a guessed word or phrase
    ("Space-Station!" == "space station"): casefolded letters and digits only."""
    return "".join(c for c in str(text).casefold() if c.isalnum())


def vote_phase(name: str, resolve: Callable[[State, dict], None], *,
               voters: Callable[[State], Sequence[str]] = everyone,
               candidates: Optional[Callable[[State, str], Sequence[str]]] = None,
               keyword: str = "vote", allow_abstain: bool = False,
               instructions: str = "Vote for the player to eliminate.") -> Phase:
    """A simultaneous vote: each voter names one candidate (default: the other live seats).
    ``resolve(state, actions)`` counts it (e.g. with :func:`exile_by_vote`). Invalid input:
    abstain when allowed, else a random legal vote."""
    candidates = candidates or (lambda state, voter: state.others(voter))
    return Phase(name, actors=voters, simultaneous=True, resolve=resolve,
                 grammar=lambda state, voter: vote_specs(state, voter, candidates(state, voter), keyword,
                                                         allow_abstain=allow_abstain),
                 fallback="abstain" if allow_abstain else "random", instructions=instructions)


def exile_by_vote(state: State, actions: dict, *, keyword: str = "vote", tie: str = "none",
                  reveal=True, label: str = "Votes") -> Optional[str]:
    """Count a simultaneous elimination vote by plurality (``tie`` as in :func:`plurality`),
    eliminate the chosen seat and announce it. ``reveal``: True announces the exiled seat's
    role, False does not, a function ``(state, agent) -> str`` gives the reveal text.
    Returns the exiled agent, or None when nobody goes."""
    target = plurality(state, vote_values(actions, keyword), tie=tie, label=label)
    if target is None:
        state.announce("Nobody is eliminated.")
        return None
    state.eliminate(target)
    if callable(reveal):
        state.announce(f"{state.name(target)} is eliminated. {reveal(state, target)}")
    elif reveal:
        role = state.role(target)
        article = "an" if role[:1].lower() in "aeiou" else "a"
        state.announce(f"{state.name(target)} is eliminated. {state.name(target)} was {article} {role}.")
    else:
        state.announce(f"{state.name(target)} is eliminated.")
    return target


def hidden_minority_winner(live_minority: int, live_majority: int, round_no: int, rounds: int,
                           minority_team: str, majority_team: str) -> Optional[str]:
    """The elimination rule of Spyfall and Undercover, checked after each vote: the hidden
    minority wiped out -> the majority wins; the minority at least as many as the majority, or
    still alive after the last round -> the minority wins; else None (play on)."""
    if live_minority == 0:
        return majority_team
    if live_minority >= live_majority or round_no >= rounds:
        return minority_team
    return None
