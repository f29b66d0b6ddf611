"""Codenames — 4 players (4 to 8) in two teams, red and blue, each a spymaster and operatives.

Create: ``socialgym_env.make("codenames", num_players=6)`` (``num_players`` 4–8, default 4).

Setup. Each team has one spymaster; the other seats are operatives, alternately red and blue
(with an odd count red has one more); the roles are dealt with the env's RNG. 25 words are
drawn from the shipped list (``socialgym_env/data/codenames_words.json``) and shown to everyone
as a 5×5 grid. The key card, drawn with the env's RNG and shown to the two spymasters only,
gives the starting team (drawn at random, announced) 9 words, the other team 8, 7 bystanders
and 1 assassin. The teams alternate turns, the starting team first.

| Phase     | Who                                         | Actions                                          |
|-----------|---------------------------------------------|--------------------------------------------------|
| clue      | the spymaster of the team on turn           | ``clue WORD N`` — one word of letters only and a number 0–9 (public) |
| team_talk | its operatives, when it has two or more     | ``say MESSAGE`` / ``pass`` (one each, heard by the team only) |
| guess     | its operatives in turn, one guess each      | ``guess WORD`` (a face-down board word) / ``stop`` (after at least one guess) |

A clue is illegal when it is not a word of letters only, or when it is a face-down board word,
is part of one, or contains one (compared case-insensitively): ``sea`` is illegal while ``seal``
is face down. An illegal clue is penalised as the published rulebook says: the team's turn ends
at once, without a guess, and one of the other team's face-down words (drawn with the env's RNG)
is turned face up for them. A clue number
N allows up to N + 1 guesses; N = 0 allows any number of guesses. Each guess turns the word's
card face up for everyone: the team's own word → it may guess again (while guesses are left);
the other team's word (it counts for them) or a bystander → the turn ends; the assassin → the
guessing team loses at once. A team wins as soon as all its words are face up, whoever turned
the last one.

Observation: the grid with the face-up cards, the clues and guesses so far, whose turn it is,
and for a spymaster the key card (its private information; also in ``game_state["key"]``).
Operatives never see the key. ``game_state``: ``board``, ``revealed``, ``turn``, ``clue``,
``guesses``, ``guess_limit``, ``words_left``, ``team``, and ``key`` for spymasters only.

Reward (team): every member of the winning team +1, every member of the other −1.
Turn cap ``max_steps`` = 400 (never reached: every turn turns at least one of the 25 cards).
Invalid-action fallbacks: clue a random legal clue, team talk ``pass``, guess ``stop`` when
allowed, else a random face-down word.

Where the sources differ or are silent: the published rulebook (Czech Games Edition) lets a
clue of 0 allow any number of guesses; this follows it (a plain N + 1 would allow one). Its
``unlimited`` clue is not offered (0 already gives no limit). An illegal clue is a move with the
rulebook's penalty, not an invalid action, so every reply the action schema allows is a move;
the rulebook lets the other spymaster choose which of its words to cover, here the env's RNG
draws it. At the table operatives talk aloud;
here their talk goes to their own team (the spymaster hears it but may not answer), and with
several operatives the guesses go round them in seat order, one guess each.

Version history: v0 initial.
"""
from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Optional

from ..actions import Action, ActionSpec, Choice, Int, Word
from ..game import TEAM, Game, GameInfo, Phase
from ..patterns import normalize_word, talk_phase
from ..state import State

RED, BLUE = "red", "blue"
SPYMASTER, OPERATIVE = "Spymaster", "Operative"
BYSTANDER, ASSASSIN = "bystander", "assassin"
GRID, START_WORDS, OTHER_WORDS, BYSTANDERS = 25, 9, 8, 7
MAX_CLUE = 9
# clues the invalid-action fallback and random play draw from (not on the word list)
FILLER_CLUES = ("thing", "idea", "something", "stuff", "maybe", "anything")


@functools.lru_cache(maxsize=None)
def associations() -> dict:
    """The shipped association groups: ``{tag: (word, ...)}``."""
    text = resources.files("socialgym_env").joinpath("data", "codenames_words.json").read_text("utf-8")
    return {tag: tuple(words) for tag, words in json.loads(text)["associations"].items()}


@functools.lru_cache(maxsize=None)
def word_list() -> tuple:
    """Every board word, sorted (the draw reads this order)."""
    return tuple(sorted({w for words in associations().values() for w in words}))


