"""Rows kept whole: their token lengths as TRL counts them, the ``max_length`` the data needs, and
shortening on the prompt side only.

TRL (1.16) truncates a row longer than ``max_length`` from its end (``keep_start``), which cuts
the completion first, then drops rows left without a loss token, silently. The SFT and DPO
scripts instead choose ``max_length`` from the rows (the longest one, up to a memory cap the user
sets) and shorten a row that is still too long before TRL sees it with the policy's own
trimming (:func:`socialgym_agents.llm.prompt.trim_chat`): the row becomes the whole prompt the
policy lays out when it (re)starts a conversation at that decision -- its head (rules, role,
goal), the history lines the chat showed with the oldest omitted behind the policy's marker, in
its chunks, and the current status and actions -- so a shortened row is what the policy would
have been given within that budget; the completion is never touched. A row that does not fit
even then (or whose prompt is not a game policy's chat) is counted and named (episode and turn)
in the log and the metrics, never dropped without a word.
"""
from __future__ import annotations

from typing import Optional, Sequence

PERCENTILES = (50, 90, 99)


def chat_ids(tokenizer, messages: list, add_generation_prompt: bool = False) -> list:
    """The chat template's token ids of ``messages`` (as TRL tokenizes a conversational row)."""
    encoded = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            add_generation_prompt=add_generation_prompt)
    return list(encoded["input_ids"])


def row_tokens(tokenizer, prompt: list, completion: list) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a conversational prompt-completion row, split where
    the prompt's tokens (with the generation prompt) and the whole row's diverge, as TRL does."""
    if isinstance(prompt, str):                # TRL's standard (text) format: plain tokens
        prompt_ids = tokenizer(prompt)["input_ids"]
        whole = tokenizer(prompt + completion)["input_ids"]
    else:
        prompt_ids = chat_ids(tokenizer, prompt, add_generation_prompt=True)
        whole = chat_ids(tokenizer, prompt + completion)
    shared = 0
    for a, b in zip(prompt_ids, whole):
        if a != b:
            break
        shared += 1
    return shared, len(whole) - shared


def row_length(tokenizer, row: dict, completion_columns: Sequence[str]) -> tuple[int, int]:
    """(prompt tokens, longest completion's tokens) of a row; DPO rows have two completions."""
    counts = [row_tokens(tokenizer, row["prompt"], row[column]) for column in completion_columns]
    return max(p for p, _ in counts), max(c for _, c in counts)


def _row_name(row: dict) -> str:
    if "episode_id" in row and "turn_index" in row:
        return f"{row['episode_id']}:turn {row['turn_index']}"
    return row.get("episode_id") or "?"


def length_report(tokenizer, rows: Sequence[dict], completion_columns: Sequence[str] = ("completion",),
                  tokenizer_name: str = "") -> dict:
    """Token lengths of the rows for ``tokenizer``: percentiles and maximum of the prompt, the
    completion and the whole row, and which row is the longest."""
    import numpy as np
    if not rows:
        return {"tokenizer": tokenizer_name, "rows": 0}
    lengths = [row_length(tokenizer, row, completion_columns) for row in rows]
    report = {"tokenizer": tokenizer_name, "rows": len(rows)}
    for name, values in (("prompt", [p for p, _ in lengths]), ("completion", [c for _, c in lengths]),
                         ("total", [p + c for p, c in lengths])):
        stats = {f"p{q}": int(np.ceil(np.percentile(values, q))) for q in PERCENTILES}
        report[name] = {**stats, "max": int(max(values))}
    longest = max(range(len(rows)), key=lambda i: sum(lengths[i]))
    report["longest"] = {"row": _row_name(rows[longest]), "tokens": int(sum(lengths[longest]))}
    return report


def shorten_prompt(tokenizer, prompt: list, completions: Sequence[list], max_length: int) -> Optional[list]:
    """``prompt`` shortened as the policy that wrote it keeps its context within budget
    (:func:`socialgym_agents.llm.prompt.trim_chat`, the policy's own fitting): the current
    decision's whole prompt, its head and its status/actions block kept, the fewest oldest
    history lines omitted (in the policy's chunks, with its omission marker) for which the
    prompt and its longest completion fit ``max_length`` tokens; a re-asked decision's failed
    replies and re-asks stay after it. None when even every history line omitted does not fit,
    or the prompt is not a game policy's chat (a plain-text prompt, another layout): there is
    no policy trimming to follow."""
    from socialgym_agents.llm.prompt import trim_chat
    if isinstance(prompt, str):
        return None
    return trim_chat(prompt, lambda chat: max(sum(row_tokens(tokenizer, chat, c)) for c in completions) <= max_length)


def fit_rows(rows: Sequence[dict], tokenizer, completion_columns: Sequence[str], max_length: int = 0,
             cap: int = 2048) -> tuple[list, int, dict]:
    """(the rows, each within the chosen length; that length; what was done). ``max_length`` 0
    takes the longest row's tokens, at most ``cap``; a set ``max_length`` is used as given.
    Longer rows are shortened by :func:`shorten_prompt`; rows that cannot fit are left out and
    named in the report (``unfit``)."""
    lengths = [sum(row_length(tokenizer, row, completion_columns)) for row in rows]
    needed = max(lengths, default=0)
    chosen = max_length if max_length > 0 else min(needed, cap)
    kept, shortened, unfit = [], [], []
    for row, length in zip(rows, lengths):
        if length <= chosen:
            kept.append(row)
            continue
        prompt = shorten_prompt(tokenizer, row["prompt"], [row[c] for c in completion_columns], chosen)
        if prompt is None:
            unfit.append(_row_name(row))
            continue
        kept.append({**row, "prompt": prompt})
        shortened.append(_row_name(row))
    report = {"max_length": chosen, "longest_row_tokens": needed, "cap": cap if max_length <= 0 else None,
              "rows": len(rows), "shortened": len(shortened), "unfit": unfit}
    return kept, chosen, report


def describe_fit(report: dict) -> str:
    """One log line per fitting: the length, what was shortened, which rows could not fit."""
    how = (f"the longest row's {report['longest_row_tokens']} tokens, capped at {report['cap']}"
           if report["cap"] else "set by --max_length")
    line = (f"max_length {report['max_length']} ({how}); {report['shortened']} of {report['rows']} rows shortened "
            f"on the prompt side (oldest history lines first, as the policy trims), completions whole")
    if report["unfit"]:
        shown = ", ".join(report["unfit"][:10]) + (" ..." if len(report["unfit"]) > 10 else "")
        line += f"; {len(report['unfit'])} rows cannot fit even with every history line omitted (or are not a game policy's chat) and are " \
                f"left out: {shown} (raise --max_length_cap or --max_length)"
    return line
