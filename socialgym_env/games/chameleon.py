"""Chameleon — 5 players: 1 Chameleon vs 4 Citizens. Hidden roles, free-form talk.

Create: ``socialgym_env.make("chameleon")``

A topic card (a category and 16 words, from ``socialgym_env/data/chameleon_cards.json``) is
drawn and shown to everyone; one word on it is the secret word. Each Citizen is told the
secret word privately; the Chameleon only sees the card. The first clue-giver is drawn with
the env's RNG; clues and discussion go round the table in seat order from there.

| Phase      | Who                          | Actions                                     |
|------------|------------------------------|---------------------------------------------|
| clue       | everyone, round-robin        | ``clue WORD`` — one word related to the secret word |
| discussion | everyone, round-robin        | ``say TEXT`` / ``pass``                     |
| vote       | everyone, simultaneous       | ``vote NAME`` (another player)              |
| guess      | the Chameleon, if caught     | ``guess WORD`` (case and punctuation insensitive) |

Vote: plurality. A tie, or a plurality on a Citizen (a wrong accusation) → the Chameleon
wins. A plurality on the Chameleon → it is caught and guesses the secret word: right →
Chameleon wins, wrong → Citizens win. A clue may be any single word (even the secret word:
that simply gives it away).

Observation: the rules, your role, the topic card, the secret word (Citizens only), the clues
and messages so far. ``infos[a]["game_state"]``: category, card words, clues, and
``secret_word`` for Citizens only (None for the Chameleon).
Reward (team): winners +1, losers −1. Metrics: ``caught``, ``guessed``.
Invalid-action fallbacks: clue → a random filler word; discussion → pass; vote → a random
legal vote; guess → a random word from the card. Turn cap 100 (never reached: an episode is
at most 16 decisions).
Version history: v0 initial.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from ..actions import Action, ActionSpec, Text, Word
from ..game import Game, GameInfo, Phase, TEAM
from ..patterns import normalize_word, plurality, rotating_from, talk_phase, vote_phase, vote_values

CHAMELEON, CITIZEN = "Chameleon", "Citizen"
CHAMELEON_TEAM, CITIZEN_TEAM = "chameleon", "citizens"


@functools.lru_cache(maxsize=None)
def topic_cards() -> tuple:
    """The topic cards: ``({"category": str, "words": [{"word", "hints"}, ...]}, ...)``."""
    text = resources.files("socialgym_env").joinpath("data", "chameleon_cards.json").read_text("utf-8")
    return tuple(json.loads(text)["cards"])


def draw_secret_word(rng, words: list) -> str:
    """The secret word among the card's words (module-level so tests can swap it)."""
    return rng.choice(words)


def guess_is_right(guess: str, secret: str) -> bool:
    """Case- and punctuation-insensitive comparison of the Chameleon's guess."""
    return normalize_word(guess) == normalize_word(secret) != ""


def vote_outcome(target, chameleon: str) -> str:
    """"tie" (nobody chosen), "wrong" (a Citizen accused) or "caught"."""
    if target is None:
        return "tie"
    return "caught" if target == chameleon else "wrong"


