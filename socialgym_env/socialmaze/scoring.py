"""Parse free-text answers to a Hidden Role Deduction puzzle and score them.

Accepted forms (case-insensitive; numbers are whole tokens, never substrings):

* JSON anywhere in the text: ``{"criminal": 3, "role": "Lunatic"}`` (criminal may be
  ``3``, ``"3"``, ``"P3"`` or ``"Player 3"``; the role key may also be ``my_role``,
  ``self_role``, ``true_role`` or ``player1_role``);
* the prompt's format ``Criminal: Player 3; My role: Lunatic``;
* sentences: ``Player 3 is the criminal``, ``the criminal is P3``, ``my role is the
  Lunatic``, ``I am a Rumormonger``, ``Player 1 is the criminal``;
* terse answers: ``Player 3``, ``P3``, ``3``, ``3, Lunatic``.

If the text contains "final answer" or "answer:", only the part after the last
such marker is read, so reasoning before it cannot confuse the parser. Naming
Player 1 as the Criminal implies the role Criminal and vice versa (the two claims
are the same). Two different criminals or roles are ambiguous and count as
missing. Reward is 1.0 only when both parts are right; anything unparseable
scores 0 with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .instance import MazeInstance, Role, parse_role

_ROLE = r"(investigator|criminal|rumou?r[\s-]?monger|lunatic)"
_ART = r"(?:the\s+|an?\s+)?"
_ADV = r"(?:actually\s+|really\s+|truly\s+)?"
_PLAYER_REF = re.compile(r"^\s*(?:player|p)?\s*#?\s*(\d+)\s*$", re.I)
_MARKER = re.compile(r"final\s+answer|\banswer\s*:", re.I)
_JSON_OBJ = re.compile(r"\{[^{}]*\}", re.S)

_CRIMINAL_PATTERNS = [
    # "criminal: Player 3", "the criminal is P3"
    re.compile(r"\bcriminal\s*(?:is|was|:|=|-)?\s*(?:the\s+)?(?:player|p)\s*#?\s*(\d+)\b", re.I),
    # "criminal: 3" (a bare number needs an explicit separator)
    re.compile(r"\bcriminal\s*(?:is|was|:|=|-)\s*#?\s*(\d+)\b", re.I),
    # "Player 3 is the criminal" (but not "is not the criminal")
    re.compile(r"\b(?:player|p)\s*#?\s*(\d+)\s+(?:is|was)\s+" + _ADV + _ART + r"criminal\b", re.I),
]
_SELF_CRIMINAL = re.compile(r"\bi\s*(?:am|['\u2019]m)\s+" + _ADV + _ART + r"criminal\b", re.I)
_ROLE_PATTERNS = [
    # "my role is Lunatic", "Player 1's true role: Rumormonger", "My role: Criminal"
    re.compile(
        r"\b(?:my|player\s*1['\u2019]?s|p1['\u2019]?s|own)\s+(?:true\s+|actual\s+|real\s+)?role\s*(?:is|:|=|-)?\s*"
        + _ADV + _ART + _ROLE + r"\b",
        re.I,
    ),
    re.compile(r"(?:^|[\s;,.])role\s*[:=]\s*" + _ART + _ROLE + r"\b", re.I),
    re.compile(r"\bi\s*(?:am|['\u2019]m)\s+" + _ADV + _ART + _ROLE + r"\b", re.I),
    re.compile(r"\b(?:player\s*1|p1)\s+(?:is|was)\s+" + _ADV + _ART + _ROLE + r"\b", re.I),
]
# "3", "P3", "Player 3.", "3, Lunatic", "Player 3; the lunatic"
_TERSE = re.compile(
    r"^\W*(?:player|p)?\s*#?\s*(\d+)\s*(?:(?:,|;|/|\band\b|-)\s*" + _ART + _ROLE + r")?\W*$", re.I
)
_JSON_ROLE_KEYS = ("role", "my_role", "self_role", "true_role", "player1_role", "player_1_role")


@dataclass(frozen=True)
class ParsedAnswer:
    criminal: int | None
    role: Role | None
    reason: str | None  # why something is missing, else None


@dataclass(frozen=True)
class ScoreResult:
    reward: float
    criminal_correct: bool
    role_correct: bool
    parsed_criminal: int | None
    parsed_role: Role | None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "criminal_correct": self.criminal_correct,
            "role_correct": self.role_correct,
            "parsed_criminal": self.parsed_criminal,
            "parsed_role": self.parsed_role.value if self.parsed_role else None,
            "reason": self.reason,
        }


def player_number(value: Any) -> int | None:
    """A player number from an answer field (3, "3", "Player 3", "p#3"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    m = _PLAYER_REF.match(str(value))
    return int(m.group(1)) if m else None


def _from_json(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that has a criminal or role key (keys case-insensitive)."""
    found = None
    for raw in _JSON_OBJ.findall(text):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            low = {str(k).strip().lower(): v for k, v in obj.items()}
            if "criminal" in low or any(k in low for k in _JSON_ROLE_KEYS):
                found = low
    return found


def _collect(patterns: list[re.Pattern[str]], text: str) -> list[str]:
    return [m.group(1) for p in patterns for m in p.finditer(text)]


def parse_answer(answer: Any, n_players: int) -> ParsedAnswer:
    """Extract (criminal, Player 1's role) from a free-text or mapping answer."""
    if isinstance(answer, Mapping):
        obj: dict[str, Any] | None = {str(k).strip().lower(): v for k, v in answer.items()}
        text = ""
    elif isinstance(answer, str):
        text = answer_region(answer)
        obj = _from_json(text)
    else:
        return ParsedAnswer(None, None, f"answer must be text, got {type(answer).__name__}")

    problems: list[str] = []
    criminals, roles = _claims_from_json(obj, problems) if obj is not None else _claims_from_text(text)
    # "Player 1 is the criminal" and "my role is Criminal" are the same claim.
    if criminals == {1} and not roles:
        roles.add(Role.CRIMINAL)
    if roles == {Role.CRIMINAL} and not criminals:
        criminals.add(1)
    criminal = single_player(criminals, n_players, "criminal", problems)
    role = _single_role(roles, problems)
    return ParsedAnswer(criminal, role, "; ".join(problems) or None)


def _claims_from_json(obj: dict, problems: list) -> tuple[set, set]:
    criminals: set[int] = set()
    roles: set[Role] = set()
    if "criminal" in obj:
        c = player_number(obj["criminal"])
        if c is None:
            problems.append(f"criminal value {obj['criminal']!r} is not a player number")
        else:
            criminals.add(c)
    key = next((k for k in _JSON_ROLE_KEYS if k in obj), None)
    if key is not None:
        try:
            roles.add(parse_role(obj[key]))
        except ValueError:
            problems.append(f"role value {obj[key]!r} is not a role")
    return criminals, roles


def _claims_from_text(text: str) -> tuple[set, set]:
    criminals = {int(x) for x in _collect(_CRIMINAL_PATTERNS, text)}
    if _SELF_CRIMINAL.search(text):
        criminals.add(1)
    roles = {parse_role(r) for r in _collect(_ROLE_PATTERNS, text)}
    if not criminals:
        terse = _TERSE.match(text)
        if terse:
            criminals.add(int(terse.group(1)))
            if terse.group(2):
                roles.add(parse_role(terse.group(2)))
    return criminals, roles


def answer_region(answer: str) -> str:
    """The text after the last "Final answer" / "Answer:" marker, or the whole answer."""
    marks = list(_MARKER.finditer(answer))
    return answer[marks[-1].end():] if marks and answer[marks[-1].end():].strip() else answer


def single_player(found: set, n_players: int, what: str, problems: list, plural: str = "") -> int | None:
    """The one player an answer names as ``what`` (the criminal, the spy), else None with the
    problem noted: several named, out of range, or none (unless its value was already bad)."""
    if len(found) > 1:
        problems.append(f"several {plural or what + 's'} named: {sorted(found)}")
    elif found:
        c = next(iter(found))
        if 1 <= c <= n_players:
            return c
        problems.append(f"player {c} is out of range 1..{n_players}")
    elif not any(p.startswith(f"{what} value") for p in problems):
        problems.append(f"no {what} found")
    return None


def _single_role(roles: set, problems: list) -> Role | None:
    if len(roles) > 1:
        problems.append(f"several roles named: {sorted(r.value for r in roles)}")
    elif roles:
        return next(iter(roles))
    elif not any(p.startswith("role value") for p in problems):
        problems.append("no role found")
    return None


def score_answer(answer: Any, instance: MazeInstance) -> ScoreResult:
    """Score ``answer`` (text or mapping) against ``instance``: reward 1.0 iff both parts are right."""
    parsed = parse_answer(answer, instance.config.n_players)
    criminal_ok = parsed.criminal == instance.criminal
    role_ok = parsed.role == instance.player1_role
    return ScoreResult(
        reward=1.0 if criminal_ok and role_ok else 0.0,
        criminal_correct=criminal_ok,
        role_correct=role_ok,
        parsed_criminal=parsed.criminal,
        parsed_role=parsed.role,
        reason=parsed.reason,
    )
