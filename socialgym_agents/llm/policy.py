"""The LLM policy: Appendix-E prompt -> backend -> JSON reply -> action, with bounded re-asks.

For each request the policy renders the prompt (:mod:`socialgym_agents.llm.prompt`) from
``Request.prompt_parts`` (the runner fills it because ``needs_prompt_parts`` is True) and the
seat's info, trimmed to the backend's context budget. It sends one user message; the reply is
parsed (:mod:`socialgym_agents.llm.parsing`) and validated against ``info["action_types"]`` and the
action schema. An unusable reply is answered with a re-ask that quotes the error (the chat
grows: user prompt, assistant reply, user re-ask, ...), at most ``max_retries`` times. If the
last attempt is still unusable, its raw text goes to the env anyway: the env's
``invalid_action`` mode (fallback / forfeit / raise) decides what happens.

Constrained replies (``constrained=1``, the default): each request carries the grammar of its
seat's legal replies (:mod:`socialgym_agents.llm.constraint`); local backends decode under it, so the
first reply is always a legal action; servers get it as a JSON schema. The re-ask loop stays
for backends that ignore it. Scoring mode (``mode=score``): when the legal replies are a finite
list, the backend scores each of them (log-probability after the prompt) and the policy takes
the best (or samples ``softmax(score / temperature)``); the meta records every candidate's
score. Phases with free text fall back to constrained generation.

Think-then-act (``think=N``): each prompt ends with :data:`THINK_NOTE`, asking for
``{"reasoning": ..., "action": {...}}``; the grammar (:func:`~socialgym_agents.llm.constraint.thinking_grammar`)
lets a local model write up to N tokens of free reasoning and then only a legal action; servers
get the same shape as a schema, and a reasoning channel of theirs (``reasoning_content``) is
kept too. The reasoning is private: it goes to ``Decision.meta["reasoning"]`` (the log's
``turns[i]["agent_meta"]["reasoning"]``, with ``reasoning_tokens``), never to the env, so no
other seat sees it; the training exports' completion (the raw reply) holds it as the model wrote it.

All requests of one ``act_batch`` call go to the backend together, attempt by attempt, so a
re-ask round is one batch too. Every attempt (prompt or re-ask, raw reply, parsed action or
error, token usage) is returned in ``Decision.meta["attempts"]``; the runner stores the meta in
the episode log under ``turns[i]["agent_meta"]``. A backend failure (server down after its own
retries) becomes ``Decision.error``; the runner then records that episode as failed.
"""
from __future__ import annotations

import json
import math
import random
import zlib
from typing import Optional, Sequence

from socialgym_env.actions import MAX_ACTION_CHARS, clip
from socialgym_env.patterns import is_talk_turn

from ..base import Decision, Request
from .backend import Completion
from .config import LLMConfig
from .constraint import reply_grammar, thinking_grammar
from .parsing import ReplyError, action_string, extract_json_object, parse_reply, reply_reasoning
from .prompt import TEMPLATES, fit_prompt, render_actions, render_head, render_turn

REASK = ("Your previous answer could not be used: {error}. Reply with only one JSON object in the "
         "required format, for example: {example}")


THINK_NOTE = ("Think first, then act: reply with one JSON object "
              '{{"reasoning": "<your reasoning, at most {tokens} tokens, without double quotes>", '
              '"action": <your action as one JSON object in the format above>}}.')


# Backends that compute on this machine (torch, the CPU runtimes): a tick is cut to batch_size.
LOCAL_KINDS = ("hf", "openvino", "onnxruntime")

# A conversation that outgrows the context restarts at this share of the prompt budget
# (see _messages).
RESTART_SHARE = 0.5


def _example(info: dict) -> str:
    types = info.get("action_types") or ["<action type>"]
    legal = info.get("legal_action_list") or []
    if legal:
        action_type, _, argument = legal[0].partition(" ")
        return action_string({"action_type": action_type, "argument": argument})
    return action_string({"action_type": types[0], "argument": ""})


