"""False-pair rate of branching rollouts where every action is worth the same, and their power.

    python -m socialgym_benchmarks.branching_null [--decisions 240] [--candidates 3] [--rollouts 8] [--alpha 0.05]

Null: Rock-Paper-Scissors (``--rounds`` rounds) between two uniformly random players. Every
action of the learner (player_0) has expected reward 0, so every preference pair a branching
rule keeps is a false pair. At each of the learner's decisions (``--decisions`` in all, over as
many episodes as that takes) K legal actions are rolled out M times each with common random
numbers (:mod:`socialgym_agents.branching`), and two rules read the same rollouts:

  max-gap permutation  the rule the exports use: p of the best-worst gap, labels shuffled within
                       each rollout (the selection and the pairing accounted for);
  unpaired MW          the rule it replaced: a two-sided Mann-Whitney U test of the best
                       against the worst candidate's M rewards, as if they were independent.

Planted: the same game against ``scripted:constant:rock``: paper beats rock beats scissors this
round (the rest of the game is the same random play), so a kept pair should be in that order
("right order": chosen before rejected in paper, rock, scissors). The table prints, per rule, the share of decisions with a kept
pair and its 95% Wilson interval. The false-pair rate of the max-gap rule must be at most alpha
(the script exits 1 when its interval lies above alpha).
"""
from __future__ import annotations

import argparse
import sys

import socialgym_env
from socialgym_agents.branching import BranchConfig, branch_decision, request_for
from socialgym_agents.runner import PolicyPool
from socialgym_benchmarks.elo import wilson_interval


def mann_whitney_p(best: list, worst: list) -> float:
    from scipy.stats import mannwhitneyu
    if len(set(best) | set(worst)) < 2:
        return 1.0
    return float(mannwhitneyu(best, worst, alternative="two-sided", method="asymptotic").pvalue)


def run(opponent: str, args) -> dict:
    """Branch at ``args.decisions`` learner decisions against ``opponent``; count the pairs each rule keeps."""
    pool = PolicyPool(seed=args.seed)
    branch = BranchConfig(candidates=args.candidates, rollouts=args.rollouts, alpha=args.alpha,
                          permutations=args.permutations)
    counts = {"decisions": 0, "max_gap": 0, "mann_whitney": 0, "max_gap_right": 0}
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
                best = outcome["candidates"][outcome["chosen"]]
                worst = outcome["candidates"][outcome["rejected"]]
                kept = outcome["p_value"] < args.alpha
                counts["max_gap"] += kept
                right = worth.get(f"rock {best[0]}", 0) > worth.get(f"rock {worst[0]}", 0)
                counts["max_gap_right"] += kept and right
                counts["mann_whitney"] += mann_whitney_p(best[2], worst[2]) < args.alpha
            policy = policies[agent]
            decision = policy.act_batch([request_for(env, agent, policy, (env.episode_id, agent))])[0]
            env.step(decision.action)
            env.skip_dead()
        episode += 1
    counts["episodes"] = episode
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=240, help="learner decisions branched per setting")
    parser.add_argument("--candidates", type=int, default=3, help="K legal actions compared per decision")
    parser.add_argument("--rollouts", type=int, default=8, help="M paired rollouts per candidate")
    parser.add_argument("--alpha", type=float, default=0.05, help="nominal level of both rules")
    parser.add_argument("--permutations", type=int, default=2000, help="label shuffles of the max-gap test")
    parser.add_argument("--rounds", type=int, default=3, help="Rock-Paper-Scissors rounds per episode")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed")
    args = parser.parse_args(argv)
    print(f"K={args.candidates} candidates, M={args.rollouts} paired rollouts, alpha={args.alpha}, "
          f"{args.decisions} decisions per setting, RPS {args.rounds} rounds")
    print(f"{'setting':<34} {'rule':<22} {'pairs kept':>10} {'rate':>7}  95% interval")
    verdict = 0
    for label, opponent in (("null: vs uniform random", "scripted:random"),
                            ("planted: vs constant rock", "scripted:constant:rock")):
        counts = run(opponent, args)
        n = counts["decisions"]
        rules = [("max-gap permutation", counts["max_gap"]), ("unpaired MW", counts["mann_whitney"])]
        if opponent != "scripted:random":
            rules.insert(1, ("max-gap, right order", counts["max_gap_right"]))
        for rule, k in rules:
            low, high = wilson_interval(k, n)
            print(f"{label:<34} {rule:<22} {k:>4}/{n:<5} {k / n:>7.3f}  [{low:.3f}, {high:.3f}]")
            if opponent == "scripted:random" and rule == "max-gap permutation" and k / n > args.alpha:
                verdict = 1 if low > args.alpha else verdict
                print(f"  the false-pair rate {k / n:.3f} exceeds alpha {args.alpha}"
                      + (" (interval above it)" if low > args.alpha else " (within sampling error)"))
    print("PASS" if verdict == 0 else "FAIL")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
