"""Spyfall — 4 players: 1 Spy vs 3 Non-Spies. Hidden roles, free-form talk.

Create: ``socialgym_env.make("spyfall", spy_can_guess=False, rounds=4)``

A location is drawn from the bank in ``socialgym_env/data/spyfall_locations.json`` (32
locations). Every Non-Spy is told the location privately together with a flavour role there
(e.g. "Pilot" on the Airplane); the Spy is told only that it is the Spy. The full location
list is public (it is in every seat's rules text). The first speaker is drawn with the env's
RNG and moves one seat on (to the next live player) each round.

| Phase       | Who                    | Actions                                                 |
|-------------|------------------------|---------------------------------------------------------|
| questioning | live players, round-robin | ``say TEXT`` (a question to a named player, or an answer) / ``pass``; the Spy also ``guess LOCATION`` when ``spy_can_guess`` |
| vote        | live players, simultaneous | ``vote NAME`` (another live player)                  |

Vote: plurality; a tie eliminates nobody. The eliminated player's role is announced.
Endings, checked after each vote: Spy eliminated → Non-Spies win; Spy alive and live Spies ≥
live Non-Spies → Spy wins; Spy still alive after round ``rounds`` (4) → Spy wins. Variant
``spy_can_guess=True`` (the published rule): on its questioning turn the Spy may instead
``guess LOCATION`` (case and punctuation insensitive; must name a location of the list):
right → Spy wins, wrong → Non-Spies win.

Observation: rules and location list, your role; Non-Spies also the location and their
flavour role. ``infos[a]["game_state"]``: round, live players, eliminated players with roles,
the talk so far, and ``location`` for Non-Spies only (None for the Spy).
Reward (team): winners +1, losers −1. Metrics: ``spy_eliminated``, ``spy_guessed``, ``rounds``.
Invalid-action fallbacks: questioning → pass; vote → a random legal vote. Turn cap 200 (never
reached: at most 8 decisions per round).
Version history: v0 initial.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from ..actions import ActionSpec, Text
from ..game import Game, GameInfo, Phase, TEAM
from ..patterns import exile_by_vote, hidden_minority_winner, normalize_word, rotating_from, talk_specs, vote_phase

SPY, NON_SPY = "Spy", "Non-Spy"
SPY_TEAM, NON_SPY_TEAM = "spy", "non_spies"


@functools.lru_cache(maxsize=None)
def locations() -> tuple:
    """The location bank: ``({"name", "roles", "keywords"}, ...)``."""
    text = resources.files("socialgym_env").joinpath("data", "spyfall_locations.json").read_text("utf-8")
    return tuple(json.loads(text)["locations"])


def location_names() -> list[str]:
    return [loc["name"] for loc in locations()]


def draw_location(rng, bank: tuple) -> dict:
    """The episode's location (module-level so tests can swap it)."""
    return rng.choice(bank)


def match_location(text: str):
    """The location a guess names (case and punctuation insensitive), or None."""
    key = normalize_word(text)
    return next((name for name in location_names() if normalize_word(name) == key), None)


def spyfall_winner(live_spies: int, live_non_spies: int, round_no: int, rounds: int):
    """The winning team after a vote, or None to play on."""
    return hidden_minority_winner(live_spies, live_non_spies, round_no, rounds, SPY_TEAM, NON_SPY_TEAM)


