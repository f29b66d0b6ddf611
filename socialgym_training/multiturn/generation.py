"""The ``generate(contexts, infos)`` functions that make the learner's replies: a transformers
(or PEFT) model, sampled under the grammar of the legal replies (:func:`hf_generate_fn`), or
TRL's vLLM engine under its structured outputs (:func:`vllm_generate_fn`)."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Callable, Optional

from socialgym_training.multiturn.layouts import info_grammar, legal_replies


def hf_generate_fn(model, tokenizer, max_new_tokens: int, temperature: float = 1.0, seed: Optional[int] = None,
                   constrained: bool = False, reply_prefix="") -> Callable:
    """A ``generate`` for :func:`play_episodes` from a transformers (or PEFT) model: left-padded
    batch, sampling at ``temperature`` (0 = greedy), stop at EOS; reply ids include the EOS.
    ``constrained``: each row is sampled under the grammar of its legal replies (the runner's
    :class:`socialgym_agents.llm.guided.Guide`, started after ``reply_prefix``: a string, or a function of
    the row's info such as :meth:`PolicyLayout.reply_prefix`), so every reply is a legal
    action and a GRPO group differs only in *which* legal action it took; the loss still uses
    the model's unconstrained log-probabilities (TRL recomputes them), as usual for
    grammar-constrained RL."""
    import torch

    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    generator_seed = [seed]

    def generate(contexts: list, infos: Optional[list] = None) -> list:
        width = max(len(c) for c in contexts)
        device = model.device                     # the inputs follow the model (a GPU under accelerate)
        input_ids = torch.full((len(contexts), width), pad, dtype=torch.long, device=device)
        mask = torch.zeros_like(input_ids)
        for row, ids in enumerate(contexts):
            input_ids[row, width - len(ids):] = torch.tensor(ids, device=device)
            mask[row, width - len(ids):] = 1
        if generator_seed[0] is not None:
            torch.manual_seed(generator_seed[0])
            generator_seed[0] += 1
        sampling = dict(do_sample=True, temperature=temperature, top_p=1.0, top_k=0) if temperature > 0 else \
            dict(do_sample=False, temperature=None, top_p=None, top_k=None)
        processors = None
        if constrained and infos is not None:
            from transformers import LogitsProcessorList

            from socialgym_agents.llm.hf_backend import GUIDED_EXTRA
            processors = LogitsProcessorList([_GrammarProcessor(tokenizer, infos, reply_prefix, width, eos,
                                                                max_new_tokens)])
        was_training = model.training
        model.eval()
        with torch.no_grad():
            # as in the runner: the budget bounds free text; fixed JSON text may run GUIDED_EXTRA past it
            budget = max_new_tokens + GUIDED_EXTRA if processors is not None else max_new_tokens
            out = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=budget,
                                 eos_token_id=eos, pad_token_id=pad, logits_processor=processors, **sampling)
        if was_training:
            model.train()
        replies = []
        for row in out[:, width:].tolist():
            reply = []
            for token in row:
                reply.append(token)
                if token == eos:
                    break
            replies.append(reply)
        return replies

    return generate


class _GrammarProcessor:
    """A ``generate()`` logits processor: row i may only take tokens that keep its reply inside
    the grammar of its legal replies; a finished reply may only end (EOS). Rows without a grammar
    (no action schema) or whose prefix the grammar rejects are left free. As in the runner, free
    text (talk) is closed ``CLOSE_RESERVE`` tokens before the budget, so it can still end legally."""

    def __init__(self, tokenizer, infos: list, reply_prefix: str, prompt_width: int, eos: int,
                 max_new_tokens: int):
        from socialgym_agents.llm.hf_backend import CLOSE_RESERVE
        self.tokenizer, self.infos = tokenizer, infos
        # per row: a fixed prefix, or the one the policy's layout prefills for that decision
        self.prefixes = [reply_prefix(info) if callable(reply_prefix) else reply_prefix for info in infos]
        self.prompt_width, self.eos = prompt_width, eos
        self.close_at = max(0, max_new_tokens - CLOSE_RESERVE)
        self.grammars = [info_grammar(info) for info in infos]      # None: no action schema, generate freely
        self.guides = None

    def _start(self, vocab_size: int) -> None:
        from socialgym_agents.llm.guided import Guide, vocab_for
        vocab = vocab_for(self.tokenizer, vocab_size)
        self.guides = []
        for grammar, prefix in zip(self.grammars, self.prefixes):
            guide = Guide(grammar, vocab, prefix=prefix) if grammar is not None else None
            self.guides.append(guide if guide is not None and guide.state else None)

    def __call__(self, input_ids, scores):
        import torch
        if self.guides is None:
            self._start(scores.shape[-1])
        step = input_ids.shape[1] - self.prompt_width
        close = step >= self.close_at
        for row, guide in enumerate(self.guides):
            if guide is None:
                continue
            if step:
                last = int(input_ids[row, -1])
                if last == self.eos:           # the row has ended; generate() only pads it now
                    self.guides[row] = None
                    continue
                if not guide.finished:
                    guide.advance(last)
            allowed = torch.zeros(scores.shape[-1], dtype=torch.bool)
            if not guide.finished:
                allowed = guide.allowed(scores.shape[-1], close=close)
            if guide.finished or not allowed.any():   # complete (or stuck): it may only end
                allowed = torch.zeros(scores.shape[-1], dtype=torch.bool)
                allowed[self.eos] = True
            scores[row, ~allowed.to(scores.device)] = float("-inf")
        return scores


def vllm_generate_fn(trainer, constrained: bool = True, tokenizer=None, reply_prefix=None):
    """A ``generate`` through TRL's vLLM engine (``use_vllm=True``: a ``trl vllm-serve`` server or
    colocated), whose weights TRL syncs to the policy before each rollout. Returns (reply ids,
    their per-token sampling log-probabilities): TRL's importance-sampling correction compares
    those with the trained model's (None for each token of a constrained reply: vLLM's are of
    the masked distribution). ``constrained``: each row is generated under vLLM's
    structured outputs (:func:`reply_constraint`): the JSON schema of its seat's legal replies
    (:meth:`socialgym_agents.llm.constraint.ReplyGrammar.json_schema`), or, when the context already
    ends with the policy's forced reply prefix (``reply_prefix``, a function of the row's info:
    the policy's own layout, :meth:`PolicyLayout.reply_prefix`), the choice of the legal replies'
    rests after it; rows with the same constraint go in one request, with a reply budget of at
    least the longest legal reply's tokens plus EOS (:func:`reply_budget`; the trainer's
    ``max_completion_length`` otherwise). Server mode talks to the server from this process (the
    scripts refuse it under several processes: only the main one holds TRL's client); colocated
    rows go through TRL's own ``VLLMGeneration.generate`` (sleep-mode wake-up and weight sync
    included)."""
    generation = trainer.vllm_generation

    def generate(contexts: list, infos: Optional[list] = None) -> tuple:
        by_request: dict = defaultdict(list)
        for row, info in enumerate(infos or [None] * len(contexts)):
            prefix = reply_prefix(info) if reply_prefix is not None and info is not None else ""
            constraint = reply_constraint(info, prefix) if constrained and info is not None else None
            budget = reply_budget(info, tokenizer, generation.max_completion_length, prefix) if constraint else \
                generation.max_completion_length
            by_request[(json.dumps(constraint, sort_keys=True) if constraint else "", budget)].append(row)
        replies: list = [None] * len(contexts)
        logprobs: list = [None] * len(contexts)
        for (key, budget), rows in by_request.items():
            ids, lps = vllm_sample(generation, [contexts[r] for r in rows], json.loads(key) if key else None, budget)
            for r, reply, lp in zip(rows, ids, lps):
                # under a constraint vLLM scores the grammar-masked distribution, which the
                # trainer's unconstrained log-probabilities cannot be compared with: such tokens
                # are ones vLLM could not score (None; TRL: importance ratio 1, left out of its
                # divergence metrics), see socialgym_training.grpo_games.vllm_args
                replies[r], logprobs[r] = reply, ([None] * len(reply) if key else lp)
        return replies, logprobs

    return generate


def reply_constraint(info: dict, prefix: str = "") -> Optional[dict]:
    """vLLM's ``structured_outputs`` for a reply: ``{"json": schema}`` of the legal replies, or,
    after a forced ``prefix`` already in the context, ``{"choice": [the legal replies' rests]}``
    (a schema would start a new object); None where no constraint applies (free text after a
    prefix, or no action schema)."""
    if not prefix:
        schema = _reply_schema(info)
        return {"json": schema} if schema else None
    rests = [reply[len(prefix):] for reply in legal_replies(info) or [] if reply.startswith(prefix)]
    return {"choice": rests} if rests else None


def reply_budget(info: Optional[dict], tokenizer, floor: int, prefix: str = "") -> int:
    """Tokens a constrained reply may need: the longest of the seat's legal replies (as the policy
    writes them, less a forced ``prefix`` already in the context) plus EOS, never below ``floor``;
    ``floor`` when the replies are not a finite list or no tokenizer is given. A budget below it
    cuts a legal reply short (a budget of 12 truncated every Rock-Paper-Scissors "scissors")."""
    finite = legal_replies(info) if tokenizer is not None else None
    if not finite:
        return floor
    longest = max(len(tokenizer(reply[len(prefix):] if reply.startswith(prefix) else reply,
                                add_special_tokens=False)["input_ids"]) for reply in finite)
    return max(floor, longest + 1)


def _reply_schema(info: dict) -> Optional[dict]:
    from socialgym_agents.llm.constraint import reply_grammar
    try:
        return reply_grammar(info).json_schema(info)
    except ValueError:                # no action schema: generate freely
        return None


def vllm_sample(generation, prompts: list, constraint: Optional[dict], max_tokens: Optional[int] = None) -> tuple:
    """(completion ids, sampled-token log-probabilities) of one reply per prompt (token ids) from
    TRL's ``VLLMGeneration`` at its sampling settings, under the ``constraint`` when given (vLLM's
    ``structured_outputs``: ``{"json": schema}`` or ``{"choice": [...]}``), up to ``max_tokens``
    (default: its ``max_completion_length``). Server mode calls the client; colocated, TRL's own
    ``generate`` runs with the constraint and budget set for the call."""
    budget = max_tokens or generation.max_completion_length
    extra = dict(generation.generation_kwargs or {})
    if constraint is not None:
        extra["structured_outputs"] = constraint
    if generation.mode == "server":
        settings = dict(temperature=generation.temperature, top_p=generation.top_p, top_k=generation.top_k or 0,
                        min_p=generation.min_p or 0.0, repetition_penalty=generation.repetition_penalty,
                        max_tokens=budget, logprobs=0)
        out = generation.vllm_client.generate(prompts=prompts, n=1, generation_kwargs=extra, **settings)
        return [list(ids) for ids in out["completion_ids"]], [[lp[0] for lp in seq] for seq in out["logprobs"]]
    if getattr(generation, "tensor_parallel_size", 1) > 1:
        # TRL gathers prompts over the tensor-parallel group in every call: the groups' calls
        # (one per schema) would not line up across ranks
        raise ValueError("colocated vLLM with tensor_parallel_size > 1 is not supported by per-schema requests")
    saved = generation.max_completion_length, generation.generation_kwargs
    generation.max_completion_length, generation.generation_kwargs = budget, extra
    try:
        _, completion_ids, logprobs, _ = generation.generate(prompts, None, num_generations=1)
    finally:
        generation.max_completion_length, generation.generation_kwargs = saved
    return [list(ids) for ids in completion_ids], [[lp[0] for lp in seq] for seq in logprobs]


