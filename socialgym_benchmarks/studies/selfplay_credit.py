"""Turn-level credit against RAE on a planted game where one turn of several decides the reward.

    python -m socialgym_benchmarks.studies.selfplay_credit [--turns 4 --deciding 2 --steps 150 --seeds 40] [--out runs/selfplay_credit]

The two advantage estimators of ``socialgym_training/selfplay/`` (``--advantage rae|turn``; the
functions are :mod:`socialgym_agents.selfplay`'s, the same ones the trainer calls) on a
tabular policy, so the measurement takes seconds:

* **The planted game.** A seat plays ``turns`` binary choices (``a`` or ``b``); after each turn
  the rules deal it a reward. At turn ``deciding`` that reward is +``signal`` for ``a`` and -``signal`` for ``b``;
  at every other turn it is a fair coin, +1 or -1 whatever the choice. The episode's reward is
  the sum. Only the deciding turn's choice matters.
* **The policy**: one logit per turn, P(a) = sigmoid(logit), starting at 1/2.
* **RAE** gives every turn the episode's reward minus the role's moving average
  (:class:`~socialgym_agents.selfplay.RoleBaseline`); **turn** gives each turn the return that
  follows it, minus the batch's mean at that turn position, over the role's standard deviation
  (:func:`~socialgym_agents.selfplay.turn_advantages`).

Two measurements:

1. **Credit.** Under the uniform policy, per turn, the correlation over ``credit_episodes``
   episodes between the turn's advantage and its choice (1 for ``a``): the signal the policy
   gradient gets about that turn's choice. Only the deciding turn should carry any (the others'
   are nulls: their correlation is 0 whatever the estimator).
2. **Learning.** REINFORCE (advantage x grad log-probability of each turn's choice, mean over a
   batch of ``episodes``) for ``steps`` steps, per estimator at each learning rate of
   ``learning_rates``, over ``seeds`` seeds (the same seeds, hence the same coin flips, for both:
   paired). Reported at every rate: the mean P(a) at the deciding turn after the run, the
   median steps until it first passes 0.9, and the difference turn - RAE per seed in final P(a)
   with a paired bootstrap 95% interval and a Wilcoxon signed-rank test (Holm-adjusted over the
   rates). Then each estimator at its own best rate, chosen on seeds other than the reported
   ones, because their scales differ (RAE is in reward units, turn in standard deviations: one
   rate is not the same step for both).

Writes ``--out``/credit.json.
"""
from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from socialgym_agents.selfplay import RoleBaseline, turn_advantages
from socialgym_benchmarks.studies.selfplay_kuhn import parse
from socialgym_env.atomic import atomic_write_text

ROLE = ("planted", "player")


@dataclass
class Config:
    turns: int = 8
    """choices per episode"""
    deciding: int = 5
    """the turn (from 0) whose choice decides its reward; -1: none (the null game, all coins)"""
    signal: float = 0.25
    """the deciding turn's reward: +signal for a, -signal for b (the coins are +-1)"""
    episodes: int = 8
    """episodes per step (one batch)"""
    steps: int = 100
    """REINFORCE steps per run"""
    seeds: int = 40
    """runs per estimator and learning rate (seeds 0..seeds-1 reported; the rate is tuned on others)"""
    learning_rates: str = "0.01,0.03,0.1,0.3,1,3,10"
    """learning rates tried per estimator"""
    credit_episodes: int = 4000
    """episodes of the uniform policy for the credit measurement"""
    baseline_rate: float = 0.05
    """RAE: the role baseline's EMA rate"""
    out: str = "runs/selfplay_credit"
    """output folder (credit.json)"""


def play(logits: list, config: Config, rng: random.Random) -> tuple:
    """One episode: (choices, 1 for a; rewards per turn)."""
    choices, rewards = [], []
    for t, logit in enumerate(logits):
        choice = int(rng.random() < 1.0 / (1.0 + math.exp(-logit)))
        choices.append(choice)
        rewards.append((config.signal if choice else -config.signal) if t == config.deciding
                       else rng.choice((1.0, -1.0)))
    return choices, rewards


def advantages(estimator: str, episodes: list, baseline: RoleBaseline) -> list:
    """Per episode, per turn, the advantage ``estimator`` gives (the trainer's functions)."""
    if estimator == "rae":
        values = baseline.advantages_then_update([(ROLE, sum(rewards)) for _, rewards in episodes])
        return [[value] * len(rewards) for value, (_, rewards) in zip(values, episodes)]
    return turn_advantages([(ROLE, rewards) for _, rewards in episodes])


def credit(config: Config, estimator: str, seed: int = 0) -> list:
    """Per turn, corr(advantage, choice) under the uniform policy."""
    rng = random.Random(seed)
    episodes = [play([0.0] * config.turns, config, rng) for _ in range(config.credit_episodes)]
    per_episode = advantages(estimator, episodes, RoleBaseline(config.baseline_rate))
    return [round(_correlation([a[t] for a in per_episode], [c[t] for c, _ in episodes]), 3)
            for t in range(config.turns)]


