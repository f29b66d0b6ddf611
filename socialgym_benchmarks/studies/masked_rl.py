"""MaskablePPO (sb3-contrib) on the masked single-seat view of three games, against fixed opponents.

    nice -n 10 python -m socialgym_benchmarks.studies.masked_rl                 # the full run (3 min 26 s of CPU in docs/integrations/masked.md)
    python -m socialgym_benchmarks.studies.masked_rl --steps 300 --episodes 20  # a smoke run (the test runs this)

For each game in ``GAMES`` (game, learner seat, fixed opponent, config) the script:

1. builds :class:`socialgym_agents.single_agent.MaskedSingleAgentEnv` (``Discrete(n)`` slots, an action
   mask, the numeric ``game_state`` encoding; the opponent is a fixed scripted policy);
2. evaluates the untrained MaskablePPO policy ("before": sampled, so close to uniform over
   the legal slots) on the evaluation seeds;
3. trains it for ``--steps`` environment steps (training episodes draw their seeds from the
   env's generator seeded with ``--seed``: never the evaluation seeds, which start at
   ``EVAL_SEED_BASE``);
4. evaluates the trained policy ("after": greedy) and the per-game heuristic baseline
   (``scripted:heuristic`` of socialgym_agents.baselines in the learner's seat, through the text
   single-seat env) on the same evaluation seeds.

It prints per game the win rate (reward > 0) of before / after / heuristic with Wilson 95%
intervals, the paired difference after - heuristic (the same seeds: mean of per-seed
differences, normal 95% interval) and whether the after and heuristic intervals are apart
at the Bonferroni-corrected level for the number of games (familywise 95%).
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import dataclass

from scipy.stats import norm

from socialgym_agents.base import Request
from socialgym_agents.registry import make_policy
from socialgym_agents.single_agent import make_masked_single_agent_env, make_single_agent_env
from socialgym_benchmarks.ratings import wilson_interval


@dataclass(frozen=True)
class Config:
    steps: int = 60_000          # training environment steps per game
    episodes: int = 400          # evaluation episodes per policy and game (seeds EVAL_SEED_BASE + i)
    seed: int = 0                # MaskablePPO's and the training envs' seed
    n_steps: int = 512           # PPO rollout length between updates
    batch_size: int = 128
    learning_rate: float = 1e-3
    gamma: float = 1.0           # episodic, reward only at the end: no discounting
    ent_coef: float = 0.01


# (game, learner seat, fixed opponent, game config)
GAMES = (
    ("centipede", "player_0", "scripted:random", {}),
    ("prisoners_dilemma", "player_0", "scripted:tit_for_tat", {}),
    ("liars_dice", "player_0", "scripted:heuristic", {"num_players": 2, "dice": 2}),
)
EVAL_SEED_BASE = 1_000_000


def evaluate_model(model, game, seat, opponent, config, seeds, deterministic) -> list[float]:
    """One reward (+1 / 0 / -1) per evaluation seed for the MaskablePPO policy."""
    env = make_masked_single_agent_env(game, seat, opponents=opponent, **config)
    rewards = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        while True:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=deterministic)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                rewards.append(reward)
                break
    return rewards


def evaluate_policy(spec, game, seat, opponent, config, seeds) -> list[float]:
    """One reward per evaluation seed for a scripted policy in the learner's seat (text env)."""
    env = make_single_agent_env(game, seat, opponents=opponent, **config)
    policy = make_policy(spec, seed=0)
    rewards = []
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        key = (env.episode_id, env.learner)
        policy.reset(key, info["seed"])
        while True:
            decision = policy.act_batch([Request(key, obs, info)])[0]
            obs, reward, terminated, truncated, info = env.step(decision.action)
            if terminated or truncated:
                rewards.append(reward)
                break
    return rewards


def win_rate(rewards, z=1.959963984540054) -> tuple[float, float, float]:
    wins = sum(r > 0 for r in rewards)
    lo, hi = wilson_interval(wins, len(rewards), z)
    return wins / len(rewards), lo, hi


def paired_difference(a, b, z=1.959963984540054) -> tuple[float, float, float]:
    """Mean of the per-seed differences of win indicators (a - b) and its normal interval."""
    diffs = [float(x > 0) - float(y > 0) for x, y in zip(a, b, strict=True)]
    mean = statistics.fmean(diffs)
    half = z * statistics.pstdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("inf")
    return mean, mean - half, mean + half


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in vars(Config()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    cfg = Config(**vars(parser.parse_args(argv)))

    import torch
    from sb3_contrib import MaskablePPO
    torch.set_num_threads(1)

    seeds = [EVAL_SEED_BASE + i for i in range(cfg.episodes)]
    z_family = float(norm.ppf(1 - 0.05 / (2 * len(GAMES))))      # Bonferroni over the games
    print(f"MaskablePPO, {cfg.steps} steps per game, {cfg.episodes} evaluation episodes (seeds "
          f"{seeds[0]}..{seeds[-1]}), win = reward > 0; [95% Wilson]; 'apart' at familywise 95% (z={z_family:.2f})")
    rows = []
    for game, seat, opponent, config in GAMES:
        started = time.perf_counter()
        env = make_masked_single_agent_env(game, seat, opponents=opponent, **config)
        env.reset(seed=cfg.seed)
        model = MaskablePPO("MultiInputPolicy", env, n_steps=min(cfg.n_steps, cfg.steps),
                            batch_size=min(cfg.batch_size, cfg.steps), learning_rate=cfg.learning_rate,
                            gamma=cfg.gamma, ent_coef=cfg.ent_coef, seed=cfg.seed, verbose=0, device="cpu")
        before = evaluate_model(model, game, seat, opponent, config, seeds, deterministic=False)
        model.learn(total_timesteps=cfg.steps)
        after = evaluate_model(model, game, seat, opponent, config, seeds, deterministic=True)
        heuristic = evaluate_policy("scripted:heuristic", game, seat, opponent, config, seeds)
        rates = {name: win_rate(r) for name, r in (("before", before), ("after", after), ("heuristic", heuristic))}
        _, after_lo, _ = win_rate(after, z_family)
        _, _, heuristic_hi = win_rate(heuristic, z_family)
        diff = paired_difference(after, heuristic)
        row = {"game": game, "seat": seat, "opponent": opponent, "config": config, "n": cfg.episodes,
               **{name: rate for name, rate in rates.items()}, "after_minus_heuristic": diff,
               "beats_heuristic_apart": after_lo > heuristic_hi, "seconds": time.perf_counter() - started}
        rows.append(row)
        cells = "  ".join(f"{name} {p:6.1%} [{lo:.1%}, {hi:.1%}]" for name, (p, lo, hi) in rates.items())
        print(f"{game} ({seat} vs {opponent}{', ' + str(config) if config else ''}): {cells}  "
              f"after-heuristic {diff[0]:+.1%} [{diff[1]:+.1%}, {diff[2]:+.1%}]  "
              f"beats heuristic, intervals apart: {'yes' if row['beats_heuristic_apart'] else 'no'}  "
              f"({row['seconds']:.0f} s)", flush=True)
    return rows


if __name__ == "__main__":
    main()
