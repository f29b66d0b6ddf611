"""Undercover — 6 players: 4 Civilians (word A) vs 2 Undercovers (related word B).

Create: ``socialgym_env.make("undercover", roles_known=True, rounds=6)``

A pair of related words is drawn from ``socialgym_env/data/undercover_pairs.json`` (44
pairs; which of the two is the Civilians' word is drawn with the env's RNG too). Each
Civilian is told word A, each Undercover word B. The two Undercovers do not know each other.

- ``roles_known=True`` (default, as in the paper): each player is also told its own role.
- ``roles_known=False`` (the classic rule): players know only their word; their role shows
  as ``unknown`` in the observation and in ``infos`` until the game is over.

The first speaker is drawn with the env's RNG and moves one seat on each round.

| Phase       | Who                        | Actions                                  |
|-------------|----------------------------|------------------------------------------|
| description | live players, round-robin  | ``say TEXT`` (describe your word) / ``pass`` |
| vote        | live players, simultaneous | ``vote NAME`` (another live player)      |

Vote: plurality, a tie eliminates nobody; the eliminated player's role is announced.
Endings, checked after each vote: both Undercovers out → Civilians win; live Undercovers ≥
live Civilians → Undercovers win; any Undercover alive after round ``rounds`` (6) →
Undercovers win. Saying your own word is not forbidden (it only helps the other side).

Observation: rules, your word, your role when ``roles_known``; the descriptions and votes.
``infos[a]["game_state"]``: round, live players, eliminated players with roles, the
descriptions so far, ``word`` (your own) and ``role`` (yours, or None when not known).
Reward (team): winners +1, losers −1. Metrics: ``undercovers_left``, ``rounds``.
Invalid-action fallbacks: description → pass; vote → a random legal vote. Turn cap 300
(never reached: at most 12 decisions per round).
Version history: v0 initial.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from ..game import Game, GameInfo, TEAM
from ..patterns import exile_by_vote, hidden_minority_winner, rotating_from, talk_phase, vote_phase

CIVILIAN, UNDERCOVER = "Civilian", "Undercover"
CIVILIAN_TEAM, UNDERCOVER_TEAM = "civilians", "undercovers"
UNKNOWN = "unknown"


@functools.lru_cache(maxsize=None)
def word_pairs() -> tuple:
    """The related word pairs: ``([{"word", "hints"}, {"word", "hints"}], ...)``."""
    text = resources.files("socialgym_env").joinpath("data", "undercover_pairs.json").read_text("utf-8")
    return tuple(json.loads(text)["pairs"])


def draw_words(rng, pairs: tuple) -> tuple[str, str]:
    """(Civilian word, Undercover word) for the episode (module-level so tests can swap it)."""
    pair = [entry["word"] for entry in rng.choice(pairs)]
    rng.shuffle(pair)
    return pair[0], pair[1]


def undercover_winner(live_undercovers: int, live_civilians: int, round_no: int, rounds: int):
    """The winning team after a vote, or None to play on."""
    return hidden_minority_winner(live_undercovers, live_civilians, round_no, rounds, UNDERCOVER_TEAM, CIVILIAN_TEAM)


class Undercover(Game):
    info = GameInfo(
        id="undercover", name="Undercover", category="hidden_role", num_players=6,
        information="hidden_roles", communication="free_form", horizon="open_ended",
        iteration="up to 6 rounds", skills=("deception", "persuasion", "tom"), outcome=TEAM,
        max_steps=300, roles=((CIVILIAN, 4, CIVILIAN_TEAM), (UNDERCOVER, 2, UNDERCOVER_TEAM)),
        main_role=CIVILIAN, alt_role=UNDERCOVER)
    config_defaults = {"roles_known": True, "rounds": 6}

    config_ranges = {"rounds": (1, None)}

    def phases(self):
        return [
            talk_phase("description", lambda s: s.goto("vote"), actors=rotating_from(lambda s: s.g.first),
                       instructions="Describe your word in one message without saying it, or pass."),
            vote_phase("vote", self._voted,
                       instructions="Vote for the player you think has the other word."),
        ]

    # ------------------------------------------------------------------ rules
    def setup(self, state):
        civilian_word, undercover_word = draw_words(state.rng, word_pairs())
        state.g.words = {CIVILIAN: civilian_word, UNDERCOVER: undercover_word}
        state.g.first = state.rng.choice(state.agents)
        state.round = 1
        for agent in state.agents:
            state.tell(agent, self._word_line(state, agent))
        self._round_start(state)
        state.goto("description")

    def _word_line(self, state, agent):
        word = self.word_of(state, agent)
        if not self.config["roles_known"]:
            return f"Your word is {word}."
        if state.role(agent) == UNDERCOVER:
            return (f"You are an Undercover. Your word is {word}; the Civilians have a different, related "
                    f"word. The other Undercover has your word; you do not know who it is.")
        return f"You are a Civilian. Your word is {word}."

    def word_of(self, state, agent) -> str:
        return state.g.words[state.role(agent)]

    def _round_start(self, state):
        state.announce(f"Round {state.round} of {self.config['rounds']}: descriptions start with "
                       f"{state.name(state.g.first)}.")

    def _voted(self, state, actions):
        exile_by_vote(state, actions)
        winner = undercover_winner(len(state.with_role(UNDERCOVER)), len(state.with_role(CIVILIAN)),
                                   state.round, self.config["rounds"])
        if winner is None:
            state.round += 1
            state.g.first = state.next_alive(state.g.first)
            self._round_start(state)
            state.goto("description")
            return
        words = state.g.words
        state.announce(f"The Civilians' word was {words[CIVILIAN]}; the Undercovers' word was {words[UNDERCOVER]}. "
                       f"Undercovers: {state.names(state.with_role(UNDERCOVER, alive_only=False))}.")
        if winner == CIVILIAN_TEAM:
            state.finish("both Undercovers were eliminated: the Civilians win",
                         winners=state.on_team(CIVILIAN_TEAM, alive_only=False))
        else:
            live_u, live_c = len(state.with_role(UNDERCOVER)), len(state.with_role(CIVILIAN))
            reason = ("the Undercovers are no longer outnumbered" if live_u >= live_c
                      else "an Undercover survived every round")
            state.finish(f"{reason}: the Undercovers win",
                         winners=state.on_team(UNDERCOVER_TEAM, alive_only=False))

    # ------------------------------------------------------------------ text
    def known_role(self, state, agent):
        if self.config["roles_known"] or state.finished:
            return super().known_role(state, agent)
        return UNKNOWN, ""

    def description(self, state):
        text = ("Undercover: 6 players. Four Civilians share one secret word; two Undercovers have a "
                "different but related word and do not know each other. Each round every live player "
                "describes their word in one message (round-robin), then everyone votes (plurality, a "
                "tie eliminates nobody) and the eliminated player's role is revealed. The Civilians win "
                "when both Undercovers are out; the Undercovers win when they are no longer "
                f"outnumbered or when one of them survives {self.config['rounds']} rounds.")
        if not self.config["roles_known"]:
            text += " You are told only your word, not whether you are a Civilian or an Undercover."
        return text

    def goal(self, state, agent):
        if not self.config["roles_known"]:
            return ("Work out from the descriptions whether your word is the majority's; help your side "
                    "(Civilians: eliminate the two players with the other word; Undercovers: survive).")
        if state.role(agent) == UNDERCOVER:
            return "Blend in with the Civilians' word and survive the votes."
        return "Find and vote out the two Undercovers, who have a different word."

    def secret(self, state, agent):
        return [self._word_line(state, agent)]

    def status(self, state, agent):
        lines = [f"Round {state.round} of {self.config['rounds']}. Live players: {state.names(state.alive())}."]
        gone = [s for s in state.seats if not s.alive]
        if gone:
            lines.append("Eliminated: " + ", ".join(f"{s.name} ({s.role})" for s in gone) + ".")
        return lines

    def public_data(self, state, agent):
        talk = [[m.round, m.sender, m.text] for m in state.messages
                if m.phase == "description" and m.sender is not None]
        return {"round": state.round, "rounds": self.config["rounds"], "alive": state.alive(),
                "eliminated": {s.agent: s.role for s in state.seats if not s.alive},
                "talk": talk, "first_speaker": state.g.first, "word": self.word_of(state, agent),
                "role": self.known_role(state, agent)[0] if self.config["roles_known"] else None,
                "roles_known": self.config["roles_known"]}

    def metrics(self, state):
        return {"undercovers_left": len(state.with_role(UNDERCOVER)), "rounds": state.round}


GAME = Undercover