def learn(config: Config, estimator: str, learning_rate: float, seed: int) -> list:
    """P(a) at the deciding turn (turn 0 in the null game) after each step of one run."""
    rng = random.Random(seed)
    logits = [0.0] * config.turns
    baseline = RoleBaseline(config.baseline_rate)
    watched = max(config.deciding, 0)
    curve = []
    for _ in range(config.steps):
        episodes = [play(logits, config, rng) for _ in range(config.episodes)]
        gradient = [0.0] * config.turns
        for (choices, _), values in zip(episodes, advantages(estimator, episodes, baseline)):
            for t, (choice, value) in enumerate(zip(choices, values)):
                p = 1.0 / (1.0 + math.exp(-logits[t]))
                gradient[t] += value * (choice - p)        # d log pi(choice) / d logit
        logits = [x + learning_rate * g / config.episodes for x, g in zip(logits, gradient)]
        curve.append(1.0 / (1.0 + math.exp(-logits[watched])))
    return curve


def _correlation(xs: list, ys: list) -> float:
    from scipy.stats import pearsonr
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return 0.0
    return float(pearsonr(xs, ys).statistic)


def _steps_to(curve: list, level: float = 0.9) -> int:
    """The first step (from 1) where the curve passes ``level``; len + 1 if never."""
    return next((i + 1 for i, p in enumerate(curve) if p > level), len(curve) + 1)


def paired_difference(turn: list, rae: list, seed: int = 0) -> dict:
    """turn - rae per seed: mean, paired bootstrap 95% interval, Wilcoxon signed-rank p."""
    import numpy as np
    from scipy.stats import bootstrap, wilcoxon
    diffs = np.array(turn) - np.array(rae)
    if not diffs.any():
        return {"mean": 0.0, "interval": [0.0, 0.0], "p_value": 1.0, "pairs": len(diffs)}
    interval = bootstrap((diffs,), np.mean, n_resamples=5000, confidence_level=0.95,
                         random_state=np.random.default_rng(seed)).confidence_interval
    return {"mean": round(float(diffs.mean()), 4), "interval": [round(float(interval.low), 4),
                                                                 round(float(interval.high), 4)],
            "p_value": round(float(wilcoxon(diffs).pvalue), 6), "pairs": len(diffs)}


def compare(config: Config, rates: list) -> dict:
    """Both estimators at every rate over the same seeds: mean final P(a), median steps to 0.9,
    the paired difference turn - rae (Holm-adjusted over the rates); and each estimator at its
    own best rate, chosen on tuning seeds that are not the reported ones."""
    from socialgym_agents.branching import holm
    tuning_seeds = range(10_000, 10_000 + max(config.seeds // 4, 5))
    curves = {(e, lr): [learn(config, e, lr, seed) for seed in range(config.seeds)]
              for e in ("rae", "turn") for lr in rates}
    out: dict = {"per_rate": {}}
    for lr in rates:
        finals = {e: [c[-1] for c in curves[(e, lr)]] for e in ("rae", "turn")}
        out["per_rate"][str(lr)] = {
            **{e: {"final_p_a": round(sum(finals[e]) / config.seeds, 4),
                   "median_steps_to_0.9": sorted(_steps_to(c) for c in curves[(e, lr)])[config.seeds // 2]}
               for e in ("rae", "turn")},
            "turn minus rae, final p_a, paired by seed": paired_difference(finals["turn"], finals["rae"])}
    diffs = [r["turn minus rae, final p_a, paired by seed"] for r in out["per_rate"].values()]
    for diff, adjusted in zip(diffs, holm([d["p_value"] for d in diffs])):
        diff["p_holm"] = round(adjusted, 6)
    best = {e: max(rates, key=lambda lr: sum(learn(config, e, lr, s)[-1] for s in tuning_seeds))
            for e in ("rae", "turn")}
    finals = {e: [c[-1] for c in curves[(e, best[e])]] for e in ("rae", "turn")}
    out["best_rate"] = {**{e: {"learning_rate": best[e], **out["per_rate"][str(best[e])][e],
                               "mean_curve_every_10": [round(sum(c[i] for c in curves[(e, best[e])]) / config.seeds, 3)
                                                       for i in range(9, config.steps, 10)]}
                           for e in ("rae", "turn")},
                        "turn minus rae, final p_a, paired by seed": paired_difference(finals["turn"], finals["rae"])}
    return out


def main(argv=None) -> dict:
    config = parse(argv, Config, __doc__)
    try:
        rates = [float(x) for x in config.learning_rates.split(",")]
        if config.turns < 1 or not -1 <= config.deciding < config.turns or config.seeds < 1 or config.steps < 1:
            raise ValueError(f"--deciding must be -1 or a turn in 0..{config.turns - 1}; --turns, --seeds and --steps "
                             "at least 1")
    except ValueError as err:
        print(f"selfplay_credit: {err}", file=sys.stderr)
        raise SystemExit(2)
    result = {"config": vars(config), "credit": {e: credit(config, e) for e in ("rae", "turn")},
              "learning": compare(config, rates)}
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "credit.json", json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("credit", "learning")}, indent=1))
    return result


if __name__ == "__main__":
    main()