class LLMPolicy:
    """A policy backed by a chat model (local transformers or an OpenAI-compatible server)."""

    needs_prompt_parts = True

    @property
    def tick_limit(self) -> Optional[int]:
        """Decisions the batched runner hands this policy per tick: a local model's
        ``batch_size`` (one decode batch); a server's requests go out at once (None)."""
        return self.config.batch_size if getattr(self.backend, "kind", "") in LOCAL_KINDS else None

    def __init__(self, backend, config: LLMConfig, policy_id: str):
        self.backend = backend
        self.config = config
        self.policy_id = policy_id
        self.playbooks: dict = {}
        self._turns: dict = {}
        self._seed_of: dict = {}
        self._chats: dict = {}        # seat -> its conversation so far (turn layout)
        self._pending: dict = {}      # seat -> the conversation of its prompt not yet answered
        self.head = None              # head=: the decision head that chooses among scored replies
        if config.head:
            from .decision_head import DecisionHead
            self.head = DecisionHead.load(config.head)
        # Called as feature_sink(key, turn, features, pick) at each decision the head makes: a
        # trainer keeps the features it will train the head on (socialgym_training.decision_head).
        self.feature_sink = None

    # ------------------------------------------------------------------ seats
    def reset(self, key: tuple, seed: Optional[int] = None) -> None:
        self.release(key)
        self._turns[key] = 0
        # The sampling seeds come from the policy's seed and the seat's seed (the runners give
        # socialgym_agents.base.seat_seed: game, episode seed, seat), not the episode id, so arms that
        # differ only in a playbook sample alike; a key reset without a seed falls back to itself.
        stream = key if seed is None else f"{seed}|{key[-1]}"
        self._seed_of[key] = f"{self.config.seed or 0}|{stream}"

    def set_playbook(self, key: tuple, text: Optional[str]) -> None:
        """The playbook (SPaRTan reflection) injected into this seat's prompts, or None."""
        if text:
            self.playbooks[key] = text
        else:
            self.playbooks.pop(key, None)

    def release(self, key: tuple) -> None:
        """Forget a finished seat (its KV cache, playbook, turn counter)."""
        self.playbooks.pop(key, None)
        self._turns.pop(key, None)
        self._seed_of.pop(key, None)
        self._chats.pop(key, None)
        self._pending.pop(key, None)
        if hasattr(self.backend, "release"):
            self.backend.release(key)

    # ------------------------------------------------------------------ acting
    def act(self, observation: dict, info: dict, key: tuple = ("", ""), prompt_parts: Optional[dict] = None) -> Decision:
        return self.act_batch([Request(key, observation, info, prompt_parts)])[0]

    def _parts(self, request: Request) -> dict:
        if request.prompt_parts is not None:
            return request.prompt_parts
        # Called without the env's slots: the observation text stands in for the history.
        info = request.info
        text = (request.observation or {}).get("text", "")
        return {"agent": info.get("name", request.key[1] if len(request.key) > 1 else ""),
                "description": "", "goal": "", "secret": [], "status": [], "history": text.splitlines()}

    def _sample_seed(self, key: tuple, turn: int, attempt: int) -> int:
        base = self._seed_of.get(key) or f"{self.config.seed or 0}|{key}"
        return zlib.crc32(f"{base}|{turn}|{attempt}".encode())

    def _silent(self, info: dict) -> bool:
        """``talk=pass`` and a talk turn: passed without the model, never in the chat."""
        return self.config.talk == "pass" and is_talk_turn(info)

    def _meta(self) -> dict:
        """What every decision's meta says of the policy that made it."""
        return {"policy": self.policy_id, "backend": self.backend.kind, "model": self.backend.model_name,
                "sampling": self.config.sampling(), "attempts": []}

    def act_batch(self, requests: Sequence[Request]) -> list[Decision]:
        if any(self._silent(r.info) for r in requests):
            return self._silent_in_talk(requests)
        states = [self._start(request) for request in requests]
        pending = self._score(states) if self.config.mode == "score" else list(states)
        for attempt in range(1 + self.config.max_retries):
            if not pending:
                break
            replies = self.backend.complete([self._completion(s, attempt) for s in pending])
            pending = [state for state, reply in zip(pending, replies) if self._take_reply(state, reply, attempt)]
        return [self._decision(state) for state in states]

    def _start(self, request: Request) -> dict:
        """One decision's state: its first prompt and meta, its action and error still to come."""
        playbook = self.playbooks.get(request.key)
        messages, omitted, chat = self._messages(request, playbook)
        turn = self._turns.get(request.key, 0)
        self._turns[request.key] = turn + 1
        meta = {**self._meta(), "playbook": bool(playbook), "history_omitted": omitted,
                "continued": len(messages) > 1}
        return {"request": request, "turn": turn, "messages": messages, "chat": chat, "meta": meta,
                "action": None, "last_reply": "", "error": None, "grammar": self._grammar(request.info)}

    def _take_reply(self, state: dict, reply, attempt: int) -> bool:
        """Record the backend's ``reply`` (or error) to ``state``'s prompt; True when it did not
        parse, so the chat now ends in a re-ask and the decision wants another attempt."""
        record = {"prompt": state["messages"][-1]["content"]} if attempt == 0 else \
            {"reask": state["messages"][-1]["content"]}
        state["meta"]["attempts"].append(record)
        if isinstance(reply, BaseException):
            record["backend_error"] = clip(f"{type(reply).__name__}: {reply}")
            state["error"] = reply
            return False
        record["reply"] = clip(reply.text, MAX_ACTION_CHARS)   # a longer reply is never a legal action
        record["usage"] = reply.usage
        if reply.reasoning:
            record["reasoning"] = clip(reply.reasoning, MAX_ACTION_CHARS)
        state["last_reply"] = reply.text
        try:
            action = parse_reply(reply.text, state["request"].info)
        except ReplyError as err:
            self._feedback(reply, False)
            record["error"] = clip(str(err))
            state["messages"] += [{"role": "assistant", "content": reply.text},
                                  {"role": "user", "content": REASK.format(
                                      error=clip(str(err)), example=_example(state["request"].info))}]
            return True
        self._feedback(reply, True)
        record["action"] = action
        state["action"] = action
        if self.config.think:
            self._keep_reasoning(state["meta"], reply)
        return False

    def _decision(self, state: dict) -> Decision:
        """The decision a finished state makes; the seat keeps its conversation (turn layout)."""
        if self.config.prompt == "turns" and state["error"] is None:
            state["chat"]["reply"] = state["last_reply"]
            self._chats[state["request"].key] = state["chat"]
        meta = state["meta"]
        meta["valid"] = state["action"] is not None
        if state["error"] is not None:
            return Decision("", meta, error=state["error"])
        if state["action"] is not None:
            return Decision(action_string(state["action"]), meta)
        # retries exhausted: the env's invalid-action mode decides
        return Decision(self._for_env(state["last_reply"]), meta)

    def _silent_in_talk(self, requests: Sequence[Request]) -> list[Decision]:
        """``talk=pass``: talk turns are passed without the model and leave the seat's chat as it
        was (its next prompt shows them in the history); the other requests are decided as usual."""
        rest = [r for r in requests if not self._silent(r.info)]
        decided = iter(self.act_batch(rest) if rest else [])
        return [Decision("pass", {**self._meta(), "valid": True, "silent": True}) if self._silent(r.info)
                else next(decided) for r in requests]

    def kept_reply(self, key: tuple) -> Optional[str]:
        """The reply this seat keeps in its conversation (what :meth:`replay_turn` needs to
        rebuild it after a resume), or None when the layout keeps none."""
        return self._chats.get(key, {}).get("reply")

    def replay_turn(self, request: Request, reply: str) -> list:
        """The chat this policy sends for ``request`` (its first attempt, laid out and trimmed
        as :meth:`act_batch` does), then ``reply`` kept as the seat's answer, without calling the
        backend: replaying a logged episode through this rebuilds every conversation
        (:mod:`socialgym_agents.llm.transcript`). A talk turn passed in silence (``talk=pass``) was
        never in the chat: nothing is sent or kept for it (``[]``)."""
        if self._silent(request.info):
            return []
        messages = self.next_prompt(request)
        self.answered(request.key, reply)
        return messages

    def next_prompt(self, request: Request) -> list:
        """The chat this policy sends for ``request`` (its first attempt), without calling the
        backend; :meth:`answered` then keeps the reply the seat gave. A trainer that plays the
        seat with its own model builds every prompt through these two, so the adapter it trains
        reads the tokens this policy will give it when rated (:mod:`socialgym_training.multiturn`)."""
        messages, _, chat = self._messages(request, self.playbooks.get(request.key))
        self._turns[request.key] = self._turns.get(request.key, 0) + 1
        self._pending[request.key] = chat
        return messages

    def answered(self, key: tuple, reply: str) -> None:
        """Keep ``reply`` as the seat's answer to its last :meth:`next_prompt`."""
        chat = self._pending.pop(key)
        if self.config.prompt == "turns":
            chat["reply"] = reply
            self._chats[key] = chat

    # ------------------------------------------------------------------ prompt layout
    def _messages(self, request: Request, playbook: Optional[str]) -> tuple[list, int, dict]:
        """:meth:`_layout`'s chat, its last user turn ending with :data:`THINK_NOTE` in think mode:
        one place, so a replayed or trained prompt (:meth:`next_prompt`) is the one sent."""
        messages, omitted, chat = self._layout(request, playbook)
        if self.config.think:     # in place: the seat's kept conversation shows it as sent
            messages[-1]["content"] += "\n" + THINK_NOTE.format(tokens=self.config.think)
        return messages, omitted, chat

    def _layout(self, request: Request, playbook: Optional[str]) -> tuple[list, int, dict]:
        """The chat for this decision, the history lines omitted, and the seat's conversation
        record to keep. Turn layout: the seat's previous conversation + its last reply + only
        what is new, while the static part is unchanged and it fits; else the whole prompt."""
        parts, info, template = self._parts(request), request.info, TEMPLATES[self.config.template]
        history = list(parts.get("history") or [])
        head = "\n".join(render_head(parts, playbook, template))
        actions = render_actions(info, template)
        chat = self._chats.get(request.key) if self.config.prompt == "turns" else None
        if chat and chat["head"] == head and chat["seen"] <= len(history) \
                and (chat["seen"] == 0 or history[chat["seen"] - 1] == chat["last_line"]):
            turn = render_turn(parts, actions, history[chat["seen"]:], chat["shown"], template)
            messages = chat["messages"] + [{"role": "assistant", "content": chat["reply"]},
                                           {"role": "user", "content": turn}]
            fits = getattr(self.backend, "fits", None)
            if fits is None or fits(messages):
                shown = chat["shown"] + ([] if actions in chat["shown"] else [actions])
                return messages, chat["omitted"], self._chat_record(head, messages, history, chat["omitted"], shown)
            # The conversation outgrew the context: start over with the oldest history dropped
            # down to RESTART_SHARE of the budget, so the next turns extend it (and reuse its
            # cache) for a while; fitted to the brim it would be re-encoded whole every turn.
            # Each restart re-encodes share * budget tokens once per (1 - share) * budget of new
            # ones (a half doubles the encoding of a long game's turns, a quarter adds a third
            # but keeps hardly any history after the static head at a 2k context).
            prompt, omitted = fit_prompt(parts, info, playbook, self._fits_fn(RESTART_SHARE), template)
            messages = [{"role": "user", "content": prompt}]
            return messages, omitted, self._chat_record(head, messages, history, omitted, [actions])
        prompt, omitted = fit_prompt(parts, info, playbook, self._fits_fn(), template)
        messages = [{"role": "user", "content": prompt}]
        return messages, omitted, self._chat_record(head, messages, history, omitted, [actions])

    @staticmethod
    def _chat_record(head: str, messages: list, history: list, omitted: int, shown: list) -> dict:
        """``shown``: the action blocks this conversation has shown in full."""
        return {"head": head, "messages": list(messages), "seen": len(history), "shown": shown,
                "last_line": history[-1] if history else None, "omitted": omitted, "reply": ""}

    def _feedback(self, reply, legal: bool) -> None:
        """Tell a server backend whether the reply kept to the constraint it was sent under
        (its structured-output ladder notices a server that ignores the field)."""
        feedback = getattr(self.backend, "feedback", None)
        if feedback is not None and self.config.constrained:
            feedback(reply, legal)

    def _for_env(self, reply: str) -> str:
        """An unusable last reply as the env gets it: as written, except that a thinking
        seat's reasoning stays private (only the action part of its reply, if any, goes on)."""
        if not self.config.think:
            return reply.strip()
        try:
            payload = extract_json_object(reply)
            inner = payload.get("action")
            return json.dumps(inner, ensure_ascii=False) if isinstance(inner, dict) else ""
        except (ReplyError, TypeError, ValueError):
            return ""

    @staticmethod
    def _keep_reasoning(meta: dict, reply) -> None:
        """The played reply's private reasoning (its JSON field, else the server's channel)."""
        reasoning = reply_reasoning(reply.text) or reply.reasoning
        meta["reasoning"] = clip(reasoning, MAX_ACTION_CHARS)
        meta["reasoning_tokens"] = reply.usage.get("reasoning_tokens")

    # ------------------------------------------------------------------ constraints and scoring
    def _grammar(self, info: dict):
        if not (self.config.constrained or self.config.mode == "score"):
            return None
        try:
            grammar = reply_grammar(info)
        except ValueError:   # no schema to constrain by: generate freely, re-ask as before
            return None
        return thinking_grammar(grammar, self.config.think) if self.config.think else grammar

    def _completion(self, state: dict, attempt: int) -> Completion:
        key = state["request"].key
        grammar = state["grammar"] if self.config.constrained else None
        schema = grammar.json_schema(state["request"].info) if grammar is not None else None
        return Completion(key, list(state["messages"]), self._sample_seed(key, state["turn"], attempt),
                          grammar=grammar, schema=schema)

    def _score(self, states: list) -> list:
        """Decide the requests whose legal replies are a finite list by scoring every reply;
        return the states still to be generated (free-text phases, or no scoring backend)."""
        score = getattr(self.backend, "score", None)
        finite = [s for s in states if score is not None and s["grammar"] is not None and s["grammar"].finite]
        if not finite:
            return list(states)
        completions = [self._completion(s, 0) for s in finite]
        candidates = [s["grammar"].finite for s in finite]
        results = self.backend.reply_features(completions, candidates) if self.head is not None else \
            score(completions, candidates)
        for state, result in zip(finite, results):
            record = {"prompt": state["messages"][-1]["content"]}
            if isinstance(result, BaseException):
                record["backend_error"] = clip(f"{type(result).__name__}: {result}")
                state["error"] = result
            else:
                self._choose(state, record, result)
            state["meta"]["attempts"].append(record)
        return [s for s in states if s not in finite]

    def _choose(self, state: dict, record: dict, result) -> None:
        """Draw one of ``state``'s legal replies from its scores (``result``), or with a head
        from its logits over the replies' features (``result``: their matrix, column 0 the scores)."""
        candidates = state["grammar"].finite
        key = state["request"].key
        ranks = scores = list(result)
        if self.head is not None:
            scores = [float(x) for x in result[:, 0]]
            ranks = [float(x) for x in self.head.logits(result)]
            record["head"] = [round(x, 4) for x in ranks]
        pick = self._pick(ranks, self._sample_seed(key, state["turn"], 0))
        if self.head is not None and self.feature_sink is not None:
            self.feature_sink(key, state["turn"], result, pick)
        state["last_reply"] = record["reply"] = candidates[pick]
        record["scores"] = [[c, round(x, 4)] for c, x in zip(candidates, scores)]
        state["action"] = record["action"] = parse_reply(candidates[pick], state["request"].info)

    def _pick(self, scores: list, seed: int) -> int:
        """Argmax (temperature 0) or a draw from softmax(score / temperature)."""
        if self.config.temperature <= 0:
            return max(range(len(scores)), key=lambda i: scores[i])
        top = max(scores)
        weights = [math.exp((x - top) / self.config.temperature) for x in scores]
        return random.Random(seed).choices(range(len(scores)), weights=weights)[0]

    def _fits_fn(self, share: float = 1.0):
        fits = getattr(self.backend, "fits", None)
        if fits is None:
            return lambda prompt: True
        return lambda prompt: fits([{"role": "user", "content": prompt}], share)
