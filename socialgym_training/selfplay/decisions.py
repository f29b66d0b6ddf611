"""A seat's chat and training row (:class:`SeatChat`), and the model's decisions in scoring mode:
the legal replies scored and one drawn from their softmax at the trainer's temperature, the
replies generated under the grammar where the legal list is not finite (:func:`make_decider`)."""
from __future__ import annotations

import random
from typing import Optional

from socialgym_agents.llm.scoring import SeatCaches, score_replies
from socialgym_training.multiturn.episode import Episode
from socialgym_training.multiturn.generation import hf_generate_fn
from socialgym_training.multiturn.layouts import ChatAssembler, EnvTextSeat, env_text, legal_replies, reply_to_action
from socialgym_training.selfplay.config import Config


class SeatChat:
    """The token sequence one seat's policy reads and its training row (``row``: the first view,
    then its replies and the news before each later decision; ``env_mask`` 1 on its replies).
    ``layout`` (``prompt=turns``): the LLM policy's prompts (:class:`socialgym_training.multiturn.layouts.PolicySeat`,
    append-only up to a restart of the policy's chat); else the env-text layouts (``compact`` /
    ``full``) with the fixed ``reply_prefix``."""

    def __init__(self, tokenizer, config: Config, layout=None, key: tuple = ("", ""), seed: Optional[int] = None):
        self.row = Episode(spec=None)
        self.prompt, self.layout = config.prompt, layout
        # per reply: its (start, end) in the row's completion (None once the row has stopped) and
        # the rewards dealt to the seat after it, for turn-level credit
        self.turn_spans: list = []
        self.turn_rewards: list = []
        if layout is not None:
            self.seat = layout.seat(self.row, key, seed)
        else:
            self.seat = EnvTextSeat(ChatAssembler(tokenizer), tokenizer, config.reply_prefix, self.row)

    def observe(self, env, agent: str, info: Optional[dict] = None) -> tuple:
        """Add the seat's view now (first view or news; ``info`` the one it decides on, default
        ``env.infos[agent]``); return (context ids, reply prefix)."""
        info = env.infos[agent] if info is None else info
        if self.layout is not None:
            return self.seat.prompt(info, env.prompt_parts(agent))
        return self.seat.prompt(env_text(self.prompt, not self.row.prompt_ids, info,
                                         lambda: env.observe(agent)["text"], env, agent))

    def reply(self, reply_ids: list, text: str, action: str) -> None:
        start = len(self.row.completion_ids)
        self.seat.reply(list(reply_ids), text, action)
        end = len(self.row.completion_ids)
        self.turn_spans.append((start, end) if end > start else None)
        self.turn_rewards.append(0.0)

    def credit(self, reward: float) -> None:
        """A reward dealt to the seat between its turns goes to its last turn."""
        if reward and self.turn_rewards:
            self.turn_rewards[-1] += reward

    def close(self) -> None:
        """Forget the seat's conversation in the layout's policy (an episode's end)."""
        if self.layout is not None:
            self.layout.policy.release(self.seat.key)


def candidates(info: dict, reply_prefix: str) -> Optional[list]:
    """The legal replies after ``reply_prefix`` (None if the set is not a finite list)."""
    finite = legal_replies(info)
    if not finite or not all(c.startswith(reply_prefix) for c in finite):
        return None
    return [c[len(reply_prefix):] for c in finite]


def softmax_draw(scores: list, temperature: float, rng: random.Random) -> int:
    import math
    top = max(scores)
    weights = [math.exp((s - top) / max(temperature, 1e-6)) for s in scores]
    return rng.choices(range(len(scores)), weights=weights)[0]


def make_decider(model, tokenizer, config: Config, rng: random.Random, layout=None):
    """``decide(contexts, infos, prefixes) -> [(reply ids, reply text, action)]`` for one model
    state: scoring mode over the legal list, constrained generation where the list is not
    finite; each reply continues its decision's prefix."""
    import torch
    eos = tokenizer.eos_token_id
    with_eos = layout is None

    seats = SeatCaches(config.cache_mb) if config.cache_mb else None

    def decide(contexts: list, infos: list, prefixes: list, keys: Optional[list] = None) -> list:
        device = "cuda" if next(model.parameters()).is_cuda else "cpu"
        with torch.autocast(device, dtype=torch.bfloat16, enabled=config.bf16):
            return _decide(contexts, infos, prefixes, keys)

    def _decide(contexts: list, infos: list, prefixes: list, keys: Optional[list]) -> list:
        out: list = [None] * len(contexts)
        options = [candidates(info, prefix) for info, prefix in zip(infos, prefixes)]
        finite = [i for i, o in enumerate(options) if o]
        if finite:
            scores = score_replies(model, tokenizer, [contexts[i] for i in finite], [options[i] for i in finite],
                                   with_eos, seats=seats if keys else None,
                                   keys=[keys[i] for i in finite] if keys else None)
            for i, row in zip(finite, scores):
                pick = options[i][softmax_draw(row, config.temperature, rng)]
                ids = tokenizer(pick, add_special_tokens=False)["input_ids"] + ([eos] if with_eos else [])
                text = prefixes[i] + pick
                out[i] = (ids, text, reply_to_action(text, infos[i]))
        free = [i for i, o in enumerate(options) if not o]
        if free:
            generate = hf_generate_fn(model, tokenizer, config.max_new_tokens, config.temperature,
                                      seed=rng.getrandbits(31), constrained=True,
                                      reply_prefix=layout.reply_prefix if layout else config.reply_prefix)
            for i, ids in zip(free, generate([contexts[i] for i in free], [infos[i] for i in free])):
                text = prefixes[i] + tokenizer.decode(ids, skip_special_tokens=True)
                out[i] = (ids, text, reply_to_action(text, infos[i]))
        return out

    decide.forget = seats.clear if seats is not None else (lambda: None)
    return decide

