"""Scoring-mode decisions of a local model, cached against plain: the time to score every legal
reply of a batch of decisions with :func:`socialgym_agents.llm.scoring.score_replies` (each context
encoded once, the prefix all contexts share once, the replies on its key/value cache) and with
the plain way it replaced (one right-padded forward over the whole of every (context, reply)
row, as ``socialgym_training.selfplay`` scored before), on the same contexts.

    python socialgym_benchmarks/perf/score_replies.py                        # 8 Liar's Dice openings, SmolLM2
    python socialgym_benchmarks/perf/score_replies.py --game kuhn_poker --decisions 12
    python socialgym_benchmarks/perf/score_replies.py --decisions 2 --reps 1  # smoke

The contexts are the seats' first prompts (the env's observation text in the model's chat
template) at the first decisions of seeded episodes; the replies are the legal list
(:func:`socialgym_agents.llm.constraint.reply_grammar`). Every repetition runs both ways once, in
alternating order (interleaved), after one warm-up each; printed: the median and range of
seconds per batch, the median ratio (plain / cached) with its range, and the largest
difference of a log-probability between the two (they compute the same numbers).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import socialgym_env  # noqa: E402
from socialgym_agents.llm.constraint import reply_grammar  # noqa: E402
from socialgym_agents.llm.loading import configure_threads, load_model  # noqa: E402
from socialgym_agents.llm.scoring import score_replies  # noqa: E402

PLAIN_TOKENS = 4096      # padded tokens per forward pass of the plain way (its value in socialgym_training.selfplay)


def plain_scores(model, tokenizer, contexts: list, options: list) -> list:
    """Every (context, reply) row through the whole model, right-padded, longest rows first."""
    import torch
    rows, owners = [], []
    for i, (context, texts) in enumerate(zip(contexts, options)):
        for text in texts:
            rows.append((context, tokenizer(text, add_special_tokens=False)["input_ids"]))
            owners.append(i)
    order = sorted(range(len(rows)), key=lambda j: -(len(rows[j][0]) + len(rows[j][1])))
    values = [0.0] * len(rows)
    start = 0
    while start < len(order):
        width = len(rows[order[start]][0]) + len(rows[order[start]][1])
        chunk = order[start:start + max(1, PLAIN_TOKENS // width)]
        start += len(chunk)
        ids = torch.full((len(chunk), width), tokenizer.pad_token_id or 0, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for k, j in enumerate(chunk):
            row = rows[j][0] + rows[j][1]
            ids[k, :len(row)], mask[k, :len(row)] = torch.tensor(row), 1
        logits = model(input_ids=ids, attention_mask=mask).logits
        for k, j in enumerate(chunk):
            context, reply = rows[j]
            picked = torch.log_softmax(logits[k, len(context) - 1:len(context) + len(reply) - 1].float(), dim=-1)
            values[j] = float(picked[torch.arange(len(reply)), torch.tensor(reply)].sum())
    out = [[] for _ in contexts]
    for j, value in enumerate(values):
        out[owners[j]].append(value)
    return out


def decisions(game: str, count: int, tokenizer, config: dict) -> tuple:
    """(context ids, legal replies) at the first decision of ``count`` seeded episodes."""
    contexts, options = [], []
    for seed in range(count):
        env = socialgym_env.make(game, **config)
        env.reset(seed=seed)
        agent = env.agent_selection
        chat = [{"role": "user", "content": env.observe(agent)["text"]}]
        contexts.append(tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                      return_dict=False))
        options.append(list(reply_grammar(env.infos[agent]).finite))
    return contexts, options


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="liars_dice")
    parser.add_argument("--config", default='{"num_players": 2, "dice": 1}', help="game config as JSON")
    parser.add_argument("--decisions", type=int, default=8, help="decisions scored per batch (one per episode)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    args = parser.parse_args(argv)
    import json

    import torch
    configure_threads(args.threads)
    model, tokenizer = load_model("smollm2", "float32")
    contexts, options = decisions(args.game, args.decisions, tokenizer, json.loads(args.config or "{}"))
    ways = {"cached": lambda: score_replies(model, tokenizer, contexts, options, with_eos=False),
            "plain": lambda: plain_scores(model, tokenizer, contexts, options)}
    seconds: dict = {name: [] for name in ways}
    with torch.inference_mode():
        results = {name: run() for name, run in ways.items()}            # warm-up, and the numbers compared
        for rep in range(args.reps):
            for name in (list(ways) if rep % 2 == 0 else list(ways)[::-1]):
                started = time.perf_counter()
                ways[name]()
                seconds[name].append(time.perf_counter() - started)
    gap = max(abs(a - b) for x, y in zip(results["cached"], results["plain"]) for a, b in zip(x, y))
    ratios = [p / c for p, c in zip(seconds["plain"], seconds["cached"])]
    replies = sum(len(o) for o in options)
    print(f"{args.game}: {len(contexts)} decisions, {replies} legal replies, contexts of "
          f"{min(map(len, contexts))}-{max(map(len, contexts))} tokens; {args.reps} interleaved repetitions, "
          f"{torch.get_num_threads()} threads")
    for name, values in seconds.items():
        print(f"{name:<7} {statistics.median(values):8.2f} s  [{min(values):.2f}-{max(values):.2f}]")
    print(f"plain / cached: {statistics.median(ratios):.1f}x [{min(ratios):.1f}-{max(ratios):.1f}]; "
          f"largest log-probability difference {gap:.1e}")
    return {"seconds": seconds, "ratios": ratios, "gap": gap}


if __name__ == "__main__":
    main()
