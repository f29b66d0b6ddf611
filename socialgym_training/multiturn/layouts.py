"""The prompts a learner seat reads, as token ids: the chat template assembled turn by turn
(:class:`ChatAssembler`), the env-text views (``full``, ``compact``), the LLM policy's own
layout (:class:`PolicyLayout`, ``prompt=turns``) and a seat played on either
(:class:`PolicySeat`, :class:`EnvTextSeat`), which writes its training row into an
:class:`~socialgym_training.multiturn.episode.Episode`."""
from __future__ import annotations

import json
import re
from typing import Callable, Optional, Sequence

from socialgym_agents.llm.parsing import ReplyError, action_string, parse_reply
from socialgym_training.multiturn.episode import Episode

_REPLY = "@@REPLY-SENTINEL@@"
_USER = "@@USER-SENTINEL@@"


class ChatAssembler:
    """Token ids of the first prompt and of each env turn, from the tokenizer's chat template."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.eos_id = tokenizer.eos_token_id
        base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": _REPLY}]
        text = tokenizer.apply_chat_template(base + [{"role": "user", "content": _USER}], tokenize=False,
                                             add_generation_prompt=True)
        after_reply = text[text.index(_REPLY) + len(_REPLY):]
        self.close_reply, self.after_user = after_reply.split(_USER)
        # close_reply = "<|im_end|>\n<|im_start|>user\n" for ChatML: the reply's end marker,
        # then the user header; after_user = "<|im_end|>\n<|im_start|>assistant\n".
        self.eos_text = tokenizer.decode([self.eos_id]) if self.eos_id is not None else ""

    def first(self, text: str) -> list:
        out = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True,
                                                 add_generation_prompt=True)
        if hasattr(out, "keys") and "input_ids" in out:
            out = out["input_ids"]
        return list(out)

    def env_turn(self, text: str, reply_ids: Sequence[int]) -> list:
        """Tokens after a reply: its end marker (unless the model generated it) and the next user turn."""
        close = self.close_reply
        if reply_ids and reply_ids[-1] == self.eos_id and close.startswith(self.eos_text):
            close = close[len(self.eos_text):]
        return self.tokenizer(close + text + self.after_user, add_special_tokens=False)["input_ids"]

    def check_append_only(self, turns: Sequence[str], replies: Sequence[str]) -> bool:
        """True if assembling turn by turn gives the template's own rendering of the chat."""
        ids = self.first(turns[0])
        messages = [{"role": "user", "content": turns[0]}]
        for reply, turn in zip(replies, turns[1:]):
            reply_ids = self.tokenizer(reply, add_special_tokens=False)["input_ids"]
            ids += reply_ids + self.env_turn(turn, reply_ids)
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": turn}]
        whole = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.tokenizer.decode(ids) == whole


def news_text(observation_text: str, info: dict) -> str:
    """What a later turn shows: the messages since the learner last acted, then the "Now" block
    (phase, instructions, legal actions, answer format) of the observation."""
    now = observation_text[observation_text.rfind("--- Now ---"):] if "--- Now ---" in observation_text else ""
    lines = list(info.get("new_messages") or []) or ["(no new messages)"]
    return "\n".join(lines + ([now] if now else []))


def legal_text(info: dict) -> str:
    """The legal actions on one line and the reply format, with the first legal action as the
    example (as the LLM policy's re-ask does)."""
    listed = info.get("legal_action_list")
    legal = listed or info.get("legal_actions") or []
    first = listed[0] if listed else (info.get("action_types") or [""])[0]
    action_type, _, argument = first.partition(" ")
    example = json.dumps({"action_type": action_type, "argument": argument}, ensure_ascii=False)
    return "Legal actions: " + " | ".join(legal) + f". Reply with one JSON object only, for example: {example}"


def compact_first_text(parts: dict, info: dict, game_name: str) -> str:
    """A short first view (``--prompt compact``): who you are, goal, private facts, status, the
    messages so far, and the legal actions on one line; about a quarter of the full text's tokens.
    The game's description is left out, so use it for games the policy already knows."""
    role = f", role {info['role']}" if info.get("role") else ""
    lines = [f"{game_name}. You are {parts['agent']}{role}. Goal: {parts['goal']}"]
    lines += list(parts.get("secret") or []) + list(parts.get("status") or [])
    lines += list(info.get("new_messages") or [])
    lines.append(f"{info.get('instructions', '')} {legal_text(info)}".strip())
    return "\n".join(lines)


def compact_news_text(info: dict) -> str:
    """A later turn in the compact style: new messages, instructions and legal actions."""
    lines = list(info.get("new_messages") or []) or ["(no new messages)"]
    return "\n".join(lines + [f"{info.get('instructions', '')} {legal_text(info)}".strip()])


_TRUNCATED = re.compile(r'^\s*\{\s*"action_type"\s*:\s*"([^"]+)"')


