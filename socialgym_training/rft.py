"""Rejection-sampling fine-tuning (expert iteration): keep the decisions of the episodes a side
won, fine-tune a LoRA on them, play with it, repeat.

    python -m socialgym_training.rft --logs runs/budget/rft/play-1.jsonl --side werewolves --out runs/rft_data

One iteration (``socialgym_training.budget`` runs them): the current policy plays; the decisions
of the side's seats in the episodes the side **won** become SFT rows (:func:`winning_rows`: the
rows of :func:`socialgym_training.export.decision_rows`, whose ``prompt`` is the whole chat the seat
was given at that decision, rebuilt by replay and checked against the logged newest message, and
whose ``completion`` is the reply it played; legal first replies only; talk turns a
``talk=pass`` seat passed without the model are no decisions); the LoRA is fine-tuned **from the
base** on every row kept so far (all iterations' winners: expert iteration's growing set, so a
later iteration does not forget an earlier one's wins) with the TRL SFT script
(:mod:`socialgym_training.sft`, loss on the completion only). Rows of lost episodes are dropped,
not pushed down: the filter is the whole signal. (Keeping decisions of positive turn-level
advantage instead of whole winning episodes is the variant this module does not build: in the
games here rewards come only at the end, so with γ = 1 every turn of a seat has its episode's
return and the two filters coincide.)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


def winning_rows(logs: Sequence, side: str, policy: str = "smollm2*") -> list:
    """SFT rows of every decision the ``side``'s model seats made in episodes the side won, from
    the episode logs ``logs`` (files that do not exist yet are skipped)."""
    from socialgym_training.export import ExportFilter, decision_rows, load_records
    present = [str(p) for p in logs if Path(p).exists()]
    if not present:
        return []
    keep = ExportFilter(outcomes=["win"], policies=[policy], legal_only=True)
    rows = decision_rows(load_records(present), keep)
    return [r for r in rows if r["team"] == side]


def fine_tune(rows: list, data_dir: Path, out: Path, config) -> dict:
    """Save ``rows`` as an SFT dataset (every row in train) and run the SFT script on it from the
    base model with ``config``'s ``rft_*`` settings; the adapter lands in ``out/adapter``."""
    from socialgym_training import sft
    from socialgym_training.export import save_dataset, sft_dataset
    save_dataset(sft_dataset(rows, test_fraction=0.0, seed=config.seed), data_dir)
    return sft.main(["--data", str(data_dir), "--out", str(out), "--max_examples", str(config.rft_max_examples),
                     "--epochs", str(config.rft_epochs), "--learning_rate", str(config.rft_learning_rate),
                     "--grad_accum", "4", "--save_steps", "2", "--logging_steps", "1", "--threads",
                     str(config.threads), "--seed", str(config.seed), "--progress", "false"])


@dataclass
class Config:
    logs: str = ""
    """Episode log files or folders, comma-separated"""
    side: str = "werewolves"
    """The team whose won decisions are kept"""
    policy: str = "smollm2*"
    """Glob over the deciding seat's policy spec"""
    out: str = "runs/rft_data"
    """The SFT dataset folder written (train split only; train it with socialgym_training.sft)"""


def main(argv=None) -> dict:
    from socialgym_training.common import fail, parse_config
    from socialgym_training.export import save_dataset, sft_dataset
    config = parse_config(Config, argv)
    try:
        rows = winning_rows([p for p in config.logs.split(",") if p], config.side, config.policy)
    except FileNotFoundError as err:
        fail(str(err))
    if not rows:
        fail(f"no decision of a won episode of {config.side!r} by {config.policy!r} in {config.logs!r}")
    summary = save_dataset(sft_dataset(rows, test_fraction=0.0), config.out)
    print(f"{len(rows)} rows from {summary['episodes']['train']} won episodes -> {config.out}")
    return summary


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.rft")