class Chameleon(Game):
    info = GameInfo(
        id="chameleon", name="Chameleon", category="hidden_role", num_players=5,
        information="hidden_roles", communication="free_form", horizon="single_round",
        iteration="1 round", skills=("deception", "persuasion", "tom"), outcome=TEAM, max_steps=100,
        roles=((CHAMELEON, 1, CHAMELEON_TEAM), (CITIZEN, 4, CITIZEN_TEAM)),
        main_role=CITIZEN, alt_role=CHAMELEON)

    def phases(self):
        order = rotating_from(lambda s: s.g.first)
        return [
            Phase("clue", actors=order, on_action=self._clue, resolve=lambda s, a: s.goto("discussion"),
                  grammar=lambda s, a: [ActionSpec("clue", (Word(40, name="WORD"),),
                                                   help="one word related to the secret word")],
                  fallback="random", instructions="Give a one-word clue related to the secret word."),
            talk_phase("discussion", lambda s: s.goto("vote"), actors=order,
                       instructions="Discuss who the Chameleon is (one message), or pass."),
            vote_phase("vote", self._voted, instructions="Vote for the player you think is the Chameleon."),
            Phase("guess", actors=lambda s: s.with_role(CHAMELEON), resolve=self._guessed,
                  grammar=lambda s, a: [ActionSpec("guess", (Text(60, name="WORD"),),
                                                   help="your guess of the secret word")],
                  fallback=self._guess_fallback,
                  instructions="You were caught. Guess the secret word from the card to still win."),
        ]

    # ------------------------------------------------------------------ rules
    def setup(self, state):
        card = state.rng.choice(topic_cards())
        state.g.category = card["category"]
        state.g.words = [w["word"] for w in card["words"]]
        state.g.word = draw_secret_word(state.rng, state.g.words)
        state.g.first = state.rng.choice(state.agents)
        state.g.clues = []          # [(agent, clue)] in order
        state.g.accused = None
        state.g.guess = None
        state.round = 1
        state.announce(f"Topic card — {state.g.category}: {', '.join(state.g.words)}.")
        for agent in state.agents:
            if state.role(agent) == CITIZEN:
                state.tell(agent, f"You are a Citizen. The secret word is {state.g.word}.")
            else:
                state.tell(agent, "You are the Chameleon. You do not know the secret word.")
        state.announce(f"Clues go round the table starting with {state.name(state.g.first)}.")
        state.goto("clue")

    def _clue(self, state, agent, action):
        state.g.clues.append((agent, action.arg))
        state.say(agent, action.arg)

    def _voted(self, state, actions):
        target = plurality(state, vote_values(actions), tie="none")
        chameleon = state.with_role(CHAMELEON, alive_only=False)[0]
        outcome = vote_outcome(target, chameleon)
        state.g.accused = target
        if outcome == "tie":
            state.announce(f"Nobody is accused. {state.name(chameleon)} was the Chameleon.")
            state.finish("the vote tied: the Chameleon escapes", winners=[chameleon])
        elif outcome == "wrong":
            state.announce(f"{state.name(target)} is accused but was a Citizen. "
                           f"{state.name(chameleon)} was the Chameleon.")
            state.finish("a Citizen was accused: the Chameleon wins", winners=[chameleon])
        else:
            state.announce(f"{state.name(chameleon)} is accused and is the Chameleon! "
                           f"{state.name(chameleon)} may now guess the secret word.")
            state.goto("guess")

    def _guess_fallback(self, state, agent):
        word = state.rng.choice(state.g.words)
        return Action("guess", (word,), f"guess {word}")

    def _guessed(self, state, actions):
        (agent, action), = actions.items()
        state.g.guess = action.arg
        right = guess_is_right(action.arg, state.g.word)
        state.announce(f"{state.name(agent)} guesses {action.arg!r}. The secret word was {state.g.word}.")
        if right:
            state.finish("the Chameleon was caught but guessed the secret word", winners=[agent])
        else:
            state.finish("the Chameleon was caught and guessed wrong: the Citizens win",
                         winners=state.on_team(CITIZEN_TEAM, alive_only=False))

    # ------------------------------------------------------------------ text
    def description(self, state):
        return ("Chameleon: 5 players, one secretly the Chameleon, the others Citizens. Everyone sees a "
                "topic card (a category and 16 words). The Citizens know which word is the secret word; "
                "the Chameleon does not. Each player gives a one-word clue, then everyone speaks once, "
                "then everyone votes for the player they think is the Chameleon (plurality). A tie or "
                "accusing a Citizen lets the Chameleon win. If the Chameleon is accused, it may guess "
                "the secret word: right, the Chameleon wins; wrong, the Citizens win.")

    def goal(self, state, agent):
        if state.role(agent) == CHAMELEON:
            return "Blend in without knowing the secret word; avoid the vote, or guess the word if caught."
        return "Give a clue that shows you know the word without giving it away; vote out the Chameleon."

    def secret(self, state, agent):
        if state.role(agent) == CHAMELEON:
            return ["You are the Chameleon: you do not know the secret word."]
        return [f"The secret word is: {state.g.word}."]

    def status(self, state, agent):
        lines = [f"Topic card — {state.g.category}: {', '.join(state.g.words)}."]
        if state.g.clues:
            lines.append("Clues: " + "; ".join(f"{state.name(a)}: {c}" for a, c in state.g.clues) + ".")
        return lines

    def public_data(self, state, agent):
        return {"category": state.g.category, "words": list(state.g.words),
                "clues": [[a, c] for a, c in state.g.clues], "first_speaker": state.g.first,
                "accused": state.g.accused,
                "secret_word": state.g.word if state.role(agent) == CITIZEN else None}

    def metrics(self, state):
        caught = state.g.accused is not None and state.role(state.g.accused) == CHAMELEON
        return {"caught": caught,
                "guessed": bool(caught and state.g.guess is not None and guess_is_right(state.g.guess, state.g.word))}


GAME = Chameleon