def reply_to_action(reply: str, info: dict) -> str:
    """The env action for a reply: canonical JSON when it parses; a reply cut by the length bound
    after a complete ``{"action_type": "<type>"`` counts as that type (with no argument); else the
    raw text (the env's invalid-action rule decides)."""
    try:
        return action_string(parse_reply(reply, info))
    except ReplyError:
        cut = _TRUNCATED.match(reply)
        if cut:
            try:
                return action_string(parse_reply(json.dumps({"action_type": cut.group(1)}), info))
            except ReplyError:
                pass
        return reply.strip()


def env_text(prompt: str, first: bool, info: dict, observation_text: Callable[[], str], game=None,
             agent: str = "") -> str:
    """A decision's view on an env-text layout: ``full``, the observation text (the first view)
    or its news (:func:`news_text`); ``compact``, :func:`compact_first_text` (from ``game``'s
    prompt parts for ``agent``) or :func:`compact_news_text`. ``observation_text`` is called
    only where the layout shows it."""
    if prompt == "full":
        text = observation_text()
        return text if first else news_text(text, info)
    if first:
        return compact_first_text(game.prompt_parts(agent), info, game.game_info.name)
    return compact_news_text(info)


def info_grammar(info: Optional[dict]):
    """The grammar of a decision's legal replies (:func:`socialgym_agents.llm.constraint.reply_grammar`);
    None for no decision or one without an action schema (free text)."""
    from socialgym_agents.llm.constraint import reply_grammar
    if info is None:
        return None
    try:
        return reply_grammar(info)
    except ValueError:
        return None


def legal_replies(info: Optional[dict]) -> Optional[list]:
    """The legal reply strings of a decision, when they are a finite list."""
    grammar = info_grammar(info)
    return grammar.finite if grammar is not None else None


class PolicyLayout:
    """Prompts exactly as the LLM policy lays them out (``prompt=turns``, :mod:`socialgym_agents.llm.policy`)
    for a local model with ``options`` (the ``?key=value`` options of a ``smollm2`` / ``hf:`` spec):
    the Appendix-E first prompt with the chat template's system message, each later decision's
    user message with only what is new, the oldest history trimmed and the conversation
    restarted when it outgrows ``context`` (minus the room the options keep for the reply and
    re-asks), and the reply prefix the policy's backend prefills: the grammar's forced prefix
    when generating (``constrained``), the legal replies' common prefix in ``mode=score``. An
    adapter trained on these rows and rated as ``smollm2?adapter=...&<options>`` reads the same
    tokens in both (``tests/training/test_policy_layout.py`` checks it id for id)."""

    def __init__(self, tokenizer, context: int, options: str = ""):
        from socialgym_agents.llm.config import parse_options
        from socialgym_agents.llm.transcript import prompt_policy
        self.config = parse_options(options)
        if self.config.prompt != "turns":
            raise ValueError("training needs the policy's prompt=turns layout: prompt=single re-sends the whole "
                             "prompt at every decision, so a seat's episode is no single token sequence")
        if self.config.think:
            raise ValueError("think= is not trained here: the trainer samples replies under the action grammar "
                             "alone, without the think-then-act reasoning piece")
        self.tokenizer, self.context, self.options = tokenizer, context, options
        self.policy = prompt_policy(tokenizer, context, self.config, "smollm2?" + options)

    def grammar(self, info: dict):
        """The decision's reply grammar where the policy uses one (None: free text, no prefix)."""
        if not (self.config.constrained or self.config.mode == "score"):
            return None
        return info_grammar(info)

    def candidates(self, info: dict) -> Optional[list]:
        """The legal replies the policy scores (``mode=score`` and a finite list), else None."""
        grammar = self.grammar(info)
        return list(grammar.finite) if self.config.mode == "score" and grammar is not None and grammar.finite \
            else None

    def reply_prefix(self, info: dict) -> str:
        """The reply text the policy's backend prefills after the prompt for this decision."""
        from socialgym_agents.llm.guided import common_prefix, forced_prefix
        finite = self.candidates(info)
        if finite:
            return common_prefix(finite) if len(finite) > 1 else finite[0]
        grammar = self.grammar(info)
        return forced_prefix(grammar) if grammar is not None and self.config.constrained else ""

    def seat(self, episode: "Episode", key: tuple, seed: Optional[int] = None) -> "PolicySeat":
        self.policy.reset(key, seed)
        return PolicySeat(self, episode, key)


def policy_options(max_new_tokens: int, constrained: bool, extra: str = "") -> str:
    """The LLM options a trainer's layout uses: its reply budget and constraint, then ``extra``
    (``context=``, ``max_retries=``, ... as the rating spec will give them). ``extra`` may not
    set what the trainer itself decides (how replies are made, how long they are)."""
    from socialgym_agents.llm.config import parse_options
    from urllib.parse import parse_qsl
    owned = {"max_new_tokens", "constrained", "mode", "prompt", "think", "adapter", "talk"} & {k for k, _ in parse_qsl(extra)}
    if owned:
        raise ValueError(f"--policy_options may not set {', '.join(sorted(owned))} (the trainer's own settings)")
    options = f"max_new_tokens={max_new_tokens}&constrained={int(constrained)}" + (f"&{extra}" if extra else "")
    parse_options(options)                 # a bad key or value: ValueError naming what is valid
    return options


