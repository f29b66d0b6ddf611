"""Branching rollouts find a planted better action: in the Prisoner's Dilemma against tit-for-tat,
defecting never loses and in the last round it wins outright (tit-for-tat cannot answer)."""
import json

import pytest

from socialgym_training.branching import BranchConfig, branch_decision, branching_pairs
import socialgym_env
from socialgym_agents.runner import PolicyPool

ROUNDS = 3


def test_last_round_defect_is_chosen_against_tit_for_tat():
    pairs = branching_pairs("prisoners_dilemma", ["scripted:random", "scripted:tit_for_tat"], seeds=[0, 1],
                            learner="player_0", branch=BranchConfig(candidates=2, rollouts=6),
                            config={"rounds": ROUNDS})
    assert pairs
    last = [p for p in pairs if p["round"] == ROUNDS]
    assert len(last) == 2                          # one per episode: the last round always separates
    for pair in pairs:
        assert pair["variant"] == "branching" and pair["p_value"] < 0.05
        assert pair["chosen_action"] == "defect" and pair["rejected_action"] == "cooperate"
        assert json.loads(pair["chosen"][0]["content"])["action_type"] == "defect"
        assert pair["chosen_reward"] > pair["rejected_reward"]
        assert pair["prompt"][0]["role"] == "user" and "Imagine you are playing the game as" in pair["prompt"][0]["content"]


def test_branching_leaves_the_env_alone_and_is_deterministic():
    env = socialgym_env.make("prisoners_dilemma", rounds=ROUNDS)
    env.reset(seed=4)
    before = json.dumps(env.episode_record(), sort_keys=True)
    pool = PolicyPool()
    policies = {"player_0": pool.get("scripted:random"), "player_1": pool.get("scripted:tit_for_tat")}
    first = branch_decision(env, "player_0", policies, BranchConfig(candidates=2, rollouts=3), "t", seed=1)
    again = branch_decision(env, "player_0", policies, BranchConfig(candidates=2, rollouts=3), "t", seed=1)
    assert json.dumps(env.episode_record(), sort_keys=True) == before
    assert first == again
    assert {a for a, _, _ in first["candidates"]} == {"cooperate", "defect"}


def test_policy_sampled_candidates_keep_the_replies():
    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.policy import LLMPolicy

    from helpers import SeededChoiceBackend
    llm = LLMPolicy(SeededChoiceBackend(), LLMConfig(max_retries=1), "fake-llm")
    pool = PolicyPool(prebuilt={"fake-llm": llm})
    env = socialgym_env.make("prisoners_dilemma", rounds=1)
    env.reset(seed=2)
    policies = {"player_0": llm, "player_1": pool.get("scripted:tit_for_tat")}
    # The fake answers junk to 15% of sampling seeds (max_retries=1: no re-ask); seed 6 gives 6
    # candidates that all parse under the seat seeds of socialgym_agents.base.seat_seed.
    outcome = branch_decision(env, "player_0", policies, BranchConfig(candidates=6, rollouts=6, source="policy"),
                              "p", seed=6)
    actions = [a for a, _, _ in outcome["candidates"]]
    assert len(actions) == len(set(actions)) >= 2                  # distinct sampled actions
    for action, reply, rewards in outcome["candidates"]:
        assert json.loads(reply)["action_type"] in ("cooperate", "defect") and len(rewards) == 6
    chosen, _, _ = outcome["candidates"][outcome["chosen"]]
    assert json.loads(chosen)["action_type"] == "defect" and outcome["p_value"] < 0.05


def test_max_gap_test_holds_alpha_under_the_null_and_finds_a_planted_gap():
    """Null: every candidate's rewards drawn alike (paired columns with a shared rollout effect);
    the best-worst pair is 'significant' at most alpha of the time. Planted: one candidate is
    +0.5 better and is found as the best nearly always."""
    import numpy as np
    from socialgym_agents.branching import max_gap_test
    rng = np.random.default_rng(0)
    trials, k, m = 400, 4, 8
    false = planted = 0
    for t in range(trials):
        luck = rng.choice([-1.0, 0.0, 1.0], size=m)                  # common to every candidate
        null = np.clip(luck + rng.choice([-1.0, 0.0, 1.0], size=(k, m)), -1, 1)
        false += max_gap_test(null, 500, seed=t)[2] < 0.05
        better = null.copy()
        better[2] = 1.0
        best, _, p = max_gap_test(better, 500, seed=t)
        planted += best == 2 and p < 0.05
    assert false / trials <= 0.05 + 2 * (0.05 * 0.95 / trials) ** 0.5     # alpha within sampling error
    assert planted / trials > 0.75                                        # 0.81 measured
    assert max_gap_test(np.zeros((3, 6)), 100)[2] == 1.0                    # no gap, no evidence


def test_rollouts_share_their_random_numbers():
    """Rock-Paper-Scissors (one round) against a random opponent: rollout m of every candidate
    meets the same opponent move, so each rollout's three rewards are a win, a draw and a loss."""
    env = socialgym_env.make("rock_paper_scissors", rounds=1)
    env.reset(seed=0)
    pool = PolicyPool()
    policies = {"player_0": pool.get("scripted:random"), "player_1": pool.get("scripted:random")}
    outcome = branch_decision(env, "player_0", policies, BranchConfig(candidates=3, rollouts=8), "crn", seed=2)
    columns = list(zip(*[rewards for _, _, rewards in outcome["candidates"]]))
    assert len(columns) == 8
    assert all(sorted(column) == [-1.0, 0.0, 1.0] for column in columns)
    assert len(set(columns)) > 1                                      # the opponent's move varies across m