# ------------------------------------------------------------------ pure rules
def deal_key(rng, words: list, starting: str) -> dict:
    """``{word: red/blue/bystander/assassin}``: the starting team 9, the other 8, 7, 1."""
    other = BLUE if starting == RED else RED
    cards = [starting] * START_WORDS + [other] * OTHER_WORDS + [BYSTANDER] * BYSTANDERS + [ASSASSIN]
    rng.shuffle(cards)
    return dict(zip(words, cards))


def clue_problem(clue: str, face_down: list) -> Optional[str]:
    """Why ``clue`` is illegal against the face-down board words, or None."""
    if not clue.isalpha():
        return f"a clue is one word of letters only (got {clue!r})"
    folded = normalize_word(clue)
    for word in face_down:
        if folded == word:
            return f"{clue!r} is a word on the board"
        if folded in word:
            return f"{clue!r} is part of the board word {word!r}"
        if word in folded:
            return f"{clue!r} contains the board word {word!r}"
    return None


def guess_limit(number: int) -> Optional[int]:
    """Guesses a clue of ``number`` allows: N + 1, or no limit (None) for 0."""
    return None if number == 0 else number + 1


def guess_outcome(card: str, team: str) -> str:
    """"again" (own word), "end" (the other team's word or a bystander) or "assassin"."""
    if card == ASSASSIN:
        return "assassin"
    return "again" if card == team else "end"


def other_team(team: str) -> str:
    return BLUE if team == RED else RED


def _description(num_players: int) -> str:
    return (f"Codenames, {num_players} players in two teams, red and blue, each with one spymaster and "
            f"{'one operative' if num_players == 4 else 'operatives'}. {GRID} words lie on the table; "
            f"only the spymasters see the key card: the starting team's {START_WORDS} words, the other "
            f"team's {OTHER_WORDS}, {BYSTANDERS} bystanders and 1 assassin. On its turn a team's spymaster "
            f"gives a clue: one word and a number N from 0 to {MAX_CLUE} (a clue that is a face-down "
            f"word, part of one, or contains one ends the turn and gives the other team one of its "
            f"words). Its operatives then guess words one at a time, up to "
            f"N + 1 guesses (any number after a 0), and may stop after the first. Their own word: they "
            f"may go on; the other team's word or a bystander: the turn ends; the assassin: their team "
            f"loses at once. The first team with all its words face up wins.")


