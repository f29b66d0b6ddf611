"""Playbooks: the text a SPaRTan reflection writes, stored as versioned files with metadata,
and the placebo control.

A playbook ``NAME`` lives in two files of the run folder: ``playbooks/NAME.md`` (the text, as
injected into the prompt's playbook slot) and ``playbooks/NAME.json`` (metadata: id, kind,
games, source model, reflector, round, prior playbook, source episode ids, prompt hash). Its
id is ``NAME@<first 8 hex of sha256(text)>``, so a regenerated text never shares an id with
the old one; episode logs record that id per seat (roster ``playbook_id``).

The placebo of a playbook has exactly its length in characters and no game content: sentences
of neutral words (none of them a word of any game's rules, roles or word lists; a test checks
this), drawn deterministically from the playbook's hash. Armed with it, a side gets "some extra
text in the prompt" and nothing else, so every table can say whether a gain beats that.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from socialgym_env.atomic import atomic_write_text

PLACEBO_WORDS = (
    "pebble meadow lantern teapot cloud willow marble violet ripple moss quilt saffron cedar "
    "tulip lagoon amber velvet thistle fern walnut pumpkin heron lilac porcelain cobble mellow "
    "dusk linen sparrow nutmeg hazel brook wicker sunlit pastel acorn plume teal basil glade "
    "gentle calm soft warm").split()

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.+-]+$")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Playbook:
    name: str
    text: str
    meta: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.name}@{text_hash(self.text)[:8]}"

    def metadata(self) -> dict:
        return {**self.meta, "id": self.id, "name": self.name, "sha256": text_hash(self.text),
                "chars": len(self.text)}


def playbook_paths(folder, name: str) -> tuple[Path, Path]:
    if not NAME_PATTERN.match(name):
        raise ValueError(f"playbook name {name!r}: use letters, digits and _ . + - only")
    folder = Path(folder)
    return folder / f"{name}.md", folder / f"{name}.json"


def save_playbook(folder, playbook: Playbook) -> Path:
    """Write the text and its metadata (text first: a file pair with metadata is complete)."""
    text_path, meta_path = playbook_paths(folder, playbook.name)
    meta_path.unlink(missing_ok=True)     # a text without metadata is "not written yet", never a mismatch
    atomic_write_text(text_path, playbook.text)
    atomic_write_text(meta_path, json.dumps(playbook.metadata(), indent=2, sort_keys=True))
    return text_path


def load_playbook(folder, name: str) -> Optional[Playbook]:
    """The stored playbook NAME, or None when it has not been written (completely) yet."""
    text_path, meta_path = playbook_paths(folder, name)
    if not (text_path.exists() and meta_path.exists()):
        return None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    playbook = Playbook(name, text_path.read_text(encoding="utf-8"), meta)
    if meta.get("sha256") != text_hash(playbook.text):
        raise ValueError(f"{text_path} does not match its metadata (edited by hand?); delete both files to regenerate")
    return playbook


def playbook_from_file(path) -> Playbook:
    """A playbook written elsewhere (a teacher's, a hand-written one): a .md/.txt file, with
    its .json metadata next to it when there is one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"playbook file {path} does not exist" + (" (it is a folder)" if path.is_dir() else ""))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"playbook file {path} is not UTF-8 text (a binary file?); expected a .md or .txt playbook") from None
    if not text.strip():                # arming a side with nothing is a placebo-free no-op, not an evaluation
        raise ValueError(f"playbook file {path} is empty; expected the playbook's text (.md or .txt)")
    meta_path = path.with_suffix(".json")
    meta = {"kind": "file"}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except ValueError as err:       # bad JSON or not UTF-8
            raise ValueError(f"playbook metadata {meta_path} is not valid JSON ({err})") from None
        if not isinstance(meta, dict):
            raise ValueError(f"playbook metadata {meta_path} must be a JSON object")
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", path.stem)
    return Playbook(name, text, {**meta, "source_file": str(path)})


def placebo_text(length: int, seed_text: str = "") -> str:
    """Neutral sentences of exactly ``length`` characters, deterministic in ``seed_text``."""
    rng = random.Random(text_hash(seed_text))
    words: list[str] = []
    out = ""
    while True:
        sentence_words = [rng.choice(PLACEBO_WORDS) for _ in range(rng.randint(5, 9))]
        sentence = " ".join(sentence_words).capitalize() + "."
        candidate = f"{out} {sentence}" if out else sentence
        if len(candidate) > length:
            break
        out = candidate
        words.extend(sentence_words)
    # fill the rest word by word, then with dots, so the length is exact and no word is cut
    while True:
        word = rng.choice(PLACEBO_WORDS)
        if len(out) + 1 + len(word) > length:
            break
        out = f"{out} {word}" if out else word
    return out + "." * (length - len(out))


def placebo_of(playbook: Playbook) -> Playbook:
    return Playbook(f"placebo-{playbook.name}", placebo_text(len(playbook.text), playbook.text),
                    {"kind": "placebo", "placebo_of": playbook.id, "games": playbook.meta.get("games", [])})
