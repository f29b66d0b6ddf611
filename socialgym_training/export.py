"""Datasets from episode logs: one row per decision, in the chat format TRL trains on.

Python API (stable; the GRPO and detector scripts build on it)::

    from socialgym_training.export import ExportFilter, decision_rows, sft_dataset, dpo_dataset, grpo_dataset, save_dataset
    records = list(load_records(["runs/full/logs"]))
    rows = decision_rows(records, ExportFilter(games=["prisoners_dilemma"], outcomes=["win"], legal_only=True))
    data = sft_dataset(rows, test_fraction=0.1, seed=0)          # DatasetDict: train / test
    save_dataset(data, "exports/pd_sft")                          # save_to_disk + train.jsonl, test.jsonl

A **decision row** (:func:`decision_rows`) is one turn of a seat, any seat:

| column | holds |
|--------|-------|
| ``prompt`` | the whole chat the seat's policy was given at that decision: the first user message (game description, role, goal, history, actions), every earlier reply and user turn, the newest user turn, trimmed and restarted exactly as the policy did (rebuilt by replay, :mod:`socialgym_agents.llm.transcript`); for a re-asked decision, the failed replies and re-asks after it |
| ``completion`` | ``[{"role": "assistant", "content": <the reply whose action was played>}]`` (the last attempt's reply) |
| ``messages`` | ``prompt + completion`` (TRL's conversational "messages" format) |
| ``game``, ``role``, ``team``, ``seat``, ``name``, ``policy`` | who decided (roster) |
| ``round``, ``phase``, ``step``, ``turn_index`` | when (``turn_index``: position in ``turns``) |
| ``action``, ``valid``, ``fallback``, ``reasks`` | what the env made of it; re-asks before the accepted reply |
| ``outcome``, ``reward`` | the seat's final outcome (win/draw/loss) and reward |
| ``episode_id``, ``seed``, ``config`` | the episode (``config`` as JSON: enough to rebuild the env, see :func:`socialgym_env.logs.restore_env`) |
| ``prompt_as`` | ``logged`` (an LLM seat: its logged newest message is checked against the rebuilt chat) or the LLM spec whose prompt a seat without a model (scripted, human) was given (``--prompts-as``, default ``smollm2``): its completion is its played action as that policy's JSON reply |

When the policy had to re-ask, the completion is the reply it finally played, and the prompt
ends with the failed replies and the re-asks it answered; ``reasks`` says so, and ``legal_only``
drops such rows as well as invalid ones. ``--policy 'scripted:*'`` keeps only the seats without a
model (cloning a heuristic baseline into a small model).

Exports (each a ``datasets.DatasetDict`` with ``train`` / ``test`` split **by episode**: every
decision of one episode is on one side):

- **SFT** (:func:`sft_dataset`): the decision rows.
- **DPO** (:func:`dpo_dataset`): preference pairs ``prompt`` / ``chosen`` / ``rejected`` (TRL's
  conversational preference format) plus ``variant="branching"``. At each kept decision the env
  is restored to that state and K legal actions are rolled out M times with common random
  numbers (:mod:`socialgym_training.branching`); chosen / rejected are the best / worst candidate when the
  permutation test of their gap (which accounts for picking them) gives p < alpha. Both replies
  are generated at the pair's own state, and the pair is split with its episode.
- **GRPO** (:func:`grpo_dataset`): the prompts only, with what a reward function needs to
  rebuild the exact decision point (``episode_id``, ``seed``, ``config``, ``turn_index``,
  ``prefix_actions``: the raw actions of every earlier turn) -- :func:`socialgym_env.logs.restore_env` does it.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from socialgym_env.actions import safe_repr
from socialgym_env.atomic import atomic_dir, atomic_write_text
from socialgym_env.errors import LogFormatError
from socialgym_env.logs import SKIPPED_DUPLICATES, EpisodeLogs, iter_log_dir, validate_record, verify_replay

EXPORT_KINDS = ("sft", "dpo", "grpo")
OUTCOMES = ("win", "draw", "loss")


@dataclass
class ExportFilter:
    """Which decisions to keep. Empty lists keep everything; ``policies`` are glob patterns
    over the policy spec (``"smollm2*"``)."""

    games: list = field(default_factory=list)
    roles: list = field(default_factory=list)
    policies: list = field(default_factory=list)
    outcomes: list = field(default_factory=list)     # win / draw / loss of the deciding seat
    phases: list = field(default_factory=list)
    legal_only: bool = False                          # valid first-try replies only

    def __post_init__(self):
        bad = [o for o in self.outcomes if o not in OUTCOMES]
        if bad:
            raise ValueError(f"unknown outcome(s) {bad}; valid: {', '.join(OUTCOMES)}")

    def keeps(self, row: dict) -> bool:
        return ((not self.games or row["game"] in self.games)
                and (not self.roles or row["role"] in self.roles)
                and (not self.policies or any(fnmatch.fnmatchcase(row["policy"] or "", p) for p in self.policies))
                and (not self.outcomes or row["outcome"] in self.outcomes)
                and (not self.phases or row["phase"] in self.phases)
                and (not self.legal_only or (row["valid"] and not row["fallback"] and row["reasks"] == 0)))


def load_records(paths: Iterable, logs: Optional[EpisodeLogs] = None) -> Iterator[dict]:
    """Every finished episode of the given log files or folders, each once however many of them
    hold it (failed episodes are skipped; ``logs``: the reader to use, to read its counts after)."""
    paths = list(paths)
    for path in paths:
        if not Path(path).exists():
            raise FileNotFoundError(f"no log file or folder at {path}")
    for record in logs if logs is not None else iter_log_dir(paths):
        if record.get("finished") and not record.get("failed"):
            verify_replay(record)          # rows of an edited log would carry another result's labels
            yield record


def _warn_unless_counted(message: str, why: str) -> None:
    """Bad lines and skipped files warn as the reader does; dropped copies of an episode are
    counted in the summary instead (``duplicates_dropped``)."""
    if why != SKIPPED_DUPLICATES:
        warnings.warn(message, stacklevel=2)


def _final_reply(meta: dict) -> Optional[tuple[str, int]]:
    """(the reply whose action was played, number of re-asks before it), or None."""
    attempts = [a for a in meta.get("attempts") or [] if "reply" in a]
    if not attempts or "prompt" not in (meta.get("attempts") or [{}])[0]:
        return None
    return attempts[-1]["reply"], len(attempts) - 1


def _row_facts(record: dict, index: int, turn: dict, roster: dict, config: str) -> dict:
    """Everything of a decision row but its chat (cheap: the filter looks at these only)."""
    meta = turn.get("agent_meta") or {}
    final = _final_reply(meta)
    seat = roster.get(turn["agent"], {})
    outcomes, rewards = record.get("outcomes") or {}, record.get("rewards") or {}
    return {"game": record["game"], "role": seat.get("role"), "team": seat.get("team"),
            "seat": turn["agent"], "name": seat.get("name"), "policy": seat.get("policy") or meta.get("policy"),
            "round": turn.get("round"), "phase": turn.get("phase"), "step": turn.get("step"),
            "turn_index": index, "action": turn.get("action"), "valid": bool(turn.get("valid")),
            "fallback": bool(turn.get("fallback")), "reasks": final[1] if final else 0,
            "outcome": outcomes.get(turn["agent"]), "reward": float(rewards.get(turn["agent"], 0.0)),
            "episode_id": record["episode_id"], "seed": record["seed"], "config": config}


def decision_rows(records: Iterable[dict], keep: Optional[ExportFilter] = None, as_spec: str = "smollm2",
                  report: Optional[dict] = None) -> list[dict]:
    """One row per decision of the given episodes (see the module doc), filtered by ``keep``.
    Each row's ``prompt`` is the whole chat the seat's policy was given, rebuilt by replay
    (:mod:`socialgym_agents.llm.transcript`); a seat without a model gets the chat ``as_spec`` would have
    been given. A logged LLM decision whose rebuilt newest message differs from the logged one
    (a log of another engine or prompt version) is left out and counted in
    ``report["unmatched_prompts"]``, never exported with a context the model did not see; a
    talk turn a ``talk=pass`` seat passed without its model is no decision, counted in
    ``report["silent_turns"]``. A malformed record raises LogFormatError naming the episode and what was wrong."""
    keep = keep or ExportFilter()
    report = {} if report is None else report
    report.setdefault("unmatched_prompts", 0)
    policies: dict = {}        # replay policies by spec, shared by every record (one tokenizer load)
    rows: list = []
    for record in records:
        validate_record(record)                  # LogFormatError naming the field, before any replay
        try:
            rows.extend(_record_rows(record, keep, as_spec, report, policies))
        except (KeyError, IndexError, TypeError, AttributeError) as err:   # a shape the checks do not cover
            raise LogFormatError(f"episode {safe_repr(record['episode_id'], 80)}: malformed record "
                                 f"({type(err).__name__}: {safe_repr(err, 120)})") from None
    return rows


def _record_rows(record: dict, keep: ExportFilter, as_spec: str, report: dict, policies: dict) -> list[dict]:
    """The kept decision rows of one (checked) record."""
    from socialgym_agents.llm.transcript import decision_chat, rebuild_conversations
    rows = []
    roster = {seat["agent"]: seat for seat in record["roster"]}
    config = json.dumps(record.get("config") or {}, sort_keys=True)
    facts = [_row_facts(record, i, turn, roster, config) for i, turn in enumerate(record["turns"])]
    wanted = [f for f in facts if keep.keeps(f)]
    if not wanted:
        return rows
    chats = rebuild_conversations(record, as_spec, {f["seat"] for f in wanted}, policies)
    for fact in wanted:
        turn = record["turns"][fact["turn_index"]]
        if fact["turn_index"] not in chats:      # a talk turn passed without the model (talk=pass)
            report["silent_turns"] = report.get("silent_turns", 0) + 1
            continue
        messages, reply = chats[fact["turn_index"]]
        logged = _final_reply(turn.get("agent_meta") or {})
        if logged is not None and messages[-1]["content"] != turn["agent_meta"]["attempts"][0]["prompt"]:
            report["unmatched_prompts"] += 1
            continue
        prompt = decision_chat(messages, turn)
        completion = [{"role": "assistant", "content": reply}]
        rows.append({"prompt": prompt, "completion": completion, "messages": prompt + completion,
                     **fact, "prompt_as": "logged" if logged is not None else as_spec})
    return rows


# ---------------------------------------------------------------------- splits and saving
def in_test_split(episode_id: str, test_fraction: float, seed: int = 0) -> bool:
    """Whether an episode belongs to the test split: a function of its id, the seed and the
    fraction alone, so the SFT, DPO, GRPO and detector exports of the same logs put every episode
    on the same side whichever of its rows each export keeps (SFT-then-DPO never evaluates on
    trained episodes). The SHA-256 of ``seed`` and the id, read as a number in [0, 1), is compared
    with the fraction: each episode is a test episode with probability ``test_fraction``,
    independently, so a small export may get a few more or fewer test episodes than
    ``test_fraction * n`` (or none; :func:`save_dataset` reports the counts)."""
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    digest = hashlib.sha256(f"{seed}\x00{episode_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < test_fraction


def split_episodes(episode_ids: Iterable[str], test_fraction: float, seed: int = 0) -> set:
    """The episode ids that go to the test split (:func:`in_test_split` of each)."""
    return {episode for episode in set(episode_ids) if in_test_split(episode, test_fraction, seed)}


def to_dataset_dict(rows: Sequence[dict], test_fraction: float = 0.1, seed: int = 0, group: str = "episode_id"):
    """``DatasetDict(train=..., test=...)`` with every ``group`` (episode) on one side only."""
    from datasets import Dataset, DatasetDict
    if not rows:
        raise ValueError("nothing to export: no decision matched the filter (DPO: or no branched decision "
                         "separated its candidates at the test's alpha)")
    test_ids = split_episodes((r[group] for r in rows), test_fraction, seed)
    everything = Dataset.from_list(list(rows))
    train = [i for i, r in enumerate(rows) if r[group] not in test_ids]
    test = [i for i, r in enumerate(rows) if r[group] in test_ids]
    return DatasetDict(train=everything.select(train), test=everything.select(test))


def save_dataset(data, out, meta: Optional[dict] = None) -> dict:
    """``data.save_to_disk(out)`` plus ``out/<split>.jsonl`` and ``out/export.json`` (row counts
    and ``meta``); returns the summary. The folder is written whole or not at all
    (:func:`socialgym_env.atomic.atomic_dir`): a killed export leaves the previous export, or
    none, never a test.jsonl of 3 rows beside an export.json that says 10. An existing ``out``
    is replaced only if it is empty or an earlier export (it holds export.json)."""
    summary = {"rows": {name: len(split) for name, split in data.items()},
               "episodes": {name: len(set(split["episode_id"])) if len(split) else 0 for name, split in data.items()},
               **(meta or {})}
    with atomic_dir(out, marker="export.json") as folder:
        data.save_to_disk(str(folder))
        for name, split in data.items():
            with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                for row in split:
                    handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        atomic_write_text(folder / "export.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


# ---------------------------------------------------------------------- replay
def _prefix_actions(record: dict, turn_index: int) -> list:
    return [turn["raw"] for turn in record["turns"][:turn_index]]


# ---------------------------------------------------------------------- the three exports
def sft_dataset(rows: Sequence[dict], test_fraction: float = 0.1, seed: int = 0):
    """The decision rows, split by episode."""
    return to_dataset_dict(rows, test_fraction, seed)


def grpo_dataset(rows: Sequence[dict], records: Sequence[dict], test_fraction: float = 0.1, seed: int = 0):
    """Prompts plus what rebuilds their decision point (``prefix_actions``; see :func:`socialgym_env.logs.restore_env`)."""
    by_id = {r["episode_id"]: r for r in records}
    out = []
    for row in rows:
        row = {k: v for k, v in row.items() if k not in ("completion", "messages")}
        row["prefix_actions"] = _prefix_actions(by_id[row["episode_id"]], row["turn_index"])
        out.append(row)
    return to_dataset_dict(out, test_fraction, seed)


def dpo_dataset(pairs: Sequence[dict], test_fraction: float = 0.1, seed: int = 0):
    """Preference pairs (:mod:`socialgym_training.branching`), split by the episode of their state."""
    return to_dataset_dict(pairs, test_fraction, seed)


def export(kind: str, paths: Sequence, out, keep: Optional[ExportFilter] = None, test_fraction: float = 0.1,
           seed: int = 0, as_spec: str = "smollm2", branch=None, rollout_policy: str = "",
           tokenizer: str = "") -> dict:
    """What ``socialgym export KIND LOGS... --out DIR`` does; returns the summary written to export.json,
    with the rows' token lengths for ``tokenizer`` (``smollm2``, a .gguf or a model folder;
    :func:`socialgym_training.rows.length_report`) when one is given.
    DPO pairs come from branching at each kept decision (:func:`socialgym_training.branching.logged_branching_pairs`,
    ``branch`` its settings, ``rollout_policy`` the policy of every seat in the rollouts; default
    the episode's own)."""
    if kind not in EXPORT_KINDS:
        raise ValueError(f"unknown export {kind!r}; valid: {', '.join(EXPORT_KINDS)}")
    keep = keep or ExportFilter()
    logs = iter_log_dir(list(paths), on_skip=_warn_unless_counted)
    records = list(load_records(paths, logs))
    report: dict = {"duplicates_dropped": logs.duplicates}
    rows = decision_rows(records, keep, as_spec, report)
    if kind == "sft":
        data = sft_dataset(rows, test_fraction, seed)
    elif kind == "grpo":
        data = grpo_dataset(rows, records, test_fraction, seed)
    else:
        from socialgym_agents.runner import PolicyPool

        from socialgym_training.branching import BranchConfig, logged_branching_pairs
        branched: dict = {}
        pairs = logged_branching_pairs(rows, records, branch or BranchConfig(), PolicyPool(seed=seed), rollout_policy,
                                       branched)
        data = dpo_dataset(pairs, test_fraction, seed)
        report["decisions_branched"] = len(rows)
        report["decisions_undetermined"] = branched["undetermined"]      # no worlds consistent with the seat's view
    if tokenizer:
        from socialgym_agents.llm.transcript import tokenizer_and_context

        from socialgym_training.rows import length_report
        completions = ("chosen", "rejected") if kind == "dpo" else ("completion",)
        measured = [row for split in data.values() for row in split] if kind != "grpo" else []
        if measured:                       # GRPO rows hold prompts only: their completions are sampled
            report["token_lengths"] = length_report(tokenizer_and_context(tokenizer)[0], measured, completions, tokenizer)
    meta = {"kind": kind, "logs": [str(p) for p in paths], "filter": asdict(keep), "test_fraction": test_fraction,
            "seed": seed, "episodes_read": len(records), "prompts_as": as_spec, **report}
    return save_dataset(data, out, meta)


if __name__ == "__main__":
    from socialgym_env.cli_errors import library_only
    library_only("socialgym_training.export", "to export logs run: socialgym export sft|dpo|grpo LOGS... --out DIR")