class Codenames(Game):
    info = GameInfo(
        id="codenames", name="Codenames", category="social_strategy", num_players=4,
        information="hidden_state", communication="free_form", horizon="open_ended",
        iteration="until a team's words are all found", skills=("cooperation", "tom"),
        outcome=TEAM, max_steps=400,
        roles=((SPYMASTER, 1, RED), (OPERATIVE, 1, RED), (SPYMASTER, 1, BLUE), (OPERATIVE, 1, BLUE)),
        description=_description(4))
    player_counts = (4, 5, 6, 7, 8)
    config_defaults: dict = {}

    def role_deck(self):
        operatives = [(OPERATIVE, RED if i % 2 == 0 else BLUE) for i in range(self.num_players - 2)]
        return [(SPYMASTER, RED), (SPYMASTER, BLUE)] + operatives

    # -- flow -----------------------------------------------------------------------------
    def phases(self):
        return [
            Phase("clue", actors=lambda s: [self.spymaster(s, s.g.turn)], grammar=self._clue_grammar,
                  resolve=self._clued, fallback="random",
                  instructions="You are the spymaster: give a one-word clue and a number for your team."),
            talk_phase("team_talk", lambda s: s.goto("guess"), actors=lambda s: self.operatives(s, s.g.turn),
                       visibility="team", instructions="Discuss the clue with your team (one message), or pass."),
            Phase("guess", actors=lambda s: [self._guesser(s)], grammar=self._guess_grammar,
                  resolve=self._guessed, fallback=self._guess_fallback, instructions=self._guess_instructions),
        ]

    @staticmethod
    def spymaster(state, team):
        return next(a for a in state.agents if state.team(a) == team and state.role(a) == SPYMASTER)

    @staticmethod
    def operatives(state, team):
        return [a for a in state.agents if state.team(a) == team and state.role(a) == OPERATIVE]

    def _guesser(self, state):
        ops = self.operatives(state, state.g.turn)
        return ops[state.g.guess_count[state.g.turn] % len(ops)]

    def setup(self, state: State) -> None:
        g = state.g
        g.board = state.rng.sample(word_list(), GRID)
        g.turn = g.starting = state.rng.choice((RED, BLUE))
        g.key = deal_key(state.rng, g.board, g.starting)
        g.revealed = {}                  # word -> card, in the order turned
        g.clue = None                    # (word, number) of the turn
        g.guesses = 0                    # guesses this turn
        g.guess_count = {RED: 0, BLUE: 0}   # guesses so far per team (whose turn to guess)
        g.turns = 0
        g.clues = []                     # {"team", "word", "number", "legal"}
        state.round = 1
        lineup = "; ".join(f"{team}: spymaster {state.name(self.spymaster(state, team))}, operatives "
                           f"{state.names(self.operatives(state, team))}" for team in (RED, BLUE))
        state.announce(f"Codenames begins ({lineup}). {g.starting.capitalize()} starts with {START_WORDS} words "
                       f"to find, {other_team(g.starting)} has {OTHER_WORDS}.")
        state.announce("The board: " + " | ".join(", ".join(g.board[r:r + 5]) for r in range(0, GRID, 5)) + ".")
        for team in (RED, BLUE):
            state.tell(self.spymaster(state, team), "The key card: " + self._key_text(state))
        self._start_turn(state)

    def _key_text(self, state) -> str:
        key = state.g.key
        groups = [(RED, "red"), (BLUE, "blue"), (BYSTANDER, "bystanders"), (ASSASSIN, "assassin")]
        return "; ".join(f"{label}: {', '.join(w for w in state.g.board if key[w] == card)}"
                         for card, label in groups) + "."

    def face_down(self, state) -> list:
        return [w for w in state.g.board if w not in state.g.revealed]

    def _start_turn(self, state) -> None:
        g = state.g
        g.turns += 1
        state.round = g.turns
        g.clue, g.guesses = None, 0
        state.goto("clue")
        state.announce(f"Turn {g.turns}: {g.turn}. {state.name(self.spymaster(state, g.turn))} gives the clue.")

    def _clue_grammar(self, state, agent):
        face_down = self.face_down(state)
        legal_fillers = [w for w in FILLER_CLUES if clue_problem(w, face_down) is None]
        # no check: an illegal clue is a move with a penalty (see _clued); random play and the
        # invalid-action fallback draw legal fillers
        return [ActionSpec("clue", (Word(30, name="WORD"), Int(0, MAX_CLUE)),
                           help=("one word and a number; a word that is not letters only, or is, is part of or "
                                 "contains a face-down board word, ends your turn and gives the other team a word"),
                           sampler=lambda rng: (rng.choice(legal_fillers), rng.randint(0, MAX_CLUE)))]

    def _clued(self, state, actions):
        (agent, action), = actions.items()
        word, number = action.values
        g = state.g
        problem = clue_problem(word, self.face_down(state))
        g.clues.append({"team": g.turn, "word": word, "number": number, "legal": problem is None})
        if problem:
            self._penalise(state, agent, word, number, problem)
            return
        g.clue = (word, number)
        limit = guess_limit(number)
        allows = "any number of guesses" if limit is None else f"up to {limit} guesses"
        state.announce(f"{state.name(agent)} ({g.turn} spymaster) gives the clue: {word} {number} ({allows}).")
        state.goto("team_talk" if len(self.operatives(state, g.turn)) > 1 else "guess")

    def _penalise(self, state, agent, word, number, problem) -> None:
        """An illegal clue: the turn ends, and the other team gets one of its words face up."""
        g = state.g
        other = other_team(g.turn)
        gift = state.rng.choice([w for w in self.face_down(state) if g.key[w] == other])
        g.revealed[gift] = other
        state.announce(f"{state.name(agent)} ({g.turn} spymaster) gives the clue {word} {number}, which is "
                       f"illegal: {problem}. {g.turn.capitalize()}'s turn ends, and {other} gets {gift} "
                       f"(a {other} word) turned face up.")
        if not self._ended_by_words(state):
            self._end_turn(state)

    def _ended_by_words(self, state) -> bool:
        """Finish the game when a team's words are all face up (the team on turn checked first)."""
        for side in (state.g.turn, other_team(state.g.turn)):
            if self.words_left(state, side) == 0:
                state.finish(f"all {side} words are face up: {side} wins",
                             winners=state.on_team(side, alive_only=False))
                return True
        return False

    def _guess_grammar(self, state, agent):
        specs = [ActionSpec("guess", (Choice(tuple(self.face_down(state)), name="WORD"),),
                            help="turn this word's card face up")]
        if state.g.guesses:
            specs.append(ActionSpec("stop", help="end your team's turn"))
        return specs

    def _guess_instructions(self, state, agent):
        g = state.g
        word, number = g.clue
        limit = guess_limit(number)
        left = "no limit" if limit is None else f"{limit - g.guesses} left"
        return f"Your spymaster's clue: {word} {number}. Guess a word ({left}){' or stop' if g.guesses else ''}."

    def _guess_fallback(self, state, agent):
        if state.g.guesses:
            return "stop"
        word = state.rng.choice(self.face_down(state))
        return Action("guess", (word,), f"guess {word}")

    def _guessed(self, state, actions):
        (agent, action), = actions.items()
        g = state.g
        team = g.turn
        if action.type == "stop":
            state.announce(f"{state.name(agent)} stops. {team.capitalize()}'s turn ends.")
            self._end_turn(state)
            return
        word = action.arg
        card = g.key[word]
        g.revealed[word] = card
        g.guesses += 1
        g.guess_count[team] += 1
        shown = "the assassin" if card == ASSASSIN else "a bystander" if card == BYSTANDER else f"a {card} word"
        outcome = guess_outcome(card, team)
        state.announce(f"{state.name(agent)} guesses {word}: {shown}.")
        if outcome == "assassin":
            state.finish(f"{team} found the assassin: {other_team(team)} wins",
                         winners=state.on_team(other_team(team), alive_only=False))
            return
        if self._ended_by_words(state):
            return
        limit = guess_limit(g.clue[1])
        if outcome == "again" and (limit is None or g.guesses < limit):
            state.goto("guess")
            return
        state.announce(f"{team.capitalize()}'s turn ends.")
        self._end_turn(state)

    def _end_turn(self, state):
        state.g.turn = other_team(state.g.turn)
        self._start_turn(state)

    def words_left(self, state, team) -> int:
        return sum(1 for w, card in state.g.key.items() if card == team and w not in state.g.revealed)

    # -- text hooks -----------------------------------------------------------------------
    def description(self, state):
        return _description(self.num_players)

    def goal(self, state, agent):
        return f"Get every {state.team(agent)} word turned face up before the other team does; avoid the assassin."

    def secret(self, state, agent):
        if state.role(agent) == SPYMASTER:
            return [f"You are the {state.team(agent)} spymaster. The key card: {self._key_text(state)}",
                    "Give clues; you may not guess or talk to your operatives."]
        return [f"You are a {state.team(agent)} operative. You do not see the key card."]

    def status(self, state, agent):
        g = state.g
        grid = ", ".join(f"{w} [{g.revealed[w]}]" if w in g.revealed else w for w in g.board)
        lines = [f"Board: {grid}.",
                 f"Words left: red {self.words_left(state, RED)}, blue {self.words_left(state, BLUE)}. "
                 f"Turn {g.turns}: {g.turn}."]
        if g.clue:
            lines.append(f"Clue: {g.clue[0]} {g.clue[1]}; guesses this turn: {g.guesses}.")
        return lines

    def public_data(self, state, agent):
        g = state.g
        data = {"players": {a: state.name(a) for a in state.agents}, "board": list(g.board),
                "revealed": dict(g.revealed), "turn": g.turn, "team": state.team(agent),
                "clue": {"word": g.clue[0], "number": g.clue[1]} if g.clue else None,
                "guesses": g.guesses, "guess_limit": guess_limit(g.clue[1]) if g.clue else None,
                "words_left": {RED: self.words_left(state, RED), BLUE: self.words_left(state, BLUE)},
                "clues": [dict(c) for c in g.clues]}
        if state.role(agent) == SPYMASTER:
            data["key"] = dict(g.key)
        return data

    def metrics(self, state):
        g = state.g
        return {"turns": g.turns, "cards_turned": len(g.revealed),
                "assassin_found": ASSASSIN in g.revealed.values()}


GAME = Codenames
