"""Self-play RL for a LoRA policy: one model plays every seat, against itself and its past checkpoints.

    python -m socialgym_training.selfplay --game kuhn_poker --steps 20 --out runs/selfplay_kuhn
    python -m socialgym_training.selfplay --help          # every Config field with its help line

SPIRAL-style (Liu et al., 2025), through TRL's ``GRPOTrainer`` with a ``rollout_func``:

1. **Rollouts.** Each optimiser step plays ``episodes_per_step`` episodes of any registered
   game (N players, teams or not), in groups of ``group_size`` that replay one seed (so one
   role deal) and one seating. Before each group the pool
   (:class:`socialgym_agents.selfplay.CheckpointPool`) picks the opponent: the current policy
   itself with probability ``self_play``, else a frozen one: one of ``fixed_opponents``
   (scripted baselines) with probability ``fixed_share``, or a past checkpoint drawn uniformly
   from the last ``pool_size`` ones (one is saved every ``snapshot_every`` steps; the pool
   starts with the base model, step 0). Against itself the policy plays every seat; against an
   opponent one seat (games without teams) or one team (team games; only ``train_teams`` if
   set), alternating by episode (:func:`socialgym_agents.selfplay.seat_assignment`). A
   checkpoint is a copy of the LoRA weights: its moves are made by the same model with those
   weights loaded, then the current ones are put back (:class:`~socialgym_training.selfplay.trainer.LoraSwap`). Every decision due
   in every episode (all seats of a simultaneous phase too) is decided in one batch per model
   state.
2. **Rows.** Every seat the current policy played is one training row: that seat's own chat
   as one token sequence whose ``env_mask`` is 1 on its reply tokens only (:class:`~socialgym_training.selfplay.decisions.SeatChat`),
   so the loss covers the learner's own tokens and every seat's turns are training data. With
   ``prompt=turns`` (the default) the chat is the LLM policy's own (:class:`socialgym_training.multiturn.layouts.PolicyLayout`:
   the prompts a tournament gives a checkpoint rated as ``metrics.json``'s ``rate_as`` spec;
   the row stops where the policy restarts its chat); ``compact`` / ``full`` are env-text
   layouts that no policy plays. Rows past ``rows_per_step`` are dropped (the last episode may fill the
   step only partly), rows of frozen seats (opponents, and the policy's own seats on teams
   outside ``train_teams``) are never kept.
3. **Advantages** (``advantage``). ``rae``: role-conditioned advantage estimation, a row's
   advantage is its reward minus the EMA baseline of its (game, role) -- role = the seat in
   games without roles, the hidden role in role games -- taken before the step, then updated
   with rate ``baseline_rate`` (:class:`socialgym_agents.selfplay.RoleBaseline`). ``turn``: each
   reply gets its own, the return that follows that turn minus the batch's mean at that turn
   position (within the deal when ``group_size`` > 1), over the role's (or agent's) standard
   deviation (:func:`socialgym_agents.selfplay.turn_advantages`), as per-token advantages.
   Tokens with zero advantage are filtered out: out of TRL's loss mask and out of the token
   count the loss divides by (:func:`~socialgym_training.selfplay.credit.apply_advantages`). TRL's own group-normalised advantages
   are replaced by these (:func:`~socialgym_training.selfplay.trainer.make_trainer_class`); the loss, clipping and optimiser are
   TRL's.
4. **Decisions** are made in scoring mode: the log-probability of every legal reply (the finite
   list of the grammar of legal replies after the prefix: with ``prompt=turns`` their common
   prefix and the reply text alone, as the policy's ``mode=score`` scores them; else after
   ``reply_prefix`` and with the end-of-turn token) is computed and the reply is drawn from
   ``softmax(log p / temperature)``. That is the
   distribution the OpenSpiel bridge measures (:func:`~socialgym_training.selfplay.evaluation.policy_fn`), so the exploitability
   reported is the trained policy's. Phases without a finite list (free talk) are generated
   under the grammar instead (:func:`socialgym_training.multiturn.generation.hf_generate_fn`).

Reward (``reward``): ``score`` (chips in poker: what exploitability is measured in) or
``outcome`` (+1 / 0 / -1); ``auto`` takes the score in games ranked by score, else the outcome.

Resumable (``save_every``, ``piece_steps``, ``resume``): ``trainer/checkpoint-<N>`` holds TRL's
state and this script's (:class:`~socialgym_training.selfplay.trainer.SelfPlayState`); a run can be made in pieces that add up to the
unbroken run step for step.

Writes to ``--out``: ``adapter/`` (the final LoRA), ``checkpoints/step<N>/`` (the pool's
adapters, rated together at the end), ``rollouts.csv`` (per step and role: rows, mean reward,
baseline, rows kept), ``mask_example.json`` (one row as (text, in_loss) spans),
``metrics.json`` (config, loss per step, exploitability per checkpoint for poker, before/after
evaluation with 95% intervals and the before/after difference paired by seed
(:func:`~socialgym_training.selfplay.evaluation.paired_before_after`), ``rate_as``; written as each part is measured),
``evaluation.jsonl`` (the evaluation's episodes: step0, the final checkpoint and the heuristic
in a round robin), ``tournament.jsonl`` (every checkpoint and the heuristic against each
other, as log records: ``socialgym leaderboard <out>/tournament.jsonl`` rates them
together, an Elo curve over training steps). ``--evaluate <run>`` rates an earlier run's saved
checkpoints the same way without training (a run stopped early keeps its ``checkpoints/``).

The package by concern (``cli`` is the script, top to bottom; the others are its steps):

| module | what it holds |
| --- | --- |
| ``config`` | :class:`~socialgym_training.selfplay.config.Config`: every option with its help line, and what it derives |
| ``cli`` | ``main``: the steps in order, and the options checked before anything loads |
| ``decisions`` | a seat's chat and training row (:class:`~socialgym_training.selfplay.decisions.SeatChat`), the scoring-mode decider |
| ``rollout`` | the step's episodes planned and played in lockstep, the rows collected from the learner's seats |
| ``credit`` | the rows' advantages (RAE or turn-level) and their place in TRL's loss mask |
| ``trainer`` | the TRL / PEFT glue: the GRPO trainer, its ``rollout_func``, checkpoints as LoRA weights, resumable state |
| ``evaluation`` | exploitability (poker), before / after matchups, the closing tournament |
"""
