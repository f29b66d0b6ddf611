"""Scoring a finite list of replies with a local causal LM: the log-probability of each reply's
tokens after a context of token ids. Self-play's scoring-mode decisions and the exploitability
of an LLM's action distribution (``socialgym_training.selfplay``) are made of it; the LLM policy's own
scoring mode (:meth:`socialgym_agents.llm.hf_backend.HFBackend.score`) works on its seats' caches
instead."""
from __future__ import annotations

SCORE_TOKENS = 4096      # option tokens per forward pass on a context's cache: bounds the logits' memory
# Every option row of a pass gets its own copy of its context's keys and values: this bounds the
# positions copied per pass (~0.75 GB for SmolLM2 in float32), e.g. 90 bids after a 2,000-token chat.
CACHE_TOKENS = 16384


def score_replies(model, tokenizer, contexts: list, options: list, with_eos: bool = True) -> list:
    """Per context, the log-probability of each option's tokens (plus EOS after it with
    ``with_eos``: the env-text layouts; the policy's scoring mode, which ``prompt=turns`` plays,
    scores the reply text alone).

    Each context is encoded once and its options are scored as one batch on top of its key/value
    cache; the prefix all contexts share (the system prompt and rules, about a third of a
    seat's first prompt) is encoded once per call. Scoring every option over its whole context,
    as a plain forward per (context, option) row would, costs about as many context encodings as
    there are legal replies (12 opening bids in two-player, one-die Liar's Dice). The
    log-probabilities are those of that plain forward up to float rounding (``tests/training/test_selfplay.py``);
    ``socialgym_benchmarks/perf/score_replies.py`` times the two side by side."""
    import torch
    from .kv_cache import RoomyCache, select_rows
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    device = model.get_input_embeddings().weight.device
    option_ids = [[tokenizer(text, add_special_tokens=False)["input_ids"] + ([eos] if with_eos else [])
                   for text in texts] for texts in options]
    contexts = [list(c) for c in contexts]
    shared = common_length(contexts) if len(contexts) > 1 else 0
    shared = min(shared, min(len(c) for c in contexts) - 1)      # every context keeps a token to predict from
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        shared_cache = None
        if shared > 0:
            shared_cache = RoomyCache()
            model(input_ids=torch.tensor([contexts[0][:shared]], device=device), cache=shared_cache,
                  use_cache=True)
        for context, ids in zip(contexts, option_ids):
            width = max([len(t) for t in ids] + [1])
            if shared_cache is not None:
                cache = select_rows(shared_cache, torch.zeros(1, dtype=torch.long), room=len(context) - shared + width)
            else:
                cache = RoomyCache(room=width)
            begin = shared if shared_cache is not None else 0
            last = model(input_ids=torch.tensor([context[begin:]], device=device), cache=cache,
                         use_cache=True).logits[0, -1].float()
            first = torch.log_softmax(last, dim=-1)
            values = [float(first[t[0]]) if t else 0.0 for t in ids]
            longer = [k for k, t in enumerate(ids) if len(t) > 1]
            step = max(1, min(SCORE_TOKENS // width, CACHE_TOKENS // (len(context) + width)))
            for start in range(0, len(longer), step):
                chunk = longer[start:start + step]
                feed_width = max(len(ids[k]) for k in chunk) - 1
                feed = torch.full((len(chunk), feed_width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), len(context) + feed_width), dtype=torch.long)
                mask[:, :len(context)] = 1
                for row, k in enumerate(chunk):
                    feed[row, :len(ids[k]) - 1] = torch.tensor(ids[k][:-1])
                    mask[row, len(context):len(context) + len(ids[k]) - 1] = 1
                positions = len(context) + torch.arange(feed_width)[None].expand(len(chunk), -1)
                rows = select_rows(cache, torch.zeros(len(chunk), dtype=torch.long), room=feed_width)
                logits = model(input_ids=feed.to(device), attention_mask=mask.to(device),
                               position_ids=positions.to(device), cache=rows, use_cache=True).logits
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                for row, k in enumerate(chunk):
                    picked = logprobs[row, torch.arange(len(ids[k]) - 1, device=logprobs.device),
                                      torch.tensor(ids[k][1:], device=logprobs.device)]
                    values[k] += float(picked.sum())
                del logits, logprobs
            out.append(values)
    if was_training:
        model.train()
    return out


def common_length(sequences: list) -> int:
    """Length of the prefix every sequence shares."""
    first, n = sequences[0], min(len(s) for s in sequences)
    for other in sequences[1:]:
        k = 0
        while k < n and other[k] == first[k]:
            k += 1
        n = k
    return n
