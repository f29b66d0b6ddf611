"""The whole chat an LLM policy was given at each decision of a logged episode, rebuilt.

An episode log keeps, per LLM decision, only the newest user message
(``agent_meta.attempts[0].prompt``): in the turn layout that is "what happened since your last
action", without the game description, role, goal or (after the first turn) the actions.
Training on it would teach the model to answer a context it never reads at play time. The
engine is deterministic (seed + raw actions give back every state), so replaying the episode
through an :class:`~socialgym_agents.llm.policy.LLMPolicy` whose backend never generates
(:meth:`LLMPolicy.replay_turn`), each seat fed the reply it logged, gives back each decision's
conversation exactly as the policy built it: the same layout (``prompt=turns`` / ``single``),
the same restarts when the static part changed or the chat outgrew the context, the same oldest
history lines dropped -- provided the same budget:

- model seats: as their backend measures prompts (its registration's ``prompt_fits``,
  :mod:`socialgym_agents.llm.backends`): ``smollm2`` / ``hf:`` seats with the model's tokenizer,
  counting the chat-template tokens against :func:`socialgym_agents.llm.hf_backend.prompt_budget`
  of the spec's options (``context=`` or the model's own context length), as
  :meth:`HFBackend.fits` does (:func:`token_fits`); ``openai:`` seats in characters against
  ``context_chars``, no limit by default (:func:`char_fits`);
- seats without a model (scripted, human): the prompt the ``as_spec`` LLM policy (default
  ``smollm2``) would have been given at that decision, fed the action the seat played as its
  JSON reply. So a heuristic baseline's play becomes rows a small model can be cloned from.

A re-asked decision's final reply was written after the failed replies and the re-asks:
:func:`decision_chat` appends them (from the log), so the row is what the model read then.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from ..base import Request
from ..specs import AgentSpec
from .backends import backend_kind, backend_kinds, is_model_spec
from .config import parse_options
from .parsing import action_string
from .policy import LLMPolicy

@functools.lru_cache(maxsize=8)
def tokenizer_and_context(model: str):
    """(tokenizer, context length) of ``smollm2``, a ``.gguf`` file or a local model folder;
    the embedded model's weights are the process-wide copy (:func:`socialgym_agents.llm.loading.load_model`),
    a folder's weights are never loaded (its tokenizer and config suffice)."""
    from .hf_backend import model_context
    if model == "smollm2" or model.endswith(".gguf"):
        from .loading import load_model
        weights, tokenizer = load_model(model)
        return tokenizer, model_context(weights.config)
    from transformers import AutoConfig, AutoTokenizer
    return (AutoTokenizer.from_pretrained(model, local_files_only=True),
            model_context(AutoConfig.from_pretrained(model, local_files_only=True)))


class _NoGeneration:
    """The backend stand-in of a replayed policy: it measures prompts as the real one does
    (``fits``) and is never asked to generate."""

    kind = "replay"

    def __init__(self, model_name: str, fits: Optional[Callable] = None):
        self.model_name = model_name
        if fits is not None:
            self.fits = fits

    def complete(self, items):
        raise RuntimeError("a replayed policy does not generate")


def replay_policy(spec: str) -> LLMPolicy:
    """An LLM policy that lays out and trims prompts as the policy of ``spec`` does."""
    parsed = AgentSpec.of(spec)
    backend = backend_kind(parsed.kind)
    if backend is None:
        raise ValueError(f"{spec!r} is not an LLM spec ({', '.join(sorted(backend_kinds()))}); "
                         f"its prompts cannot be rebuilt")
    config = parse_options(parsed.options)
    target = parsed.name or parsed.kind
    return LLMPolicy(_NoGeneration(target, backend.fits_for(target, config)), config, str(parsed))


def token_fits(model: str, config) -> Callable:
    """``fits(messages, share)`` of a local model (a backend registration's ``prompt_fits``)."""
    return _budget_fits(*tokenizer_and_context(model), config)


def char_fits(target: str, config) -> Optional[Callable]:
    """``fits(messages, share)`` of a server: characters against ``context_chars`` (0: no limit)."""
    limit = config.context_chars
    return None if not limit else (
        lambda messages, share=1.0: sum(len(m["content"]) for m in messages) <= limit * share)


