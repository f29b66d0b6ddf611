"""The seed's lexical taggers (seed 002, App. N), verbatim: theory-of-mind order (1 = bare
imperative, 2 = references how others perceive the speaker, 3 = explicit contrast across two
faction perceptions) and the 9 strategy categories (multi-label).

The seed applies them to the Jester's lessons; :mod:`.analysis` also applies the order tagger to
the players' public statements. Being purely lexical they are deterministic. The seed's
patterns use the typographic apostrophe (’) in ``i’?m`` and ``don’?t``; text is normalised to
that apostrophe first so "don't" and "don’t" tag alike.
"""
from __future__ import annotations

import re

THIRD_ORDER_PATTERNS = [
    r"wolf[- ]?like.*(not|without).*(jester|villager)",
    r"(jester|villager).*not.*wolf[- ]?like",
    r"appear.*without (being|appearing) .*(jester|villager|wolf)",
    r"without (being|appearing) (overtly )?(jester|villager|wolf)",
    r"villager[- ]aligned",
    r"jester(-y| play| tells| obvious| identification)",
    r"not (the )?(jester|wolf|villager)",
    r"rather than (a |the )?(villager|jester|wolf)",
]
SECOND_ORDER_PATTERNS = [
    r"\bappear", r"\bseem", r"\bperceiv", r"\blook like", r"believe", r"\bthink (i|i’?m|im)\b",
    r"suspect", r"draw .*suspicion", r"increase.*suspicion(?! on others?)", r"frame[ds]? as",
    r"make me look", r"reaction",
]
CATEGORIES = {
    "wolf_mimicry": [r"wolf[- ]?like", r"wolfish", r"appear wolf", r"look wolf", r"\bdeflect", r"bandwagon"],
    "inconsistency": [r"inconsistent", r"inconsistency", r"contradict", r"flip[- ]flop",
                      r"shift(ing)? (stance|focus)", r"reverse stance", r"erratic"],
    "aggression": [r"escalat", r"aggress", r"rapid", r"quick succession", r"chaos", r"urgency",
                   r"double down", r"intensity"],
    "subtle_indirection": [r"\bsubtl", r"layered", r"nuanc", r"web", r"indirect", r"oblique"],
    "passive_provocation": [r"\ballow(ing)?\b", r"\blet\b", r"without (strongly )?(defending|countering)",
                            r"don’?t (over|strongly) ?defend", r"do not (over|strongly) ?defend",
                            r"focal point", r"draw(ing)? (more )?attention"],
    "anti_jester_tells": [r"don’?t over", r"do not over", r"avoid being too", r"avoid over", r"too obvious",
                          r"tip off", r"predictable", r"avoid making.*obvious", r"reference.*role",
                          r"avoid letting"],
    "vote_manipulation": [r"\bvote\b", r"voting", r"non[- ]consensus", r"consensus", r"revote", r"vote rationale"],
    "meta_modeling": [r"narrative", r"perceiv", r"appear(?!.*wolf)", r"make me look", r"\bfram(e|ing)\b",
                      r"be seen as", r"persona", r"image"],
    "questioning": [r"question(ing)?", r"probe?", r"probing", r"scrutiny", r"evasive question"],
}
_THIRD = [re.compile(p) for p in THIRD_ORDER_PATTERNS]
_SECOND = [re.compile(p) for p in SECOND_ORDER_PATTERNS]
_CATEGORIES = {name: [re.compile(p) for p in pats] for name, pats in CATEGORIES.items()}


def _normalise(text: str) -> str:
    return text.lower().replace("'", "’")


def tom_order(text: str) -> int:
    """3 if any third-order pattern matches, else 2 if any second-order one does, else 1."""
    t = _normalise(text)
    if any(p.search(t) for p in _THIRD):
        return 3
    if any(p.search(t) for p in _SECOND):
        return 2
    return 1


def tag_categories(text: str) -> list[str]:
    """Every strategy category with at least one matching pattern (seed order)."""
    t = _normalise(text)
    return [name for name, pats in _CATEGORIES.items() if any(p.search(t) for p in pats)]
