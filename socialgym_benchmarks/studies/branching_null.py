"""False-pair rate of branching rollouts where every action is worth the same, and their power.

    python -m socialgym_benchmarks.studies.branching_null [--decisions 240] [--candidates 3] [--rollouts 8] [--alpha 0.05] [--draws 4000]

Null: Rock-Paper-Scissors (``--rounds`` rounds) between two uniformly random players. Every
action of the learner (player_0) has expected reward 0, so every preference pair a branching
rule keeps is a false pair. At each of the learner's decisions (``--decisions`` in all, over as
many episodes as that takes) K legal actions are rolled out M times each with common random
numbers (:mod:`socialgym_agents.branching`), and three rules read the same rollouts:

  studentised + Holm   the rule the exports use: each candidate pair's paired differences by a
                       studentised sign-flip test, Holm over the K (K - 1) / 2 pairs, the
                       best-worst pair kept when its adjusted p < alpha (``pair_test``);
  max-gap permutation  the rule it replaced: p of the best-worst gap, labels shuffled within
                       each rollout (valid only when the K rewards of a rollout are exchangeable);
  unpaired MW          an older one: a two-sided Mann-Whitney U test of the best against the
                       worst candidate's M rewards, as if they were independent.

Planted: the same game against ``scripted:constant:rock``: paper beats rock beats scissors this
round (the rest of the game is the same random play), so a kept pair should be in that order
("right order": chosen before rejected in paper, rock, scissors).

Unequal variance (``--draws`` reward tables, no game): K = 3 candidates of equal value and
unequal risk, two safe (0 in every rollout) and one fair gamble (+1 or -1), M = ``--rollouts``;
the max-gap test assumes the three exchangeable and keeps too many pairs. Planted: the gamble
pays +1 with probability 0.85 (worth +0.7): the power of each rule to rank it over a safe one.

The table prints, per rule, the share of decisions (draws) with a kept pair and its 95% Wilson
interval. The false-pair rate of the studentised rule must be at most alpha in both nulls (the
script exits 1 when its interval lies above alpha).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import socialgym_env
from socialgym_agents.branching import BranchConfig, branch_decision, max_gap_test, pair_test, request_for
from socialgym_agents.runner import PolicyPool
from socialgym_benchmarks.ratings import wilson_interval


def mann_whitney_p(best: list, worst: list) -> float:
    from scipy.stats import mannwhitneyu
    if len(set(best) | set(worst)) < 2:
        return 1.0
    return float(mannwhitneyu(best, worst, alternative="two-sided", method="asymptotic").pvalue)


def rules_keep(table, args, seed: int) -> dict:
    """Which rule keeps a (best, worst) pair on one K x M reward table, and that pair."""
    best, worst, p_new = pair_test(table, args.permutations, seed)
    _, _, p_gap = max_gap_test(table, args.permutations, seed)
    return {"pair": (best, worst), "studentised": p_new < args.alpha, "max_gap": p_gap < args.alpha,
            "mann_whitney": mann_whitney_p(list(table[best]), list(table[worst])) < args.alpha}


def run(opponent: str, args) -> dict:
    """Branch at ``args.decisions`` learner decisions against ``opponent``; count the pairs each rule keeps."""
    pool = PolicyPool(seed=args.seed)
    branch = BranchConfig(candidates=args.candidates, rollouts=args.rollouts, alpha=args.alpha,
                          permutations=args.permutations)
    counts = dict.fromkeys(("decisions", "studentised", "max_gap", "mann_whitney", "studentised_right"), 0)
    worth = {"rock paper": 1, "rock rock": 0, "rock scissors": -1}      # against rock, this round
    episode = 0
    while counts["decisions"] < args.decisions:
        env = socialgym_env.make("rock_paper_scissors", rounds=args.rounds)
        env.reset(seed=args.seed + episode)
        policies = {"player_0": pool.get("scripted:random"), "player_1": pool.get(opponent)}
        for agent, policy in policies.items():
            policy.reset((env.episode_id, agent), episode)
        env.skip_dead()
        while env.agents and counts["decisions"] < args.decisions:
            agent = env.agent_selection
            if agent == "player_0":
                outcome = branch_decision(env, agent, policies, branch, f"{episode}@{env.state.step}", episode)
                counts["decisions"] += 1
                table = np.array([rewards for _, _, rewards in outcome["candidates"]])
                kept = rules_keep(table, args, counts["decisions"])
                for rule in ("studentised", "max_gap", "mann_whitney"):
                    counts[rule] += kept[rule]
                best, worst = (outcome["candidates"][i][0] for i in kept["pair"])
                counts["studentised_right"] += kept["studentised"] and \
                    worth.get(f"rock {best}", 0) > worth.get(f"rock {worst}", 0)
            policy = policies[agent]
            decision = policy.act_batch([request_for(env, agent, policy, (env.episode_id, agent))])[0]
            env.step(decision.action)
            env.skip_dead()
        episode += 1
    counts["episodes"] = episode
    return counts


def run_unequal_variance(win_probability: float, args) -> dict:
    """``args.draws`` reward tables: two safe candidates (0) and a gamble (+1 with
    ``win_probability``, else -1), M = ``args.rollouts``; the pairs each rule keeps ("right": the
    gamble chosen over a safe candidate)."""
    rng = np.random.default_rng(args.seed)
    counts = dict.fromkeys(("decisions", "studentised", "max_gap", "mann_whitney", "studentised_right"), 0)
    for draw in range(args.draws):
        table = np.zeros((3, args.rollouts))
        table[2] = np.where(rng.random(args.rollouts) < win_probability, 1.0, -1.0)
        kept = rules_keep(table, args, draw)
        counts["decisions"] += 1
        for rule in ("studentised", "max_gap", "mann_whitney"):
            counts[rule] += kept[rule]
        counts["studentised_right"] += kept["studentised"] and kept["pair"][0] == 2
    return counts


SETTINGS = (("null: RPS vs uniform random", "rps", "scripted:random", True),
            ("planted: RPS vs constant rock", "rps", "scripted:constant:rock", False),
            ("null: 2 safe + fair gamble", "gamble", 0.5, True),
            ("planted: 2 safe + gamble p=0.85", "gamble", 0.85, False))
RULES = (("studentised + Holm", "studentised"), ("max-gap permutation", "max_gap"), ("unpaired MW", "mann_whitney"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=240, help="learner decisions branched per RPS setting")
    parser.add_argument("--draws", type=int, default=4000, help="reward tables per unequal-variance setting")
    parser.add_argument("--candidates", type=int, default=3, help="K legal actions compared per RPS decision")
    parser.add_argument("--rollouts", type=int, default=8, help="M paired rollouts per candidate")
    parser.add_argument("--alpha", type=float, default=0.05, help="nominal level of every rule")
    parser.add_argument("--permutations", type=int, default=2000, help="label shuffles of the max-gap test")
    parser.add_argument("--rounds", type=int, default=3, help="Rock-Paper-Scissors rounds per episode")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed (and the draws' seed)")
    args = parser.parse_args(argv)
    print(f"K={args.candidates} candidates (3 in the gamble settings), M={args.rollouts} paired rollouts, "
          f"alpha={args.alpha}, {args.decisions} decisions per RPS setting ({args.rounds} rounds), "
          f"{args.draws} draws per gamble setting")
    print(f"{'setting':<34} {'rule':<24} {'pairs kept':>11} {'rate':>7}  95% interval")
    verdict = 0
    for label, kind, what, null in SETTINGS:
        counts = run(what, args) if kind == "rps" else run_unequal_variance(what, args)
        n = counts["decisions"]
        rules = [(name, counts[key]) for name, key in RULES]
        if not null:
            rules.insert(1, ("studentised, right order", counts["studentised_right"]))
        for rule, k in rules:
            low, high = wilson_interval(k, n)
            print(f"{label:<34} {rule:<24} {k:>5}/{n:<5} {k / n:>7.3f}  [{low:.3f}, {high:.3f}]")
            if null and rule == "studentised + Holm" and k / n > args.alpha:
                verdict = 1 if low > args.alpha else verdict
                print(f"  the false-pair rate {k / n:.3f} exceeds alpha {args.alpha}"
                      + (" (interval above it)" if low > args.alpha else " (within sampling error)"))
    print("PASS" if verdict == 0 else "FAIL")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
