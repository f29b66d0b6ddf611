"""Insider — 5 players: 1 Insider vs 4 Commons; the env plays the Master.

Create: ``socialgym_env.make("insider", master="oracle", questions=15)``

A secret word is drawn from the word-attribute table ``socialgym_env/data/insider_words.json``
(63 words in 6 categories, 12 yes/no attributes each). Its category is announced to all; the
Insider is told the word privately. Players take turns (round-robin from a seat drawn with the
env's RNG) asking the Master yes/no questions or guessing the word; ``questions`` (15) turns
in all. A correct guess ends the questioning; then everyone speaks once and votes on who the
Insider is.

| Phase      | Who                          | Actions                                          |
|------------|------------------------------|--------------------------------------------------|
| questions  | one player a turn, in seat order | ``ask QUESTION`` (yes/no question to the Master) / ``guess WORD`` |
| discussion | everyone, round-robin from the guesser | ``say TEXT`` / ``pass``               |
| vote       | everyone, simultaneous       | ``vote NAME`` (another player)                   |

Every turn of the questions phase (an ask, a guess, or an invalid action) uses one of the
``questions`` turns. A guess is right when it equals the word ignoring case and punctuation;
a wrong guess is answered "no". Endings: nobody guesses the word within the turns → everyone
loses (every seat −1, passed as explicit rewards); otherwise the vote (plurality; a tie
accuses nobody) decides: the Insider accused → the Commons win, else the Insider wins.

The Master. ``master="oracle"`` (default) is :class:`OracleMaster`, a deterministic yes/no
oracle over the attribute table. It understands these question forms (case and punctuation
are ignored; "the word" may replace "it"):

- category: ``is it a|an <category>`` (or an alias such as "instrument", "garment"; also
  "a kind of/type of <category>");
- attributes: the phrasings listed per attribute in the data file, e.g. ``is it alive``,
  ``is it edible`` / ``can you eat it``, ``is it bigger than a breadbox``, ``is it man made``,
  ``is it electric``, ``can it fly``, ``is it found indoors``, ``does it have legs``,
  ``does it live in water``, ``is it round``, ``does it have wheels``, ``is it sweet``;
- letters: ``does it start with [the letter] X``, ``does it end with [the letter] X``,
  ``does it contain [the letter] X`` / ``does it have the letter X`` / ``is there an X in it``;
- length: ``does it have N letters`` / ``is it N letters long`` (N in digits or words),
  ``does it have more|fewer|less than N letters``, ``is it longer|shorter than N letters``;
- a named word: ``is it a|an <word>`` for any word of the table (yes only for the secret word;
  this is a question, not a guess).

Anything else is answered "I can't answer that" (the turn is still used). A different Master
— e.g. an LLM answering free-form questions — is any object with
``answer(question, word, category) -> str`` (or a plain function of those arguments):
register it by name with :func:`register_master` and pass ``master=<name>``, or set
``env.game.master`` after ``make``. Its reply is read by its first word: "yes", "no", else
"I can't answer that".

Observation: rules, your role, the category, the word (Insider only), the questions and
answers so far. ``infos[a]["game_state"]``: category, questions and answers, turns left,
the guesser, ``word`` for the Insider only (None otherwise).
Reward (team): winners +1, losers −1; nobody guessing → all −1. Metrics: ``guessed``,
``insider_caught``, ``questions_used``, ``guessed_by_insider``.
Invalid-action fallbacks: questions → the turn is lost; discussion → pass; vote → a random
legal vote. Turn cap 200 (never reached: at most ``questions`` + 10 decisions).
Version history: v0 initial.
"""
from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Callable

from ..actions import Action, ActionSpec, Text
from ..game import Game, GameInfo, Phase, TEAM
from ..patterns import normalize_word, plurality, rotating_from, talk_phase, vote_phase, vote_values

INSIDER, COMMON = "Insider", "Common"
INSIDER_TEAM, COMMON_TEAM = "insider", "commons"
YES, NO, CANT = "yes", "no", "I can't answer that"


