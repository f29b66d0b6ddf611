"""Insider heuristic, over the game's own attribute table and oracle (public rules and data).

- Commons keep the words of the category that agree with every answer so far, ask the
  question from a fixed bank (attributes, first letter, length, letters) that splits them most
  evenly, and guess when one word is left (or on the last turn).
- The Insider steers: it asks the bank question that rules out the most wrong words given the
  true word, and guesses the word itself only when the turns are about to run out (so the game
  is not lost for everyone).
- Vote: Commons vote for the other player with the fewest useful turns (a question the Master
  could answer, or a guess of a word of the category) — the guesser first among equals; the
  Insider votes for the guesser (or, having guessed, for the Common with the fewest useful turns).
"""
from __future__ import annotations

import functools
import string

from socialgym_env.games.insider import CANT, NO, YES, oracle_answer, word_table
from socialgym_env.patterns import normalize_word

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info


@functools.lru_cache(maxsize=None)
def question_bank() -> tuple:
    table = word_table()
    bank = [attr["questions"][0] for attr in table["attributes"].values()]
    bank += [f"does it start with the letter {c}" for c in string.ascii_lowercase]
    bank += [f"does it have {n} letters" for n in range(3, 13)]
    bank += [f"does it contain the letter {c}" for c in string.ascii_lowercase]
    return tuple(bank)


@functools.lru_cache(maxsize=100_000)
def _answer(question: str, word: str) -> str:
    return oracle_answer(question, next(e for e in word_table()["words"] if e["word"] == word))


def answer(question: str, entry: dict) -> str:
    """The default Master's answer (cached: the heuristic asks the same bank many times)."""
    return _answer(question, entry["word"])


def candidates(category: str, qa: list) -> list:
    """The table entries of the category consistent with every answer so far."""
    entries = [e for e in word_table()["words"] if e["category"] == category]
    for record in qa:
        if record["type"] == "ask" and record["answer"] in (YES, NO):
            entries = [e for e in entries if answer(record["text"], e) in (record["answer"], CANT)]
        elif record["type"] == "guess" and record["answer"] == NO:
            entries = [e for e in entries if normalize_word(e["word"]) != normalize_word(record["text"])]
    return entries


def best_split(entries: list) -> str | None:
    """The bank question whose larger answer group is smallest (None if none splits)."""
    best, best_size = None, len(entries)
    for question in question_bank():
        yes = sum(answer(question, e) == YES for e in entries)
        size = max(yes, len(entries) - yes)
        if size < best_size:
            best, best_size = question, size
    return best


def steering_question(entries: list, word: str) -> str | None:
    """The bank question that rules out the most wrong words given the true word."""
    truth = next(e for e in entries if e["word"] == word)
    best, best_out = None, 0
    for question in question_bank():
        true_answer = answer(question, truth)
        out = sum(answer(question, e) != true_answer for e in entries)
        if out > best_out:
            best, best_out = question, out
    return best


def useful_turns(gs: dict, player: str) -> int:
    words = {normalize_word(e["word"]) for e in word_table()["words"] if e["category"] == gs["category"]}
    return sum(1 for r in gs["qa"] if r["asker"] == player and
               ((r["type"] == "ask" and r["answer"] in (YES, NO)) or
                (r["type"] == "guess" and normalize_word(r["text"]) in words)))


def insider_move(gs: dict, word: str) -> str:
    """The Insider's question turn: steer towards ``word``, or guess it when time is short."""
    entries = candidates(gs["category"], gs["qa"])
    if gs["questions_left"] <= 5 or not entries:
        return f"guess {word}"
    question = steering_question(entries, word) if any(e["word"] == word for e in entries) else None
    return f"ask {question}" if question else f"guess {word}"


def common_move(gs: dict, rng) -> str:
    """A Common's question turn: the best split of the words left, or a guess of the last one."""
    entries = candidates(gs["category"], gs["qa"])
    if not entries:
        return f"ask {rng.choice(question_bank())}"
    question = best_split(entries)
    if len(entries) == 1 or gs["questions_left"] <= 1 or question is None:
        return f"guess {entries[0]['word']}"
    return f"ask {question}"


class InsiderHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:insider"

    def act(self, observation, info, key=("", "")):
        gs = info.get("game_state") or {}
        phase, rng = info.get("phase"), self.rng(key)
        if "qa" not in gs:
            return Decision(sample_from_info(info, rng))
        me, word = info["agent"], gs["word"]
        if phase == "questions":
            return Decision(common_move(gs, rng) if word is None else insider_move(gs, word))
        others = [a for a in gs["players"] if a != me]
        suspect = min(others, key=lambda a: (useful_turns(gs, a), a != gs["guesser"], a))
        if phase == "discussion":
            return Decision(f"say I suspect {suspect}." if word is None else "say Well played, everyone.")
        if phase == "vote":
            if word is not None and gs["guesser"] != me:
                return Decision(f"vote {gs['guesser']}")
            return Decision(f"vote {suspect}")
        return Decision(sample_from_info(info, rng))


POLICY = InsiderHeuristic
