"""A decision head: the frozen model describes each legal reply, a small linear head chooses.

``smollm2?mode=score&head=PATH`` plays it. At a decision whose legal replies are a finite list
the backend computes, per reply, the features :func:`reply_features` defines (the frozen model,
no adapter needed); the head maps them to one logit per reply and the policy draws from
``softmax(logit / temperature)`` (argmax at temperature 0) with the policy's own seeded draw, so
the same seed gives the same choices. Phases with free text are generated as in plain scoring mode.

Features of a reply (one row of the matrix :func:`reply_features` returns):

| column | holds |
|--------|-------|
| 0 | the reply's log-probability after the prompt (what ``mode=score`` ranks by) |
| 1 .. d | the model's last hidden state at the reply's tokens, mean-pooled (d = hidden size) |

The head's logit is ``w0 * logp + w . (h - mean) / scale``. A fresh head (:meth:`DecisionHead.fresh`:
``w0 = 1``, ``w = 0``) is exactly the base model's scoring-mode policy, so training starts from
the base and moves only as far as its rewards push it
(:mod:`socialgym_training.decision_head` trains it on cached features).
A prompt-level feature (the prompt's last hidden state) would add the same amount to every
reply's logit and cancel in the softmax, so it is left out; an interaction with it (an MLP over
both) is not built.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HEAD_KIND = "socialgym-decision-head"
HEAD_VERSION = 1
FEATURES = "logp+mean_hidden"


@dataclass
class DecisionHead:
    """A linear head over :func:`reply_features` rows: ``weights`` (1 + d), the hidden part's
    standardisation ``mean`` / ``scale`` (d each, fixed when it was first trained)."""

    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    meta: dict = field(default_factory=dict)

    @classmethod
    def fresh(cls, hidden: int, mean=None, scale=None) -> "DecisionHead":
        """The base policy as a head: the log-probability alone, weight 1."""
        weights = np.zeros(1 + hidden)
        weights[0] = 1.0
        return cls(weights, np.zeros(hidden) if mean is None else np.asarray(mean, float),
                   np.ones(hidden) if scale is None else np.asarray(scale, float))

    def inputs(self, features: np.ndarray) -> np.ndarray:
        """The features as the weights read them (the hidden columns standardised)."""
        features = np.asarray(features, dtype=float)
        return np.concatenate([features[:, :1], (features[:, 1:] - self.mean) / self.scale], axis=1)

    def logits(self, features: np.ndarray) -> np.ndarray:
        return self.inputs(features) @ self.weights

    def save(self, path) -> None:
        from socialgym_env.atomic import atomic_write_text
        data = {"kind": HEAD_KIND, "version": HEAD_VERSION, "features": FEATURES,
                "weights": [float(x) for x in self.weights], "mean": [float(x) for x in self.mean],
                "scale": [float(x) for x in self.scale], "meta": self.meta}
        atomic_write_text(Path(path), json.dumps(data) + "\n")

    @classmethod
    def load(cls, path) -> "DecisionHead":
        """A saved head; ValueError in one line for a missing or malformed file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"option head={str(path)!r}: not a readable decision-head file ({err})") from None
        if not isinstance(data, dict) or data.get("kind") != HEAD_KIND or data.get("features") != FEATURES:
            raise ValueError(f"option head={str(path)!r}: not a {HEAD_KIND} file over {FEATURES} features")
        weights, mean, scale = (np.asarray(data.get(k, []), dtype=float) for k in ("weights", "mean", "scale"))
        if not (len(weights) == len(mean) + 1 == len(scale) + 1 and len(mean)) or np.any(scale <= 0):
            raise ValueError(f"option head={str(path)!r}: weights, mean and scale do not fit together")
        return cls(weights, mean, scale, data.get("meta") or {})


def reply_features(model, tokenizer, context: list, options: list, seats=None, key=None) -> np.ndarray:
    """Per option (text after ``context``'s token ids), its :data:`FEATURES` row: the options'
    log-probabilities and their tokens' last hidden states mean-pooled. The context is encoded
    once (from ``seats``' cache of ``key``, a :class:`~socialgym_agents.llm.scoring.SeatCaches`,
    as far as the context kept there is a prefix of this one) and the options are fed together on copies
    of its cache. An empty option (the only legal reply is the common prefix) gets log-probability
    0 and the context's last hidden state."""
    import torch

    from .kv_cache import RoomyCache, kv_round_to
    from .scoring import CACHE_TOKENS
    option_ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in options]
    width = max([len(t) for t in option_ids] + [1])
    cache, begin = seats.take_common(key, context) if seats is not None else (None, 0)
    if cache is None:
        cache, begin = RoomyCache(room=width, round_to=kv_round_to(model)), 0
    device = model.get_input_embeddings().weight.device
    with torch.no_grad():
        out = model(input_ids=torch.tensor([context[begin:]], device=device), cache=cache, use_cache=True,
                    output_hidden_states=True)
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        last_hidden = out.hidden_states[-1][0, -1].float()
        rows = np.zeros((len(options), 1 + last_hidden.shape[0]))
        rows[:, 1:] = last_hidden.cpu().numpy()
        fed = [k for k, t in enumerate(option_ids) if t]
        step = max(1, CACHE_TOKENS // (len(context) + width))
        for start in range(0, len(fed), step):
            _option_rows(model, cache, len(context), option_ids, fed[start:start + step], first, rows,
                         tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    if seats is not None:
        seats.put(key, context, cache)
    return rows


def _option_rows(model, cache, length: int, option_ids: list, chunk: list, first, rows: np.ndarray, pad: int) -> None:
    """Fill ``rows[k]`` for the options ``chunk``: every token of each fed on a copy of the
    context's cache; logits at a token predict the next, hidden states are pooled over all."""
    import torch

    from .kv_cache import select_rows
    device = first.device
    width = max(len(option_ids[k]) for k in chunk)
    feed = torch.full((len(chunk), width), pad, dtype=torch.long)
    mask = torch.zeros((len(chunk), length + width), dtype=torch.long)
    mask[:, :length] = 1
    for row, k in enumerate(chunk):
        feed[row, :len(option_ids[k])] = torch.tensor(option_ids[k])
        mask[row, length:length + len(option_ids[k])] = 1
    positions = length + torch.arange(width)[None].expand(len(chunk), -1)
    copies = select_rows(cache, torch.zeros(len(chunk), dtype=torch.long), room=width)
    out = model(input_ids=feed.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                cache=copies, use_cache=True, output_hidden_states=True)
    logprobs = torch.log_softmax(out.logits.float(), dim=-1)
    hidden = out.hidden_states[-1].float()
    for row, k in enumerate(chunk):
        ids = option_ids[k]
        value = float(first[ids[0]])
        if len(ids) > 1:
            value += float(logprobs[row, torch.arange(len(ids) - 1, device=device),
                                    torch.tensor(ids[1:], device=device)].sum())
        rows[k, 0] = value
        rows[k, 1:] = hidden[row, :len(ids)].mean(0).cpu().numpy()