# ---------------------------------------------------------------------- the table
@functools.lru_cache(maxsize=None)
def word_table() -> dict:
    """The table: ``{"categories": {name: {"aliases"}}, "attributes": {name: {"meaning",
    "questions"}}, "words": [{"word", "category", "attributes": {name: bool}}]}``."""
    text = resources.files("socialgym_env").joinpath("data", "insider_words.json").read_text("utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=None)
def _entries() -> dict:
    return {entry["word"]: entry for entry in word_table()["words"]}


@functools.lru_cache(maxsize=None)
def _attribute_questions() -> dict:
    return {normalize_question(q): name for name, attr in word_table()["attributes"].items()
            for q in attr["questions"]}


@functools.lru_cache(maxsize=None)
def _category_names() -> dict:
    names = {}
    for category, spec in word_table()["categories"].items():
        for alias in [category] + list(spec["aliases"]):
            names[normalize_question(alias)] = category
    return names


def draw_word(rng, words: list) -> dict:
    """The secret word's table entry (module-level so tests can swap it)."""
    return rng.choice(words)


# ---------------------------------------------------------------------- the oracle
_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_IT = r"(?:it|the word|the secret word|your word)"
_LETTER = r"(?:the letter |letter |the |an |a )?([a-z])"
_NUM = r"(\d+|" + "|".join(_NUMBERS) + r")"
_ARTICLE = re.compile(r"^(?:a |an |the |some )?(?:(?:kind|type|sort) of (?:a |an )?)?")


def normalize_question(text: str) -> str:
    """Lower case, punctuation to spaces (so "man-made?" is "man made"), single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", str(text).casefold()).split())


def _number(token: str) -> int:
    return int(token) if token.isdigit() else _NUMBERS[token]


def _longer_or_shorter(word: str, m: re.Match) -> bool:
    n = _number(m.group(2))
    return len(word) > n if m.group(1) in ("more", "longer") else len(word) < n


# The spelling questions: (the forms of one question, whether its answer about a word is yes).
# The first form that matches answers; the order of the list is the order they are tried in.
_SPELLING_QUESTIONS = [(tuple(re.compile(form) for form in forms), is_yes) for forms, is_yes in (
    ((rf"(?:does|do|is) {_IT} (?:start|starts|starting|begin|begins|beginning) with {_LETTER}",
      rf"is the first letter {_LETTER}"),
     lambda word, m: word.startswith(m.group(1))),
    ((rf"(?:does|do|is) {_IT} (?:end|ends|ending) (?:with|in) {_LETTER}",
      rf"is the last letter {_LETTER}"),
     lambda word, m: word.endswith(m.group(1))),
    ((rf"(?:does|do) {_IT} (?:contain|contains|include|includes) {_LETTER}",
      rf"(?:does|do) {_IT} have (?:the letter|letter) ([a-z])(?: in it)?",
      rf"does {_IT} have an? ([a-z]) in it",
      rf"is there an? (?:letter )?([a-z]) in {_IT}"),
     lambda word, m: m.group(1) in word),
    ((rf"(?:does|do) {_IT} have (?:exactly )?{_NUM} letters",
      rf"is {_IT} {_NUM} letters(?: long)?",
      rf"(?:is|does) {_IT} (?:have )?(?:a )?length (?:of )?{_NUM}"),
     lambda word, m: len(word) == _number(m.group(1))),
    ((rf"(?:does|do) {_IT} have (more|fewer|less) than {_NUM} letters",
      rf"is {_IT} (longer|shorter) than {_NUM} letters"),
     _longer_or_shorter),
)]
_IS_IT = re.compile(rf"is {_IT} (.+)")


def oracle_answer(question: str, entry: dict) -> str:
    """The default Master's answer to ``question`` about the table ``entry`` of the secret
    word: "yes", "no" or "I can't answer that" (see the module docstring for the forms)."""
    q = normalize_question(question)
    q = re.sub(r"^(?:master |ok |okay |so |then |hmm |well )+", "", q)
    word = entry["word"]
    if q in _attribute_questions():
        return YES if entry["attributes"][_attribute_questions()[q]] else NO
    for forms, is_yes in _SPELLING_QUESTIONS:
        m = next((m for m in (form.fullmatch(q) for form in forms) if m), None)
        if m:
            return YES if is_yes(word, m) else NO
    m = _IS_IT.fullmatch(q)
    return _is_it_answer(_ARTICLE.sub("", m.group(1)), entry) if m else CANT


def _is_it_answer(thing: str, entry: dict) -> str:
    """"Is it THING?": yes or no for a category or a word of the table, else CANT."""
    if thing in _category_names():
        return YES if _category_names()[thing] == entry["category"] else NO
    if thing in _entries() or thing.rstrip("s") in _entries():
        return YES if thing in (entry["word"], entry["word"] + "s") else NO
    return CANT


def read_answer(reply) -> str:
    """A Master's reply reduced to "yes", "no" or "I can't answer that" by its first word."""
    first = normalize_question(reply).split(" ")[0] if reply else ""
    return YES if first == "yes" else NO if first == "no" else CANT


class OracleMaster:
    """The default Master: :func:`oracle_answer` over the attribute table."""

    name = "oracle"

    def answer(self, question: str, word: str, category: str) -> str:
        return oracle_answer(question, _entries()[word])


MASTERS: dict[str, Callable[[], object]] = {"oracle": OracleMaster}


def register_master(name: str, factory: Callable[[], object]) -> None:
    """Make a Master available as ``make("insider", master=name)``; ``factory()`` returns an
    object with ``answer(question, word, category)`` or a function of those arguments."""
    MASTERS[name] = factory


def ask_master(master, question: str, word: str, category: str) -> str:
    reply = master.answer(question, word, category) if hasattr(master, "answer") else master(question, word, category)
    return read_answer(reply)


# ---------------------------------------------------------------------- the game
class Insider(Game):
    info = GameInfo(
        id="insider", name="Insider", category="hidden_role", num_players=5,
        information="hidden_roles", communication="free_form", horizon="single_round",
        iteration="1 round", skills=("coordination", "deception", "tom"), outcome=TEAM, max_steps=200,
        roles=((INSIDER, 1, INSIDER_TEAM), (COMMON, 4, COMMON_TEAM)), main_role=COMMON, alt_role=INSIDER)
    config_defaults = {"master": "oracle", "questions": 15}

    def __init__(self, config):
        super().__init__(config)
        self.master = MASTERS[config.get("master", "oracle")]()

    config_ranges = {"questions": (1, None)}

    @classmethod
    def validate_config(cls, config):
        if config["master"] not in MASTERS:
            raise ValueError(f"master must be one of {sorted(MASTERS)}, got {config['master']!r}")

    def phases(self):
        return [
            Phase("questions", actors=lambda s: [s.g.asker], grammar=self._question_specs,
                  resolve=self._questioned, fallback=lambda s, a: Action("pass", (), "pass"),
                  instructions=self._question_instructions),
            talk_phase("discussion", lambda s: s.goto("vote"), actors=rotating_from(lambda s: s.g.guesser),
                       instructions="The word was found. Say who you think the Insider is (one message), or pass."),
            vote_phase("vote", self._voted, instructions="Vote for the player you think is the Insider."),
        ]

    # ------------------------------------------------------------------ rules
    def setup(self, state):
        entry = draw_word(state.rng, list(word_table()["words"]))
        state.g.word, state.g.category = entry["word"], entry["category"]
        state.g.asker = state.rng.choice(state.agents)
        state.g.qa = []             # [{"asker", "type", "text", "answer"}]
        state.g.guesser = None
        state.g.accused = None
        state.round = 1
        state.announce(f"The secret word is a {state.g.category}. Up to {self.config['questions']} "
                       f"questions or guesses, starting with {state.name(state.g.asker)}.")
        for agent in state.agents:
            if state.role(agent) == INSIDER:
                state.tell(agent, f"You are the Insider. The secret word is {state.g.word}.")
            else:
                state.tell(agent, "You are a Common. You do not know the secret word.")
        state.goto("questions")

    def _question_specs(self, state, agent):
        return [ActionSpec("ask", (Text(300, name="QUESTION"),), help="a yes/no question to the Master"),
                ActionSpec("guess", (Text(60, name="WORD"),), help="guess the secret word",
                           sampler=lambda rng: (rng.choice(self._category_words(state)),))]

    def _category_words(self, state):
        return [e["word"] for e in word_table()["words"] if e["category"] == state.g.category]

    def _question_instructions(self, state, agent):
        left = self.config["questions"] - len(state.g.qa)
        return f"Ask the Master a yes/no question or guess the word ({left} turn(s) left for everyone)."

    def _questioned(self, state, actions):
        (agent, action), = actions.items()
        record = {"asker": agent, "type": action.type, "text": action.arg, "answer": None}
        state.g.qa.append(record)
        if action.type == "ask":
            state.say(agent, action.arg)
            record["answer"] = ask_master(self.master, action.arg, state.g.word, state.g.category)
            state.announce(f"Master: {record['answer']}.")
        elif action.type == "guess":
            state.say(agent, f"My guess: {action.arg}")
            right = normalize_word(action.arg) == normalize_word(state.g.word)
            record["answer"] = YES if right else NO
            if right:
                state.g.guesser = agent
                state.announce(f"Master: yes! {state.name(agent)} found the word: {state.g.word}. "
                               f"Now find the Insider.")
                state.goto("discussion")
                return
            state.announce(f"Master: no, it is not {action.arg}.")
        else:
            state.announce(f"{state.name(agent)} loses the turn.")
        if len(state.g.qa) >= self.config["questions"]:
            insider = state.with_role(INSIDER)[0]
            state.announce(f"Nobody found the word. It was {state.g.word}; {state.name(insider)} was the Insider.")
            state.finish("nobody guessed the word in time: everyone loses",
                         rewards={a: -1.0 for a in state.agents})
            return
        state.g.asker = state.next_alive(agent)
        state.goto("questions")

    def _voted(self, state, actions):
        target = plurality(state, vote_values(actions), tie="none")
        state.g.accused = target
        insider = state.with_role(INSIDER)[0]
        if target is None:
            state.announce(f"Nobody is accused. {state.name(insider)} was the Insider.")
            state.finish("the vote tied: the Insider escapes", winners=[insider])
        elif target == insider:
            state.announce(f"{state.name(target)} is accused and was the Insider!")
            state.finish("the Insider was caught: the Commons win", winners=state.on_team(COMMON_TEAM))
        else:
            state.announce(f"{state.name(target)} is accused but was a Common. "
                           f"{state.name(insider)} was the Insider.")
            state.finish("a Common was accused: the Insider wins", winners=[insider])

    # ------------------------------------------------------------------ text
    def description(self, state):
        n = self.config["questions"]
        return ("Insider: 5 players, one secretly the Insider, the others Commons. The game's Master "
                "knows a secret word; everyone knows its category, and the Insider also knows the word. Players take "
                f"turns asking the Master yes/no questions or guessing the word, {n} turns in all. If "
                "nobody guesses the word in time, everyone loses. If someone guesses it, everyone speaks "
                "once and then votes on who the Insider is (plurality, a tie accuses nobody): the Commons "
                "win if they accuse the Insider, otherwise the Insider wins. The Master understands "
                "questions about the category, attributes (alive, edible, bigger than a breadbox, man made, "
                "electric, can fly, found indoors, has legs, lives in water, round, has wheels, sweet), "
                "the first or last letter, letters it contains and its number of letters.")

    def goal(self, state, agent):
        if state.role(agent) == INSIDER:
            return "Steer the others to the word without being noticed, then avoid the vote."
        return "Find the word with your questions in time, then vote out the Insider."

    def secret(self, state, agent):
        if state.role(agent) == INSIDER:
            return [f"You are the Insider. The secret word is: {state.g.word}."]
        return ["You are a Common: you do not know the secret word."]

    def status(self, state, agent):
        used = len(state.g.qa)
        return [f"Category: {state.g.category}. Questions used: {used} of {self.config['questions']}."]

    def public_data(self, state, agent):
        return {"players": list(state.agents), "category": state.g.category, "qa": [dict(r) for r in state.g.qa],
                "questions_left": self.config["questions"] - len(state.g.qa), "guesser": state.g.guesser,
                "accused": state.g.accused, "master": self.config["master"],
                "word": state.g.word if state.role(agent) == INSIDER else None}

    def metrics(self, state):
        insider = state.with_role(INSIDER)[0]
        return {"guessed": state.g.guesser is not None, "insider_caught": state.g.accused == insider,
                "questions_used": len(state.g.qa), "guessed_by_insider": state.g.guesser == insider}


GAME = Insider