def _budget_fits(tokenizer, model_context: int, config) -> Callable:
    """Chat-template tokens against :func:`~socialgym_agents.llm.hf_backend.prompt_budget`, as
    :meth:`HFBackend.fits` counts them."""
    from .hf_backend import chat_ids, prompt_budget
    budget = prompt_budget(config.context or model_context, config)
    return lambda messages, share=1.0: len(chat_ids(tokenizer, messages)) <= budget * share


def prompt_policy(tokenizer, model_context: int, config, spec: str = "smollm2", model_name: str = "smollm2") -> LLMPolicy:
    """An LLM policy of a local model (``tokenizer``, its context length) with the settings
    ``config`` that builds prompts (:meth:`LLMPolicy.next_prompt`) but never generates: it lays
    out and trims them as :class:`~socialgym_agents.llm.hf_backend.HFBackend` with ``config`` does
    (chat-template tokens against :func:`~socialgym_agents.llm.hf_backend.prompt_budget`)."""
    return LLMPolicy(_NoGeneration(model_name, _budget_fits(tokenizer, model_context, config)), config, spec)


def _logged_reply(turn: dict) -> Optional[str]:
    """The reply whose action was played (the last attempt's), or None for a seat without a model."""
    attempts = [a for a in ((turn.get("agent_meta") or {}).get("attempts") or []) if "reply" in a]
    return attempts[-1]["reply"] if attempts else None


def played_reply(turn: dict) -> str:
    """What a seat without a model answered, as the JSON reply an LLM policy writes for it."""
    action_type, _, argument = (turn.get("action") or turn.get("raw") or "").partition(" ")
    return action_string({"action_type": action_type, "argument": argument})


def decision_chat(messages: list, turn: dict) -> list:
    """``messages`` (the first attempt's chat) plus, for a re-asked decision, each failed reply
    and the re-ask after it: the context in which the played reply was written."""
    out = list(messages)
    attempts = (turn.get("agent_meta") or {}).get("attempts") or []
    for failed, reask in zip(attempts, attempts[1:]):
        if "reask" in reask and "reply" in failed:
            out += [{"role": "assistant", "content": failed["reply"]}, {"role": "user", "content": reask["reask"]}]
    return out


def rebuild_conversations(record: dict, as_spec: str = "smollm2", seats: Optional[set] = None,
                          policies: Optional[dict] = None) -> dict:
    """``{turn index: (chat messages, reply)}`` for each decision of ``seats`` (default: all) of a
    logged episode (a talk turn a ``talk=pass`` seat passed without its model is none): the chat its policy was given (a seat without a model: the one ``as_spec``
    would have been given) and the reply it played. ``policies`` (spec -> replay policy) is
    reused across records when given (one tokenizer load per spec)."""
    from socialgym_env.logs import LogFormatError, check_replayed_result, restore_env
    policies = {} if policies is None else policies
    roster = {seat["agent"]: seat for seat in record["roster"]}
    spec_of, policy_of = {}, {}
    for agent, seat in roster.items():
        spec = seat.get("policy") or ""
        spec_of[agent] = spec if is_model_spec(spec) else as_spec
        if spec_of[agent] not in policies:
            policies[spec_of[agent]] = replay_policy(spec_of[agent])
        policy_of[agent] = policies[spec_of[agent]]
        key = (record["episode_id"], agent)
        policy_of[agent].reset(key, record["seed"])
        if seat.get("playbook"):
            policy_of[agent].set_playbook(key, seat["playbook"])
    env = restore_env(record["game"], record.get("config"), record["seed"], record["episode_id"], ())
    out = {}
    try:
        for index, turn in enumerate(record["turns"]):
            agent = turn["agent"]
            if env.agent_selection != agent:
                raise LogFormatError(f"episode {record['episode_id']}: turn {index} was {agent}'s in the log but "
                                     f"{env.agent_selection}'s on replay (another engine version or config?)")
            reply = _logged_reply(turn)
            if reply is None:
                reply = played_reply(turn)
            request = Request((record["episode_id"], agent), None, env.infos[agent], env.prompt_parts(agent))
            messages = policy_of[agent].replay_turn(request, reply)
            if (seats is None or agent in seats) and messages:      # a silent talk turn had no chat
                out[index] = (messages, reply)
            env.step(turn["raw"])
            env.skip_dead()
        check_replayed_result(env, record)
    finally:
        for agent, policy in policy_of.items():
            policy.release((record["episode_id"], agent))
    return out
