"""Credit assignment: each row's advantage (``rae``: its reward minus its role's moving
baseline; ``turn``: per reply, the return that follows it, normalised per role or agent) and
its place in TRL's loss (:func:`apply_advantages`: the tokens with zero advantage filtered out)."""
from __future__ import annotations

from socialgym_agents.selfplay import RoleBaseline, keep_nonzero, turn_advantages
from socialgym_training.selfplay.config import Config


def apply_advantages(output: dict, advantages: list, gather=lambda x: x) -> dict:
    """Put the rollout's ``advantages`` (per row: one number for the whole row, or one per
    completion token) into TRL's generation output and filter what has advantage zero.

    The filter goes into ``tool_mask`` (TRL's loss-only mask; ``completion_mask`` is also the
    attention mask, so zeroing it would change what later tokens see) and ``num_items_in_batch``
    is recounted from the masks after it: TRL counts it before this override, and the token-mean
    losses (``dapo``, the default, ``cispo``, ``vespo``) divide by it, so filtered tokens
    would otherwise still dilute the mean."""
    import torch
    completion_mask = output["completion_mask"]
    dtype, device = output["advantages"].dtype, output["advantages"].device
    if all(isinstance(a, (int, float)) for a in advantages):
        values = torch.tensor(advantages, dtype=dtype, device=device)
        keep = (values.abs() > 1e-8).unsqueeze(1).expand_as(completion_mask)
    else:
        values = torch.zeros(completion_mask.shape, dtype=dtype, device=device)
        for i, row in enumerate(advantages):       # completions are padded on the right
            values[i, :len(row)] = torch.tensor(row, dtype=dtype, device=device)
        keep = values.abs() > 1e-8
    loss_mask = output.get("tool_mask", torch.ones_like(completion_mask))
    output["tool_mask"] = loss_mask * keep.to(loss_mask.dtype)
    output["advantages"] = values
    output["num_items_in_batch"] = gather((completion_mask * output["tool_mask"]).sum()).sum()
    return output


def row_advantages(rows: list, config: Config, baseline: RoleBaseline) -> tuple:
    """(advantages for :func:`apply_advantages`, indices of the rows with some nonzero advantage).
    ``rae``: one number per row, its reward minus its role's baseline (then updated). ``turn``:
    per completion token, each reply's turn-level advantage
    (:func:`socialgym_agents.selfplay.turn_advantages` on the rewards after each turn, grouped by
    role or agent), 0 on the env's tokens."""
    if config.advantage == "rae":
        advantages = baseline.advantages_then_update([(r.role_key, r.reward) for r in rows])
        return advantages, set(keep_nonzero(advantages))
    groups = [r.role_key if config.turn_norm == "role" else (config.game, r.learner) for r in rows]
    per_turn = turn_advantages(list(zip(groups, (r.turn_rewards for r in rows))), config.turn_discount,
                               deals=[r.deal for r in rows] if config.group_size > 1 else None)
    advantages = []
    for row, turns in zip(rows, per_turn):
        tokens = [0.0] * len(row.completion_ids)
        for span, value in zip(row.turn_spans, turns):
            if span is not None:
                tokens[span[0]:span[1]] = [value] * (span[1] - span[0])
        advantages.append(tokens)
    return advantages, {i for i, tokens in enumerate(advantages) if keep_nonzero(tokens)}

