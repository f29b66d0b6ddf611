"""Hidden-role detection examples from episode logs: what a public observer has seen of a game, and
whether a given player is on the hidden side.

One example is (episode, target player, cut point): the input is the public transcript up to the
cut, reduced to the lines the target spoke or was named in, with the target's name replaced by
``TARGET`` (so a model learns behaviour, not names); the label is 1 when the target is on the
hidden side of the game (``HIDDEN_TEAMS``: Werewolf, Spy, Chameleon, Undercover, Insider).

Only public lines go in: the input is built from ``record["transcript"]`` (the rendered public
board messages); private and team messages, role texts, observations, model prompts and the roster
are never read into it. Public role reveals are public too, but they would give the label away, so
an episode is cut before the first moderator line that reveals anyone's role or ends the game
(``REVEAL``). Cut points are the ends of rounds before that line, and the line itself, once a
player has acted.

Splits are by episode (``split_episodes``): all examples of one episode land on one side.

``statement_examples`` gives per-statement labels: whether the speaker is on the hidden side, and,
in Triadic Werewolf played with ``measure=True``, the speaker's own deception label
(``self_label`` other than ``none``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from socialgym_env.logs import iter_log_dir

from socialgym_training.detection_logs import HIDDEN_TEAMS

TARGET = "TARGET"
# A moderator line that names someone's role or ends the game (see the module docstring).
REVEAL = re.compile(r"\bwas (a|an|the) |\bis the |Game over|Undercovers: ")


@dataclass(frozen=True)
class Example:
    game: str
    episode_id: str
    target: str      # seat id, e.g. player_3
    cut: int         # number of public messages the observer has seen
    text: str        # the model input
    label: int       # 1 = the target is on the hidden side


def usable(record: dict) -> bool:
    """A finished or truncated (not failed) episode of a detection game with a transcript."""
    return (record.get("game") in HIDDEN_TEAMS and not record.get("failed")
            and bool(record.get("transcript")) and bool(record.get("messages")))


def public_messages(record: dict) -> list[dict]:
    """The public board messages, each with its rendered transcript line under ``line``."""
    public = [m for m in record["messages"] if m.get("visibility") == "public"]
    lines = record["transcript"]
    if len(public) != len(lines):
        raise ValueError(f"episode {record['episode_id']}: {len(public)} public messages "
                         f"but {len(lines)} transcript lines")
    return [dict(m, line=line) for m, line in zip(public, lines)]


def reveal_index(messages: Sequence[dict]) -> int:
    """Index of the first moderator line that reveals a role or ends the game (else the length)."""
    for i, m in enumerate(messages):
        if m.get("sender") is None and REVEAL.search(m["text"]):
            return i
    return len(messages)


def cut_points(messages: Sequence[dict]) -> list[int]:
    """Prefix lengths an observer is asked at: each round's end before the reveal, and the reveal."""
    stop = reveal_index(messages)
    cuts = [i + 1 for i in range(stop - 1) if messages[i + 1]["round"] != messages[i]["round"]]
    cuts.append(stop)
    # a cut must contain something a player did (the opening announcements are step 0)
    first_play = next((i for i, m in enumerate(messages) if m.get("step", 0) > 0), None)
    return sorted({c for c in cuts if first_play is not None and c > first_play})


def mask_name(line: str, name: str) -> str:
    return re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", TARGET, line)


def observer_text(messages: Sequence[dict], cut: int, target: str, name: str) -> str:
    """The public lines up to ``cut`` that the target spoke or is named in, name masked."""
    kept = []
    for m in messages[:cut]:
        line = mask_name(m["line"], name)
        if m.get("sender") == target or TARGET in line:
            kept.append(line)
    return "\n".join(kept) if kept else "(TARGET has not been mentioned)"


def hidden_side(record: dict) -> dict[str, int]:
    teams = HIDDEN_TEAMS[record["game"]]
    return {seat["agent"]: int(seat["team"] in teams) for seat in record["roster"]}


def episode_examples(record: dict) -> list[Example]:
    """Every (target, cut) example of one episode."""
    if not usable(record):
        return []
    messages = public_messages(record)
    labels = hidden_side(record)
    names = {seat["agent"]: seat["name"] for seat in record["roster"]}
    return [Example(record["game"], record["episode_id"], agent, cut,
                    observer_text(messages, cut, agent, names[agent]), labels[agent])
            for cut in cut_points(messages) for agent in names]


def load_examples(path, games: Optional[Iterable[str]] = None) -> list[Example]:
    """Examples of every usable episode in a log file or folder (optionally only some games)."""
    wanted = set(games) if games else None
    out = []
    for record in iter_log_dir(Path(path)):
        if wanted is None or record.get("game") in wanted:
            out.extend(episode_examples(record))
    return out


def statement_examples(record: dict) -> list[dict]:
    """Per public player statement: ``speaker_hidden`` (the speaker is on the hidden side) and,
    where the env recorded a self-label (Triadic Werewolf, ``measure=True``), ``deceptive``."""
    if not usable(record):
        return []
    messages = public_messages(record)
    labels = hidden_side(record)
    stop = reveal_index(messages)
    self_labels = {}
    for s in (record.get("metrics") or {}).get("statements", []):
        if s.get("self_label") is not None:
            self_labels[(s["speaker"], s["text"])] = s["self_label"]
    out = []
    for i, m in enumerate(messages[:stop]):
        if not m.get("sender"):
            continue
        label = self_labels.get((m["sender"], m["text"]))
        out.append({"game": record["game"], "episode_id": record["episode_id"], "index": i,
                    "speaker": m["sender"], "text": m["text"], "speaker_hidden": labels[m["sender"]],
                    "self_label": label, "deceptive": None if label is None else int(label != "none")})
    return out


def split_episodes(examples: Sequence[Example], test_fraction: float = 0.3,
                   seed: int = 0) -> tuple[list[Example], list[Example]]:
    """(train, test) with whole episodes on one side, each episode placed by
    :func:`socialgym_training.export.in_test_split` (its id, the seed and the fraction alone: the
    same side as in the SFT, DPO and GRPO exports of the same logs)."""
    from socialgym_training.export import in_test_split
    test_ids = {ex.episode_id for ex in examples if in_test_split(ex.episode_id, test_fraction, seed)}
    train = [ex for ex in examples if ex.episode_id not in test_ids]
    test = [ex for ex in examples if ex.episode_id in test_ids]
    return train, test