def test_the_null_benchmark_runs_and_prints_every_setting(capsys):
    from socialgym_benchmarks.studies.branching_null import main
    assert main(["--decisions", "24", "--permutations", "200", "--rounds", "1", "--draws", "300"]) == 0
    out = capsys.readouterr().out
    for setting in ("null: RPS vs uniform random", "planted: RPS vs constant rock", "null: 2 safe + fair gamble",
                    "planted: 2 safe + gamble p=0.85"):
        assert setting in out
    assert "studentised + Holm" in out and out.strip().endswith("PASS")


def test_pair_test_holds_alpha_when_equal_values_differ_in_risk():
    """Two safe candidates (0) and a fair +-1 gamble, K = 3, M = 8: the max-gap test, which takes
    the three as exchangeable, keeps a pair too often; the studentised sign-flip test with Holm
    stays at or below alpha, and still ranks a gamble worth +0.7 over a safe action."""
    import numpy as np

    from socialgym_agents.branching import max_gap_test, pair_test
    rng = np.random.default_rng(7)
    trials, alpha = 1500, 0.05
    false_new = false_old = power = 0
    for t in range(trials):
        table = np.zeros((3, 8))
        table[2] = rng.choice([-1.0, 1.0], 8)
        false_new += pair_test(table)[2] < alpha
        false_old += max_gap_test(table, 300, seed=t)[2] < alpha
        planted = np.zeros((3, 8))
        planted[2] = np.where(rng.random(8) < 0.85, 1.0, -1.0)
        best, _, p = pair_test(planted)
        power += p < alpha and best == 2
    band = 2 * (alpha * (1 - alpha) / trials) ** 0.5
    assert false_new / trials <= alpha and false_old / trials > alpha + band
    assert power / trials > 0.2


def test_holm_and_the_sign_flip_test():
    from socialgym_agents.branching import holm, studentised_sign_flip_p
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert studentised_sign_flip_p([1.0] * 8) == pytest.approx(2 / 256)     # only the all-same-sign patterns
    assert studentised_sign_flip_p([0.0] * 8) == 1.0
    assert 0.3 < studentised_sign_flip_p([1, -1, 2, -2, 1, -1, 0.5, -0.5]) <= 1.0


# ---------------------------------------------------------------------- hidden information
def _kuhn_facing_a_bet(seeds, holding="Q"):
    """(opponent's card, env) for each seed whose deal gives player_0 ``holding``, after check-bet."""
    import socialgym_env
    out = []
    for seed in seeds:
        env = socialgym_env.make("kuhn_poker")
        env.reset(seed=seed)
        mine = next(line for line in env.observation_text("player_0").splitlines() if "Your card" in line)
        if f"Your card: {holding}." not in mine:
            continue
        env.step("check")
        env.step("bet")
        theirs = next(line for line in env.clone().observation_text("player_1").splitlines() if "Your card" in line)
        out.append((theirs.split(":")[1].strip(" ."), env))
    return out


@pytest.mark.parametrize("determinise", ["auto", "off"])
def test_kuhn_label_is_a_property_of_the_information_set(determinise):
    """player_0 holds Q and faces check-bet: with determinisation the label (or "no pair") is the
    same whether the opponent holds J or K; continuing the actual deal it follows their card."""
    from socialgym_agents.branching import BranchConfig, branch_decision
    from socialgym_agents.runner import PolicyPool
    pool = PolicyPool(seed=0)
    policies = {agent: pool.get("scripted:random") for agent in ("player_0", "player_1")}
    branch = BranchConfig(candidates=2, rollouts=8, determinise=determinise)
    labels = {}
    for theirs, env in _kuhn_facing_a_bet(range(40)):
        outcome = branch_decision(env, "player_0", policies, branch, f"{env.episode_id}@{env.state.step}", 0)
        assert not outcome.get("undetermined")
        actions = [c[0] for c in outcome["candidates"]]
        kept = outcome["p_value"] < branch.alpha
        labels.setdefault(theirs, set()).add((actions[outcome["chosen"]], actions[outcome["rejected"]]) if kept else None)
        # chips, not the outcome's sign: a fold costs 1 chip in every rollout, a call wins or loses 2
        rewards = {c[0]: set(c[2]) for c in outcome["candidates"]}
        assert rewards["fold"] == {-1.0} and rewards["call"] <= {2.0, -2.0}
    assert set(labels) == {"J", "K"}
    if determinise == "auto":
        assert len(labels["J"] | labels["K"]) == 1
    else:
        assert labels["J"] == {("call", "fold")} and labels["K"] == {("fold", "call")}


def test_worlds_agree_with_the_seat_and_redeal_the_rest():
    from socialgym_agents.branching import consistent_worlds, view_key
    theirs_by_world = set()
    for _, env in _kuhn_facing_a_bet(range(10))[:1]:
        worlds = consistent_worlds(env, "player_0", 12, view_key(env, "player_0", 0), 50)
        assert len(worlds) == 12
        for world in worlds:
            assert world.observation_text("player_0") == env.observation_text("player_0")
            assert [t["action"] for t in world.turns] == [t["action"] for t in env.turns]
            line = next(l for l in world.observation_text("player_1").splitlines() if "Your card" in l)
            theirs_by_world.add(line.split(":")[1].strip(" ."))
    assert theirs_by_world == {"J", "K"}         # the opponent's card is re-dealt, never the seat's Q
