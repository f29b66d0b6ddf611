"""Self-play bookkeeping (socialgym_agents/selfplay.py): seating and roles, the RAE baseline on fixed
rewards, zero-advantage filtering and checkpoint pool sampling."""
import random

import pytest

from socialgym_agents.selfplay import CURRENT, CheckpointPool, RoleBaseline, keep_nonzero, role_key, seat_assignment

TWO = ["player_0", "player_1"]


def test_self_play_puts_the_current_policy_in_every_seat():
    assert seat_assignment(TWO, ["", ""], False, CURRENT, 0) == {"player_0": CURRENT, "player_1": CURRENT}
    agents = [f"player_{i}" for i in range(5)]
    teams = ["spies", "town", "town", "spies", "town"]
    assert set(seat_assignment(agents, teams, True, CURRENT, 3).values()) == {CURRENT}


def test_against_a_checkpoint_the_learner_alternates_seats():
    seatings = [seat_assignment(TWO, ["", ""], False, "step5", e) for e in range(4)]
    assert [s["player_0"] for s in seatings] == [CURRENT, "step5", CURRENT, "step5"]
    assert all(sorted(s.values()) == sorted([CURRENT, "step5"]) for s in seatings)


def test_in_team_games_the_learner_takes_a_whole_team_alternating():
    agents = [f"player_{i}" for i in range(5)]
    deals = [["town", "spies", "town", "town", "spies"], ["spies", "town", "town", "spies", "town"]]
    mine = [[a for a, x in seat_assignment(agents, deals[e % 2], True, "step0", e).items() if x == CURRENT]
            for e in range(4)]
    # the teams take turns by episode (spies, town, ...) whatever the deal puts in seat 0
    assert mine == [["player_1", "player_4"], ["player_1", "player_2", "player_4"],
                    ["player_1", "player_4"], ["player_1", "player_2", "player_4"]]


def test_role_keys_are_the_role_in_role_games_and_the_seat_otherwise():
    assert role_key("werewolves", "player_3", "werewolf", True) == ("werewolves", "werewolf")
    assert role_key("kuhn_poker", "player_1", "player", False) == ("kuhn_poker", "player_1")


def test_rae_baseline_on_fixed_rewards():
    baseline = RoleBaseline(rate=0.5)
    a, b = ("g", "first"), ("g", "second")
    # the batch is scored against the baselines before it (0), then each row moves its role's
    assert baseline.advantages_then_update([(a, 1.0), (b, -1.0), (a, 1.0)]) == [1.0, -1.0, 1.0]
    assert baseline.value(a) == pytest.approx(0.75) and baseline.value(b) == pytest.approx(-0.5)
    assert baseline.advantages_then_update([(a, 1.0), (b, -1.0)]) == pytest.approx([0.25, -0.5])
    # a role that always gets the same reward converges to it: its advantage goes to 0
    for _ in range(60):
        baseline.update([(a, 1.0)])
    assert baseline.advantages([(a, 1.0)])[0] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        RoleBaseline(rate=0.0)


def test_rae_removes_a_planted_role_advantage_that_a_shared_baseline_keeps():
    """Planted effect: the first seat always scores +1 more than the second, whatever the play.
    Per-role baselines absorb it (mean advantage per role -> 0); one shared baseline would leave
    +1 / -1 per role. Null: equal rewards give zero advantages."""
    rng = random.Random(0)
    baseline = RoleBaseline(rate=0.05)
    late = {"first": [], "second": []}
    for step in range(400):
        noise = rng.gauss(0, 0.3)
        rows = [(("g", "first"), 0.5 + noise), (("g", "second"), -0.5 + noise)]
        adv = baseline.advantages_then_update(rows)
        if step >= 300:
            late["first"].append(adv[0])
            late["second"].append(adv[1])
    for role in late:
        assert abs(sum(late[role]) / len(late[role])) < 0.1
    null = RoleBaseline(rate=0.05)
    assert null.advantages([(("g", "x"), 0.0), (("g", "y"), 0.0)]) == [0.0, 0.0]


def test_zero_advantage_rows_are_filtered():
    assert keep_nonzero([0.0, 0.5, -1e-12, -0.25, 0.0]) == [1, 3]
    assert keep_nonzero([0.0, 0.0]) == []


