"""Whole-episode rollouts of one learner seat as single token sequences, for multi-turn GRPO.

An episode is one chat: the learner's first prompt is the user prompt; each of the learner's
replies is an assistant turn; between two replies the env's news is a new user turn. With
``prompt="turns"`` every prompt is the LLM policy's own (:class:`~socialgym_training.multiturn.layouts.PolicyLayout`:
its layout, trimming and prefilled reply prefix, so a rated adapter reads what it was trained on); the
env-text layouts ``full`` (the observation text, then the new messages and the "--- Now ---"
block) and ``compact`` are kept for the env server and vLLM paths. The episode becomes

    prompt_ids      = chat template of the first user turn, with the assistant header
    completion_ids  = reply 1 | env turn 2 | reply 2 | env turn 3 | ... | reply k
    env_mask        = 1 on reply tokens, 0 on env-turn tokens

which is exactly the token sequence the model read while playing (the chat template is
append-only, checked by :meth:`~socialgym_training.multiturn.layouts.ChatAssembler.check_append_only`),
so TRL's GRPO loss, masked with ``env_mask``, covers the learner's own tokens across all its turns
and nothing else.

The opponents are fixed policies played by :class:`socialgym_agents.single_agent.SingleAgentVecEnv`
(their model calls batched per tick); the learner's replies for all live episodes of a batch
are generated together by a ``generate(contexts) -> replies`` function (token ids in, token
ids out), so the same code serves training (the trainer's model, sampled) and evaluation.
A reply is turned into an action by the LLM policy's JSON parser; an unparsable reply goes to
the env as raw text, where the game's invalid-action rule (fallback by default) decides.

The package by concern:

| module | what it holds |
| --- | --- |
| ``episode`` | what a GRPO group shares (:class:`EpisodeSpec`), one learner's row (:class:`Episode`), and the rows as a TRL ``rollout_func`` returns them |
| ``layouts`` | the prompts: the chat template turn by turn, the env-text views, the LLM policy's own layout and a seat played on it |
| ``rollout`` | :func:`play_episodes`: every spec played to the end, the learner's replies batched over live episodes |
| ``generation`` | the ``generate`` functions: a transformers model (under the reply grammar) or TRL's vLLM engine |

Self-play (:mod:`socialgym_training.selfplay`) plays its seats on the same layouts and rows.
"""
