"""Which rating choice predicts outcomes best on your own logs: held-out log-loss and Brier score.

The competitive episodes are split into folds by episode (seeded); each choice is fitted on the
other folds and predicts every decisive battle of the held-out fold: P(winner beats loser) =
1 / (1 + 10 ** (-(R_winner - R_loser) / 400)), a competitor the training folds never saw at the
mean (1000). Ties are not predicted (a binary model has no tie), so every choice is scored on the
same held-out decisive battles, each counted once. The choices:

- ``pooled``: the leaderboard's Bradley–Terry fit, ties left out (the paper's text);
- ``pooled_ties_split``: the same with ties split (the paper's released code);
- ``games_equal``: every game's battles weighted to an equal share;
- ``online_elo``: the released code's online Elo (K = 32, one seeded pass);
- ``coin``: 1/2 for every battle (log-loss ln 2 = 0.693, Brier 0.25), the floor to beat.

Differences to ``pooled`` are paired (the same battles) and their standard errors clustered by
episode (an episode's battles move together).

    socialgym ratings-validity LOGS [--folds 5] [--seed 0]
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from socialgym_benchmarks import ratings as bt

from .estimate import games_equal_fit
from .records import game_info, load_records

CHOICES = ("pooled", "pooled_ties_split", "games_equal", "online_elo", "coin")


def _ratings(choice: str, train: list, opts: dict) -> dict:
    if choice == "coin":
        return {}
    if choice == "online_elo":
        return bt.online_elo(bt.collect_battles(train), seed=opts["seed"])
    if choice == "games_equal":
        by_game = defaultdict(list)
        for record in train:
            by_game[record["game"]].append(record)
        policies = sorted({s.get("policy") for r in train for s in r.get("roster", []) if s.get("policy")})
        parts = [bt.collect_battles(recs, players=policies) for recs in by_game.values()]
        return {p: v["elo"] for p, v in games_equal_fit(parts, policies, dict(opts, n_boot=0), "validity").items()}
    battles = bt.collect_battles(train, ties="split" if choice == "pooled_ties_split" else "exclude")
    elo = bt.fit_bt(battles.win_matrix(), opts["C"])
    return dict(zip(battles.players, elo.tolist()))


def validity(records: list, folds: int = 5, seed: int = 0, C: float = bt.C_DEFAULT) -> dict:
    """{choice: {"battles", "log_loss", "brier", "log_loss_vs_pooled", "se_vs_pooled",
    "brier_vs_pooled", "brier_se_vs_pooled"}} over the held-out folds."""
    records = [r for r in records if not game_info(r["game"]).get("cooperative")]
    if len(records) < folds or folds < 2:
        raise ValueError(f"need at least {max(folds, 2)} competitive episodes for {folds} folds, got {len(records)}")
    losses, briers, episode_ids = _held_out_scores(records, folds, {"seed": seed, "C": C, "by": "episode"})
    if not episode_ids:
        raise ValueError(f"no decisive battle in the held-out folds of {len(records)} episodes (all draws?): "
                         "nothing to score")
    episode_ids = np.asarray(episode_ids)
    out = {}
    for c in CHOICES:
        loss, brier = np.asarray(losses[c]), np.asarray(briers[c])
        row = {"battles": int(loss.size), "log_loss": float(loss.mean()) if loss.size else None,
               "brier": float(brier.mean()) if brier.size else None}
        for name, values in (("log_loss", loss), ("brier", brier)):
            diff = values - np.asarray(losses["pooled"] if name == "log_loss" else briers["pooled"])
            row[f"{name}_vs_pooled"], row[f"{name}_se_vs_pooled"] = _clustered_mean(diff, episode_ids)
        out[c] = row
    return out


def _held_out_scores(records: list, folds: int, opts: dict) -> tuple:
    """Per choice, the log-loss and Brier score of every decisive battle of every held-out
    fold (rated on the other folds), and the episode each battle came from."""
    fold_of = np.random.default_rng(opts["seed"]).permutation(len(records)) % folds
    losses = {c: [] for c in CHOICES}
    briers = {c: [] for c in CHOICES}
    episode_ids = []
    for fold in range(folds):
        train = [r for r, f in zip(records, fold_of) if f != fold]
        test = [(i, r) for i, (r, f) in enumerate(zip(records, fold_of)) if f == fold]
        ratings = {c: _ratings(c, train, opts) for c in CHOICES}
        for i, record in test:
            for winner, loser in bt.episode_pairs(record):
                episode_ids.append(i)
                for c in CHOICES:
                    gap = ratings[c].get(winner, bt.ANCHOR) - ratings[c].get(loser, bt.ANCHOR)
                    p = 1.0 / (1.0 + bt.BASE ** (-gap / bt.SCALE))
                    losses[c].append(-math.log(max(p, 1e-15)))
                    briers[c].append((1.0 - p) ** 2)
    return losses, briers, episode_ids


def _clustered_mean(values: np.ndarray, cluster: np.ndarray):
    """Mean of ``values`` and its standard error with the clusters (episodes) as the units."""
    if values.size == 0:
        return None, None
    _, index = np.unique(cluster, return_inverse=True)
    sums = np.bincount(index, values)
    n, g = values.size, sums.size
    if g < 2:
        return float(values.mean()), None
    mean = values.mean()
    sizes = np.bincount(index)
    residual = sums - mean * sizes
    return float(mean), float(math.sqrt(g / (g - 1) * (residual ** 2).sum()) / n)


def validity_from_logs(logdir, folds: int = 5, seed: int = 0) -> tuple[dict, dict]:
    """(:func:`validity` of the logs under ``logdir``, what was skipped reading them: load_records')."""
    records, skipped = load_records(logdir)
    return validity(records, folds, seed), skipped


def format_table(table: dict) -> str:
    lines = [f"{'choice':<18} {'battles':>7} {'log-loss':>8} {'vs pooled (se)':>18} {'Brier':>7} {'vs pooled (se)':>18}"]
    for c, row in table.items():
        def diff(name):
            d, se = row[f"{name}_vs_pooled"], row[f"{name}_se_vs_pooled"]
            return "" if d is None or c == "pooled" else f"{d:+.4f} ({se:.4f})" if se is not None else f"{d:+.4f}"
        lines.append(f"{c:<18} {row['battles']:>7} {row['log_loss']:>8.4f} {diff('log_loss'):>18} "
                     f"{row['brier']:>7.4f} {diff('brier'):>18}")
    return "\n".join(lines)