def test_pool_keeps_the_latest_checkpoints_and_samples_as_documented():
    pool = CheckpointPool(capacity=3, self_play=0.25)
    rng = random.Random(1)
    assert {pool.sample(rng) for _ in range(20)} == {CURRENT}        # empty pool: self-play only
    for step in (0, 5, 10, 15):
        pool.add(step, {"weights": step})
    assert pool.names() == ["step5", "step10", "step15"] and pool.get("step10") == {"weights": 10}
    with pytest.raises(KeyError):
        pool.get("step0")                                          # dropped: capacity 3
    draws = [pool.sample(rng) for _ in range(8000)]
    share = draws.count(CURRENT) / len(draws)
    assert abs(share - 0.25) < 0.02
    for name in pool.names():                                      # the rest uniform over the pool
        assert abs(draws.count(name) / len(draws) - 0.25) < 0.02
    only_pool = CheckpointPool(capacity=2, self_play=0.0)
    only_pool.add(1, "a")
    assert {only_pool.sample(rng) for _ in range(50)} == {"step1"}
    with pytest.raises(ValueError):
        CheckpointPool(capacity=2, self_play=1.5)


def test_returns_to_go_and_turn_advantages_on_fixed_rewards():
    from socialgym_agents.selfplay import returns_to_go, turn_advantages
    assert returns_to_go([0.0, 1.0, 0.0, 2.0]) == [3.0, 3.0, 2.0, 2.0]
    assert returns_to_go([1.0, 0.0, 4.0], discount=0.5) == [2.0, 2.0, 4.0]
    # two rows of one role: G = [2, 1] and [0, -1]; position means 1 and 0; the role's sd is 1.118
    rows = [("r", [1.0, 1.0]), ("r", [1.0, -1.0]), ("other", [5.0])]
    out = turn_advantages(rows)
    sd = (sum((g - 0.5) ** 2 for g in (2, 1, 0, -1)) / 4) ** 0.5
    assert out[0] == pytest.approx([1 / sd, 1 / sd]) and out[1] == pytest.approx([-1 / sd, -1 / sd])
    assert out[2] == [0.0]                     # a group whose returns are all equal: nothing to learn


def test_turn_credit_lands_on_the_deciding_turn_and_learns_it_better_than_rae():
    """The planted game (socialgym_benchmarks/studies/selfplay_credit.py): of 8 turns only turn 5's choice
    decides its reward, the others' are coins. Both estimators' credit (corr(advantage, choice))
    is at turn 5 only; the turn-level one's is larger (it leaves out the coins dealt before the
    turn). Learning, each estimator at its own best rate (tuned on other seeds), over the same
    seeds: turn ends nearer P(a) = 1. The null game (no deciding turn) gives no credit anywhere."""
    from socialgym_benchmarks.studies.selfplay_credit import Config, compare, credit
    config = Config(credit_episodes=3000, seeds=12, steps=60)
    rae, turn = credit(config, "rae"), credit(config, "turn")
    for values in (rae, turn):
        assert values[5] > 0.05 and max(abs(v) for t, v in enumerate(values) if t != 5) < 0.06
    assert turn[5] > rae[5] + 0.05
    best = compare(config, [1.0, 3.0, 10.0])["best_rate"]
    assert best["turn"]["final_p_a"] > best["rae"]["final_p_a"] + 0.03 and best["turn"]["final_p_a"] > 0.95
    assert best["turn minus rae, final p_a, paired by seed"]["pairs"] == 12
    null = Config(deciding=-1, credit_episodes=3000)
    assert all(abs(v) < 0.06 for e in ("rae", "turn") for v in credit(null, e))


@pytest.mark.parametrize("argv", [["--deciding", "8"], ["--learning_rates", "fast"], ["--seeds", "0"]])
def test_credit_benchmark_bad_options_are_one_line_and_exit_2(argv, capsys):
    from socialgym_benchmarks.studies import selfplay_credit
    with pytest.raises(SystemExit) as stopped:
        selfplay_credit.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith("selfplay_credit: ") and err.count("\n") == 1
