"""Scripted baselines that work in every game (random, constant) and the classic strategies
of iterated games (tit-for-tat, grim trigger, win-stay-lose-shift).

The iterated strategies read the move history from ``info["game_state"]["history"]`` and map
each game's moves to "nice"/"nasty" with :data:`NICE_NASTY`; in a game without such a pair
they fall back to random play.
"""
from __future__ import annotations

import random

from .base import BasePolicy, Decision

_FILLER_TEXT = ("I'm thinking about it.", "Let's see how this goes.", "I have nothing to add.")

# game id -> (nice move, nasty move)
NICE_NASTY = {
    "prisoners_dilemma": ("cooperate", "defect"),
    "chicken": ("swerve", "straight"),
    "stag_hunt": ("stag", "hare"),
    "public_goods": ("contribute 10", "contribute 0"),
}


def sample_from_info(info: dict, rng: random.Random) -> str:
    """A random legal action: uniform over the enumerated list when the env gives one, else
    drawn from the action's JSON schema (free text from a few filler sentences)."""
    legal = info.get("legal_action_list")
    if legal:
        return rng.choice(legal)
    schema = info.get("action_schema")
    if not schema:
        return "pass"
    branch = rng.choice(schema["oneOf"])
    action_type = branch["properties"]["action_type"]["const"]
    argument = branch["properties"].get("argument")
    if "argument" not in branch.get("required", ()):
        return action_type
    return f"{action_type} {_sample_value(argument, rng)}".strip()


def _sample_value(schema: dict, rng: random.Random) -> str:
    if "enum" in schema:
        return str(rng.choice(schema["enum"]))
    if schema.get("type") == "integer":
        return str(rng.randint(schema["minimum"], schema["maximum"]))
    if schema.get("type") == "array":
        return " ".join(_sample_value(item, rng) for item in schema["items"])
    return rng.choice(_FILLER_TEXT)


class RandomPolicy(BasePolicy):
    policy_id = "scripted:random"
    instant = True

    def act(self, observation, info, key=("", "")):
        return Decision(sample_from_info(info, self.rng(key)))


class ConstantPolicy(BasePolicy):
    """Always the same action (when legal; otherwise random)."""

    instant = True

    def __init__(self, action: str, seed: int = 0):
        super().__init__(seed)
        self.action = action
        self.policy_id = f"scripted:constant:{action}"

    def act(self, observation, info, key=("", "")):
        legal = info.get("legal_action_list")
        if legal is None or self.action in legal or self.action.split()[0] in info.get("action_types", []):
            return Decision(self.action)
        return Decision(sample_from_info(info, self.rng(key)))


class IteratedStrategy(BasePolicy):
    """Base of history-based strategies; subclasses decide nice (True) or nasty (False)."""

    instant = True

    def choose_nice(self, my_moves: list[bool], their_moves: list[list[bool]]) -> bool:
        raise NotImplementedError

    def act(self, observation, info, key=("", "")):
        pair = NICE_NASTY.get(info.get("game"))
        history = (info.get("game_state") or {}).get("history")
        if pair is None or history is None:
            return Decision(sample_from_info(info, self.rng(key)))
        nice, nasty = pair
        me = key[1] if key[1] else None
        mine, theirs = [], []
        for round_moves in history:
            mine.append(round_moves.get(me) == nice)
            theirs.append([m == nice for a, m in round_moves.items() if a != me])
        return Decision(nice if self.choose_nice(mine, theirs) else nasty)


class TitForTat(IteratedStrategy):
    """Nice first, then nasty exactly when someone was nasty last round."""

    policy_id = "scripted:tit_for_tat"

    def choose_nice(self, mine, theirs):
        return not theirs or all(theirs[-1])


class GrimTrigger(IteratedStrategy):
    """Nice until anyone is nasty once, nasty for ever after."""

    policy_id = "scripted:grim_trigger"

    def choose_nice(self, mine, theirs):
        return all(all(r) for r in theirs)


class WinStayLoseShift(IteratedStrategy):
    """Pavlov: repeat the last move after a good round (others were nice), switch otherwise."""

    policy_id = "scripted:win_stay_lose_shift"

    def choose_nice(self, mine, theirs):
        if not mine:
            return True
        return mine[-1] if all(theirs[-1]) else not mine[-1]


SCRIPTED = {
    "random": RandomPolicy,
    "tit_for_tat": TitForTat,
    "grim_trigger": GrimTrigger,
    "win_stay_lose_shift": WinStayLoseShift,
}