class Spyfall(Game):
    info = GameInfo(
        id="spyfall", name="Spyfall", category="hidden_role", num_players=4,
        information="hidden_roles", communication="free_form", horizon="open_ended",
        iteration="up to 4 rounds", skills=("deception", "persuasion", "tom"), outcome=TEAM,
        max_steps=200, roles=((SPY, 1, SPY_TEAM), (NON_SPY, 3, NON_SPY_TEAM)),
        main_role=NON_SPY, alt_role=SPY)
    config_defaults = {"spy_can_guess": False, "rounds": 4}

    config_ranges = {"rounds": (1, None)}

    def phases(self):
        return [
            Phase("questioning", actors=rotating_from(lambda s: s.g.first), grammar=self._talk_specs,
                  on_action=self._talked, resolve=lambda s, a: s.goto("vote"), fallback="pass",
                  instructions=self._talk_instructions),
            vote_phase("vote", self._voted, instructions="Vote for the player you think is the Spy."),
        ]

    # ------------------------------------------------------------------ rules
    def setup(self, state):
        location = draw_location(state.rng, locations())
        state.g.location = location["name"]
        non_spies = state.with_role(NON_SPY)
        flavour = state.rng.sample(location["roles"], len(non_spies))
        state.g.flavour = dict(zip(non_spies, flavour))
        state.g.first = state.rng.choice(state.agents)
        state.g.talk = []           # [(round, agent, text)]
        state.g.spy_guess = None
        state.round = 1
        for agent in state.agents:
            if state.role(agent) == SPY:
                state.tell(agent, "You are the Spy. You do not know the location.")
            else:
                state.tell(agent, f"You are not the Spy. The location is {state.g.location}; "
                                  f"your role there: {state.g.flavour[agent]}.")
        self._round_start(state)
        state.goto("questioning")

    def _round_start(self, state):
        state.announce(f"Round {state.round} of {self.config['rounds']}: questioning starts with "
                       f"{state.name(state.g.first)}.")

    def _talk_specs(self, state, agent):
        specs = talk_specs()
        if self.config["spy_can_guess"] and state.role(agent) == SPY:
            specs.append(ActionSpec("guess", (Text(60, name="LOCATION"),),
                                    help="reveal yourself and guess the location (ends the game)",
                                    sampler=lambda rng: (rng.choice(location_names()),),
                                    check=lambda v: None if match_location(v[0]) else
                                    f"{v[0]!r} is not a location of the list"))
        return specs

    def _talk_instructions(self, state, agent):
        text = "Ask a named player a question about the location, or answer one (one message), or pass."
        if self.config["spy_can_guess"] and state.role(agent) == SPY:
            text += " As the Spy you may instead guess the location."
        return text

    def _talked(self, state, agent, action):
        if action.type == "say":
            state.g.talk.append((state.round, agent, action.arg))
            state.say(agent, action.arg)
        elif action.type == "guess":
            guess = match_location(action.arg)
            state.g.spy_guess = guess
            state.announce(f"{state.name(agent)} reveals being the Spy and guesses the location: {guess}. "
                           f"The location was {state.g.location}.")
            if guess == state.g.location:
                state.finish("the Spy guessed the location", winners=[agent])
            else:
                state.finish("the Spy guessed the location wrong: the Non-Spies win",
                             winners=state.on_team(NON_SPY_TEAM, alive_only=False))

    def _voted(self, state, actions):
        exile_by_vote(state, actions)
        winner = spyfall_winner(len(state.with_role(SPY)), len(state.with_role(NON_SPY)),
                                state.round, self.config["rounds"])
        if winner == NON_SPY_TEAM:
            state.announce(f"The location was {state.g.location}.")
            state.finish("the Spy was eliminated: the Non-Spies win",
                         winners=state.on_team(NON_SPY_TEAM, alive_only=False))
        elif winner == SPY_TEAM:
            spy = state.with_role(SPY)[0]
            state.announce(f"{state.name(spy)} was the Spy. The location was {state.g.location}.")
            reason = ("the Spy survived every round" if len(state.with_role(SPY)) < len(state.with_role(NON_SPY))
                      else "the Spy is no longer outnumbered")
            state.finish(f"{reason}: the Spy wins", winners=[spy])
        else:
            state.round += 1
            state.g.first = state.next_alive(state.g.first)
            self._round_start(state)
            state.goto("questioning")

    # ------------------------------------------------------------------ text
    def description(self, state):
        text = (f"Spyfall: {self.num_players} players, one secretly the Spy. The others (Non-Spies) "
                f"know the location; the Spy does not. Each round every live player speaks once, "
                f"round-robin: ask a named player a question about the location or answer one. "
                f"Then everyone votes (plurality, a tie eliminates nobody); the eliminated player's "
                f"role is revealed. The Non-Spies win when the Spy is eliminated; the Spy wins by "
                f"surviving {self.config['rounds']} rounds or when no longer outnumbered. ")
        if self.config["spy_can_guess"]:
            text += ("On its turn the Spy may instead guess the location: right, the Spy wins; "
                     "wrong, the Non-Spies win. ")
        return text + "Possible locations: " + ", ".join(location_names()) + "."

    def goal(self, state, agent):
        if state.role(agent) == SPY:
            return "Stay unnoticed and work out the location from the others' questions and answers."
        return "Show you know the location without giving it away to the Spy, and vote the Spy out."

    def secret(self, state, agent):
        if state.role(agent) == SPY:
            return ["You are the Spy: you do not know the location."]
        return [f"The location is: {state.g.location}.", f"Your role there: {state.g.flavour[agent]}."]

    def status(self, state, agent):
        lines = [f"Round {state.round} of {self.config['rounds']}. Live players: {state.names(state.alive())}."]
        gone = [s for s in state.seats if not s.alive]
        if gone:
            lines.append("Eliminated: " + ", ".join(f"{s.name} ({s.role})" for s in gone) + ".")
        return lines

    def public_data(self, state, agent):
        return {"round": state.round, "rounds": self.config["rounds"], "alive": state.alive(),
                "eliminated": {s.agent: s.role for s in state.seats if not s.alive},
                "talk": [[r, a, t] for r, a, t in state.g.talk], "first_speaker": state.g.first,
                "spy_can_guess": self.config["spy_can_guess"],
                "location": state.g.location if state.role(agent) == NON_SPY else None}

    def metrics(self, state):
        return {"spy_eliminated": not state.with_role(SPY), "spy_guessed": state.g.spy_guess,
                "rounds": state.round}


GAME = Spyfall
