"""Every episode of a batch played to the end, one learner seat each (:func:`play_episodes`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Optional, Sequence

from socialgym_agents.single_agent import SingleAgentVecEnv
from socialgym_training.multiturn.episode import Episode, EpisodeSpec
from socialgym_training.multiturn.layouts import ChatAssembler, EnvTextSeat, PolicyLayout, env_text, reply_to_action


def play_episodes(specs: Sequence[EpisodeSpec], generate: Callable[[list, list], list], tokenizer, pool=None,
                  max_turns: int = 64, prompt: str = "full", reply_prefix: str = "", make_vec=None,
                  layout: Optional[PolicyLayout] = None) -> list:
    """Play every spec to the end; ``generate(context ids, infos) -> reply ids`` (one of each per
    live episode; ``infos`` are the learner's info dicts, whose legal actions a constrained
    generator follows) makes the learner's replies for all live episodes at once; it may return
    (replies, per-token log-probs) instead (vLLM), which the episode keeps. Returns one
    :class:`Episode` per spec.

    ``prompt``: ``turns`` (the LLM policy's own layout, built by ``layout``: see
    :class:`~socialgym_training.multiturn.layouts.PolicyLayout`; the reply prefix is the one the policy's backend prefills, so
    ``reply_prefix`` must be empty) or one of two env-text layouts that no policy plays: ``full``
    (the observation text, then news and the "Now" block) or ``compact``
    (:func:`~socialgym_training.multiturn.layouts.compact_first_text`). With those, ``reply_prefix`` (e.g. ``{"action_type": "``) starts
    every reply: its tokens follow each assistant header as env tokens (never in the loss), the
    model continues it, and the action is parsed from prefix + continuation. ``make_vec`` builds
    each group's vector env with :class:`~socialgym_agents.single_agent.SingleAgentVecEnv`'s signature and
    shape (default: that class; ``functools.partial(socialgym_agents.serve.client.RemoteVecEnv, url)`` plays
    through an env server, full prompts only: the other layouts read the local engine's prompt parts)."""
    check_layout(prompt, reply_prefix, layout, remote=make_vec is not None)
    assembler = ChatAssembler(tokenizer)
    episodes = [Episode(spec) for spec in specs]
    groups: dict = defaultdict(list)
    for index, spec in enumerate(specs):
        groups[spec.env_key()].append(index)
    for (game, seat, opponents, config), indices in groups.items():
        vec = (make_vec or SingleAgentVecEnv)(game, seat, list(opponents), num_envs=len(indices), pool=pool,
                                              **dict(config))
        observations, infos = vec.reset([specs[i].seed for i in indices])
        seats = [layout.seat(episodes[index], ("grpo", index), specs[index].seed) if prompt == "turns" else
                 EnvTextSeat(assembler, tokenizer, reply_prefix, episodes[index]) for index in indices]
        final = _play_group(vec, seats, observations, infos, generate, tokenizer, max_turns, prompt)
        for slot, index in enumerate(indices):
            _settle(episodes[index], final.get(slot))
        vec.close()
    return episodes


def check_layout(prompt: str, reply_prefix: str, layout: Optional[PolicyLayout], remote: bool = False) -> None:
    """ValueError for a layout :func:`play_episodes` cannot play: an unknown ``prompt``, a remote
    vector env (``remote``) off the full prompt, ``turns`` without the policy's layout or with a
    reply prefix of its own."""
    if prompt not in ("turns", "full", "compact"):
        raise ValueError(f"prompt must be turns, full or compact, got {prompt!r}")
    if remote and prompt != "full":
        raise ValueError("a remote vector env serves the full prompt only (turns and compact read local prompt parts)")
    if prompt == "turns" and (layout is None or reply_prefix):
        raise ValueError("prompt=turns needs the policy's layout and takes its reply prefix from it")


def _play_group(vec, seats: list, observations, infos, generate: Callable, tokenizer, max_turns: int,
                prompt: str) -> dict:
    """Play one vector env's episodes (just reset) to the end or ``max_turns``, the learner's
    replies for all live ones in one ``generate`` call a turn; returns {slot: (info, truncated)}
    of the step that ended each finished episode."""
    # (or of the reset, when the game was over before the learner's first move)
    final = {slot: (infos[slot], False) for slot, done in enumerate(vec.dones) if done}
    contexts, prefixes = [None] * len(seats), [""] * len(seats)

    def ask(slot):
        contexts[slot], prefixes[slot] = _prompt(seats[slot], vec, slot, observations, infos, prompt)

    for slot in range(len(seats)):
        ask(slot)
    for _ in range(max_turns):
        live = [slot for slot, done in enumerate(vec.dones) if not done]
        if not live:
            break
        out = generate([list(contexts[slot]) for slot in live], [infos[slot] for slot in live])
        replies, logprobs = out if isinstance(out, tuple) else (out, [None] * len(live))
        actions: list = [None] * len(seats)
        for slot, reply_ids, reply_logprobs in zip(live, replies, logprobs):
            text = prefixes[slot] + tokenizer.decode(reply_ids, skip_special_tokens=True)
            actions[slot] = reply_to_action(text, infos[slot])
            seats[slot].reply(reply_ids, text, actions[slot], reply_logprobs)
        observations, rewards, terminated, truncated, infos = vec.step(actions)
        for slot in live:
            if vec.dones[slot]:
                final[slot] = (infos[slot], truncated[slot])
            else:
                ask(slot)
    return final


def _prompt(seat, vec, slot: int, observations, infos, prompt: str) -> tuple:
    """(context ids, reply prefix) of the learner's decision now, in its layout (the local
    engine's prompt parts for ``turns`` and ``compact``)."""
    first = not seat.episode.prompt_ids
    if prompt == "full":
        return seat.prompt(env_text(prompt, first, infos[slot], lambda: observations[slot]["text"]))
    local = vec.envs[slot]
    if prompt == "turns":
        return seat.prompt(infos[slot], local.game.prompt_parts(local.learner))
    return seat.prompt(env_text(prompt, first, infos[slot], lambda: observations[slot]["text"], local.game,
                                local.learner))


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

