"""Whole-episode rollouts of one learner seat as single token sequences, for multi-turn GRPO.

An episode is one chat: the learner's first prompt is the user prompt; each of the learner's
replies is an assistant turn; between two replies the env's news is a new user turn. With
``prompt="turns"`` every prompt is the LLM policy's own (:class:`PolicyLayout`: its layout,
trimming and prefilled reply prefix, so a rated adapter reads what it was trained on); the
env-text layouts ``full`` (the observation text, then the new messages and the "--- Now ---"
block) and ``compact`` are kept for the env server and vLLM paths. The episode becomes

    prompt_ids      = chat template of the first user turn, with the assistant header
    completion_ids  = reply 1 | env turn 2 | reply 2 | env turn 3 | ... | reply k
    env_mask        = 1 on reply tokens, 0 on env-turn tokens

which is exactly the token sequence the model read while playing (the chat template is
append-only, checked by :meth:`ChatAssembler.check_append_only`), so TRL's GRPO loss, masked
with ``env_mask``, covers the learner's own tokens across all its turns and nothing else.

The opponents are fixed policies played by :class:`socialgym_agents.single_agent.SingleAgentVecEnv`
(their model calls batched per tick); the learner's replies for all live episodes of a batch
are generated together by a ``generate(contexts) -> replies`` function (token ids in, token
ids out), so the same code serves training (the trainer's model, sampled) and evaluation.
A reply is turned into an action by the LLM policy's JSON parser; an unparsable reply goes to
the env as raw text, where the game's invalid-action rule (fallback by default) decides.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from socialgym_agents.llm.parsing import ReplyError, action_string, parse_reply
from socialgym_agents.single_agent import SingleAgentVecEnv

_REPLY = "@@REPLY-SENTINEL@@"
_USER = "@@USER-SENTINEL@@"


@dataclass(frozen=True)
class EpisodeSpec:
    """What a GRPO group shares: the game, its config, the seed, the learner's seat or role and
    the opponents. Serialised as the dataset's prompt string (TRL passes only prompts to a
    rollout function)."""

    game: str
    seed: int
    seat: str
    opponents: tuple
    config: tuple = ()            # sorted (key, value) pairs

    def prompt(self) -> str:
        return json.dumps({"game": self.game, "seed": self.seed, "seat": self.seat,
                           "opponents": list(self.opponents), "config": dict(self.config)}, sort_keys=True)

    @classmethod
    def from_prompt(cls, text: str) -> "EpisodeSpec":
        data = json.loads(text)
        return cls(data["game"], int(data["seed"]), data["seat"], tuple(data["opponents"]),
                   tuple(sorted(data.get("config", {}).items())))

    def env_key(self) -> tuple:
        """Episodes with equal keys can share one vector env (everything but the seed)."""
        return (self.game, self.seat, self.opponents, self.config)


def episode_specs(game: str, seat: str, opponents: Sequence[str], seeds: Sequence[int], config: dict) -> list:
    return [EpisodeSpec(game, int(seed), seat, tuple(opponents), tuple(sorted(config.items()))) for seed in seeds]


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


@dataclass
class Episode:
    spec: EpisodeSpec
    prompt_ids: list = field(default_factory=list)
    completion_ids: list = field(default_factory=list)
    env_mask: list = field(default_factory=list)
    replies: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    reward: float = 0.0                 # the terminal outcome reward
    invalid_actions: int = 0
    role: str = ""
    learner: str = ""
    truncated: bool = False
    logprobs: Optional[list] = None     # per completion token (vLLM's sampling log-probs; env tokens 0.0)
    outside_row: int = 0                # decisions played but not in the row (policy layout: see PolicySeat)

    def shaped_reward(self, invalid_penalty: float) -> float:
        return self.reward - invalid_penalty * self.invalid_actions


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
        from socialgym_agents.llm.constraint import reply_grammar
        if not (self.config.constrained or self.config.mode == "score"):
            return None
        try:
            return reply_grammar(info)
        except ValueError:                 # no action schema: free text, no prefix
            return None

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
        _add_reply(self.episode, text, action, reply_ids, logprobs)

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
        _add_env_turn(episode, ids[start + len(canonical):])


def play_episodes(specs: Sequence[EpisodeSpec], generate: Callable[[list, list], list], tokenizer, pool=None,
                  max_turns: int = 64, prompt: str = "full", reply_prefix: str = "", make_vec=None,
                  layout: Optional[PolicyLayout] = None) -> list:
    """Play every spec to the end; ``generate(context ids, infos) -> reply ids`` (one of each per
    live episode; ``infos`` are the learner's info dicts, whose legal actions a constrained
    generator follows) makes the learner's replies for all live episodes at once; it may return
    (replies, per-token log-probs) instead (vLLM), which the episode keeps. Returns one
    :class:`Episode` per spec.

    ``prompt``: ``turns`` (the LLM policy's own layout, built by ``layout``: see
    :class:`PolicyLayout`; the reply prefix is the one the policy's backend prefills, so
    ``reply_prefix`` must be empty) or one of two env-text layouts that no policy plays: ``full``
    (the observation text, then news and the "Now" block) or ``compact``
    (:func:`compact_first_text`). With those, ``reply_prefix`` (e.g. ``{"action_type": "``) starts
    every reply: its tokens follow each assistant header as env tokens (never in the loss), the
    model continues it, and the action is parsed from prefix + continuation. ``make_vec`` builds
    each group's vector env with :class:`~socialgym_agents.single_agent.SingleAgentVecEnv`'s signature and
    shape (default: that class; ``functools.partial(socialgym_agents.serve.client.RemoteVecEnv, url)`` plays
    through an env server, full prompts only: the other layouts read the local engine's prompt parts)."""
    if prompt not in ("turns", "full", "compact"):
        raise ValueError(f"prompt must be turns, full or compact, got {prompt!r}")
    if make_vec is not None and prompt != "full":
        raise ValueError("a remote vector env serves the full prompt only (turns and compact read local prompt parts)")
    if prompt == "turns" and (layout is None or reply_prefix):
        raise ValueError("prompt=turns needs the policy's layout and takes its reply prefix from it")
    assembler = ChatAssembler(tokenizer)
    episodes = [Episode(spec) for spec in specs]
    groups: dict = defaultdict(list)
    for index, spec in enumerate(specs):
        groups[spec.env_key()].append(index)
    for (game, seat, opponents, config), indices in groups.items():
        vec = (make_vec or SingleAgentVecEnv)(game, seat, list(opponents), num_envs=len(indices), pool=pool,
                                              **dict(config))
        observations, infos = vec.reset([specs[i].seed for i in indices])
        # Each episode's outcome comes from the info and truncation of the step that ended it
        # (or of the reset, when the game was over before the learner's first move).
        final = {slot: (infos[slot], False) for slot, done in enumerate(vec.dones) if done}
        seats = [layout.seat(episodes[index], ("grpo", index), specs[index].seed) if prompt == "turns" else
                 _EnvTextSeat(assembler, tokenizer, reply_prefix, episodes[index]) for index in indices]
        contexts, prefixes = [None] * len(indices), [""] * len(indices)

        def ask(slot):
            contexts[slot], prefixes[slot] = _prompt(seats[slot], vec, slot, observations, infos, prompt)

        for slot in range(len(indices)):
            ask(slot)
        for _ in range(max_turns):
            live = [slot for slot, done in enumerate(vec.dones) if not done]
            if not live:
                break
            out = generate([list(contexts[slot]) for slot in live], [infos[slot] for slot in live])
            replies, logprobs = out if isinstance(out, tuple) else (out, [None] * len(live))
            actions: list = [None] * len(indices)
            for slot, reply_ids, reply_logprobs in zip(live, replies, logprobs):
                text = prefixes[slot] + tokenizer.decode(reply_ids, skip_special_tokens=True)
                actions[slot] = reply_to_action(text, infos[slot])
                seats[slot].reply(reply_ids, text, actions[slot], reply_logprobs)
            observations, rewards, terminated, truncated, infos = vec.step(actions)
            dones = vec.dones
            for slot in live:
                if dones[slot]:
                    final[slot] = (infos[slot], truncated[slot])
                else:
                    ask(slot)
        for slot, index in enumerate(indices):
            _settle(episodes[index], final.get(slot))
        vec.close()
    return episodes


class _EnvTextSeat:
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
            _add_env_turn(episode, env_ids)
            self.context += env_ids
        return self.context, self.reply_prefix

    def reply(self, reply_ids, text: str, action, logprobs=None) -> None:
        _add_reply(self.episode, text, action, reply_ids, logprobs)
        self.context += list(reply_ids)


def _prompt(seat, vec, slot: int, observations, infos, prompt: str) -> tuple:
    """(context ids, reply prefix) of the learner's decision now, in its layout."""
    if prompt == "turns":
        env = vec.envs[slot]
        return seat.prompt(infos[slot], env.game.prompt_parts(env.learner))
    if not seat.episode.prompt_ids:
        return seat.prompt(_first_text(vec, slot, observations, infos, prompt))
    news = news_text(observations[slot]["text"], infos[slot]) if prompt == "full" else compact_news_text(infos[slot])
    return seat.prompt(news)


def _first_text(vec, slot: int, observations, infos, prompt: str) -> str:
    """The learner's first view: the observation text, or the compact prompt built from the
    local engine's prompt parts."""
    if prompt == "full":
        return observations[slot]["text"]
    env = vec.envs[slot]
    return compact_first_text(env.game.prompt_parts(env.learner), infos[slot], env.game.game_info.name)


def _add_reply(episode: "Episode", text: str, action, reply_ids, reply_logprobs) -> None:
    """Append one learner reply (in the loss) and, from vLLM, its per-token log-probs."""
    if reply_logprobs is not None:
        if len(reply_logprobs) != len(reply_ids):
            raise ValueError(f"{len(reply_logprobs)} log-probs for {len(reply_ids)} reply tokens")
        episode.logprobs = ([0.0] * len(episode.completion_ids) if episode.logprobs is None
                            else episode.logprobs) + list(reply_logprobs)
    episode.replies.append(text)
    episode.actions.append(action)
    episode.completion_ids += list(reply_ids)
    episode.env_mask += [1] * len(reply_ids)


def _add_env_turn(episode: "Episode", env_ids: list) -> None:
    """Append the env's tokens between two replies (never in the loss; log-prob 0)."""
    episode.completion_ids += env_ids
    episode.env_mask += [0] * len(env_ids)
    if episode.logprobs is not None:
        episode.logprobs += [0.0] * len(env_ids)


def _settle(episode: "Episode", final) -> None:
    """The episode's outcome from the (info, truncated) of the step that ended it; an episode
    out of turns (``final`` None) has no outcome, scored 0 and flagged truncated."""
    if final is None:
        episode.truncated = True
        return
    info, episode.truncated = final
    episode.reward = float(info["reward"])
    episode.invalid_actions = info["invalid_actions"]
    episode.role = info.get("true_role") or info.get("role", "")   # a server sends the seat's view only
    episode.learner = info["learner"]


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
        from socialgym_agents.llm.constraint import reply_grammar
        from socialgym_agents.llm.hf_backend import CLOSE_RESERVE
        self.tokenizer, self.infos = tokenizer, infos
        # per row: a fixed prefix, or the one the policy's layout prefills for that decision
        self.prefixes = [reply_prefix(info) if callable(reply_prefix) else reply_prefix for info in infos]
        self.prompt_width, self.eos = prompt_width, eos
        self.close_at = max(0, max_new_tokens - CLOSE_RESERVE)
        self.grammars = []
        for info in infos:
            try:
                self.grammars.append(reply_grammar(info))
            except ValueError:                 # no action schema: generate freely
                self.grammars.append(None)
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
    rests = [reply[len(prefix):] for reply in _legal_replies(info) or [] if reply.startswith(prefix)]
    return {"choice": rests} if rests else None


def _legal_replies(info: Optional[dict]) -> Optional[list]:
    """The legal reply strings of a decision, when they are a finite list."""
    from socialgym_agents.llm.constraint import reply_grammar
    if info is None:
        return None
    try:
        return reply_grammar(info).finite
    except ValueError:
        return None


def reply_budget(info: Optional[dict], tokenizer, floor: int, prefix: str = "") -> int:
    """Tokens a constrained reply may need: the longest of the seat's legal replies (as the policy
    writes them, less a forced ``prefix`` already in the context) plus EOS, never below ``floor``;
    ``floor`` when the replies are not a finite list or no tokenizer is given. A budget below it
    cuts a legal reply short (a budget of 12 truncated every Rock-Paper-Scissors "scissors")."""
    finite = _legal_replies(info) if tokenizer is not None else None
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


def rollout_output(episodes: Sequence[Episode], invalid_penalty: float = 0.0) -> dict:
    """The dict a TRL ``rollout_func`` returns: ids, ``env_mask`` (TRL's multi-turn loss mask),
    the sampling log-probability of every completion token when the replies came from vLLM
    (env tokens 0.0: the mask takes them out of the importance-sampling correction; None with HF
    generation, where TRL does not use them), and per-episode fields that TRL forwards to the
    reward functions."""
    return {
        "prompt_ids": [e.prompt_ids for e in episodes],
        "completion_ids": [e.completion_ids for e in episodes],
        "env_mask": [e.env_mask for e in episodes],
        "logprobs": episode_logprobs(episodes),
        "episode_reward": [e.shaped_reward(invalid_penalty) for e in episodes],
        "outcome_reward": [e.reward for e in episodes],
        "invalid_actions": [e.invalid_actions for e in episodes],
        "role": [e.role for e in episodes],
    }


def episode_logprobs(episodes: Sequence[Episode]) -> Optional[list]:
    """The ``logprobs`` of a rollout: None when no reply came from vLLM (HF generation); else one
    list per episode, never None (TRL's importance-sampling correction takes no gaps): an episode
    whose learner never replied (its completion is env text only, all masked out) gets 0.0 per
    token. An episode with learner tokens but no log-probabilities cannot be corrected: an error."""
    if not any(e.logprobs is not None for e in episodes):
        return None
    out = []
    for e in episodes:
        if e.logprobs is None:
            if any(e.env_mask):
                raise ValueError(f"episode {e.spec.seed}: learner tokens without sampling log-probabilities")
            out.append([0.0] * len(e.completion_ids))
        else:
            out.append(e.logprobs)
    return out


def role_summary(episodes: Sequence[Episode]) -> dict:
    """Mean outcome reward and count per learner role (role-conditioned reporting)."""
    by_role: dict = defaultdict(list)
    for e in episodes:
        by_role[e.role or "?"].append(e.reward)
    return {role: (sum(r) / len(r), len(r)) for role, r in sorted(by_role.items())}