def make_layout(prompt: str, tokenizer, model, options: str) -> Optional[PolicyLayout]:
    """The policy's layout for ``prompt=turns`` (``model``'s context length), else None."""
    if prompt != "turns":
        return None
    from socialgym_agents.llm.hf_backend import model_context
    return PolicyLayout(tokenizer, model_context(model.config), options)


class PolicySeat:
    """One seat played on the policy's prompts, and its training row in ``episode``.

    :meth:`prompt` returns the ids the policy's model reads before this decision's reply
    (:func:`socialgym_agents.llm.hf_backend.prompt_ids` of the policy's chat, prefix included): that is
    the context to generate or score on. The row is append-only: the first prompt is
    ``prompt_ids``; each later prompt must start with the row so far, and what it adds is the
    reply (in the loss) and the env's turn (outside it). The reply's tokens in the row are those
    the next prompt holds: the chat template re-encodes the reply text, which gives the sampled
    ids unless the model picked a non-canonical split of the same text, and then the re-encoded
    ids are kept (what the policy reads from then on; with vLLM log-probs, which belong to the
    sampled ids, the row stops there instead). The row also stops when the policy restarts the
    conversation (the static part changed, or it outgrew the context: the oldest history is
    dropped, so the new prompt no longer extends the old). The later decisions are still played
    on the policy's prompts but are not in the row; ``episode.outside_row`` counts them."""

    def __init__(self, layout: PolicyLayout, episode: "Episode", key: tuple):
        self.layout, self.episode, self.key = layout, episode, key
        self.context: Optional[list] = None
        self.reply_start = 0                  # index in completion_ids where the last reply starts
        self.stopped = False

    def prompt(self, info: dict, parts: dict) -> tuple:
        """(context ids, reply prefix text) of the seat's decision now."""
        from socialgym_agents.base import Request
        from socialgym_agents.llm.hf_backend import prompt_ids
        layout = self.layout
        messages = layout.policy.next_prompt(Request(self.key, None, info, parts))
        prefix = layout.reply_prefix(info)
        ids, _ = prompt_ids(layout.tokenizer, messages, prefix, layout.context, layout.config.max_new_tokens,
                            layout.config.constrained and layout.grammar(info) is not None)
        self._extend(ids)
        self.context = ids
        return ids, prefix

    def reply(self, reply_ids: Sequence[int], text: str, action, logprobs=None) -> None:
        self.layout.policy.answered(self.key, text)
        if self.stopped:
            self.episode.replies.append(text)
            self.episode.actions.append(action)
            return
        self.reply_start = len(self.episode.completion_ids)
        self.episode.add_reply(text, action, reply_ids, logprobs)

    def _extend(self, ids: list) -> None:
        episode = self.episode
        if not episode.prompt_ids:
            episode.prompt_ids = list(ids)
            return
        if self.stopped:
            episode.outside_row += 1
            return
        before = episode.prompt_ids + episode.completion_ids[:self.reply_start]    # the last context
        eos = self.layout.tokenizer.eos_token_id
        start = len(before)
        end = ids.index(eos, start) if ids[:start] == before and eos in ids[start:] else -1
        sampled = episode.completion_ids[self.reply_start:]
        ended = bool(sampled) and sampled[-1] == eos
        canonical = ids[start:end] + ([eos] if ended else [])
        if end < 0 or (canonical != sampled and episode.logprobs is not None):
            self.stopped = True
            episode.outside_row += 1
            return
        del episode.completion_ids[self.reply_start:], episode.env_mask[self.reply_start:]
        episode.completion_ids += canonical
        episode.env_mask += [1] * len(canonical)
        episode.add_env_turn(ids[start + len(canonical):])


class EnvTextSeat:
    """A seat on the env-text layouts (``full`` / ``compact``), with a fixed reply prefix."""

    def __init__(self, assembler: ChatAssembler, tokenizer, reply_prefix: str, episode: "Episode"):
        self.assembler, self.reply_prefix, self.episode = assembler, reply_prefix, episode
        self.prefix_ids = tokenizer(reply_prefix, add_special_tokens=False)["input_ids"] if reply_prefix else []
        self.context: list = []

    def prompt(self, text: str) -> tuple:
        episode = self.episode
        if not episode.prompt_ids:
            episode.prompt_ids = self.assembler.first(text) + self.prefix_ids
            self.context = list(episode.prompt_ids)
        else:
            env_ids = self.assembler.env_turn(text, episode.completion_ids[-1:]) + self.prefix_ids
            episode.add_env_turn(env_ids)
            self.context += env_ids
        return self.context, self.reply_prefix

    def reply(self, reply_ids, text: str, action, logprobs=None) -> None:
        self.episode.add_reply(text, action, reply_ids, logprobs)
        self.context += list(reply_ids)

