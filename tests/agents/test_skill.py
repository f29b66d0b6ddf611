"""openskill (Plackett–Luce) ratings from episode records (socialgym_agents.skill): a planted
skill order is recovered from N-player and team episodes; equal skills give overlapping
intervals; an episode counts once per competitor."""
import numpy as np
import pytest

pytest.importorskip("openskill")

from socialgym_agents.skill import SkillRatings, episode_teams, skill_table   # noqa: E402

PLANTED = {f"policy_{i}": 0.6 * i for i in range(6)}          # log-strengths: policy_5 best


def ffa_record(players, rewards, game="planted_game"):
    seats = [f"player_{i}" for i in range(len(players))]
    return {"game": game, "finished": True, "roster": [{"agent": a, "policy": p} for a, p in zip(seats, players)],
            "rewards": dict(zip(seats, rewards))}


def planted_episodes(strengths, n, seats=4, seed=0):
    """Free-for-all episodes whose finishing order is drawn from the Plackett–Luce model on the
    planted log-strengths (Gumbel-max: sort strength + Gumbel noise); reward = -place."""
    rng = np.random.default_rng(seed)
    names = sorted(strengths)
    for _ in range(n):
        players = list(rng.choice(names, size=seats, replace=False))
        noisy = [strengths[p] + rng.gumbel() for p in players]
        places = np.argsort(np.argsort(-np.array(noisy)))
        yield ffa_record(players, [-float(p) for p in places])


def test_planted_skills_come_back_in_order_and_separate():
    table = skill_table(planted_episodes(PLANTED, 600))
    by_mu = [row["player"] for row in sorted(table, key=lambda r: -r["mu"])]
    assert by_mu == sorted(PLANTED, key=lambda p: -PLANTED[p])
    best, worst = table[0], table[-1]
    assert best["player"] == "policy_5" and worst["player"] == "policy_0"
    assert best["lo"] > worst["hi"]                    # the planted gap is resolved
    assert sum(row["episodes"] for row in table) == 600 * 4


def test_equal_skills_give_overlapping_intervals():
    table = skill_table(planted_episodes({p: 0.0 for p in PLANTED}, 600, seed=1))
    for a in table:
        for b in table:
            assert a["lo"] < b["hi"], (a, b)


def test_team_episodes_rate_the_stronger_team_higher():
    rng = np.random.default_rng(2)
    ratings = SkillRatings()
    for _ in range(300):
        strong, weak = ["policy_4", "policy_5"], ["policy_0", "policy_1"]
        red_wins = rng.random() < 0.8                   # red is the strong team 80% of the time
        roster = [{"agent": f"player_{i}", "policy": p, "team": t}
                  for i, (p, t) in enumerate(zip(strong + weak, ["red", "red", "blue", "blue"]))]
        rewards = {s["agent"]: float((s["team"] == "red") == red_wins) for s in roster}
        assert ratings.update({"game": "planted_game", "finished": True, "roster": roster, "rewards": rewards})
    mu = {row["player"]: row["mu"] for row in ratings.table()}
    assert min(mu["policy_4"], mu["policy_5"]) > max(mu["policy_0"], mu["policy_1"])


def test_self_play_seats_merge_and_a_policy_on_both_teams_is_left_out():
    teams, values = episode_teams(ffa_record(["a", "a", "b"], [1.0, 0.0, 0.25]))
    assert teams == [["a"], ["b"]] and values == [0.5, 0.25]           # a's two seats are one side
    roster = [{"agent": "p0", "policy": "a", "team": "red"}, {"agent": "p1", "policy": "c", "team": "red"},
              {"agent": "p2", "policy": "a", "team": "blue"}, {"agent": "p3", "policy": "b", "team": "blue"}]
    record = {"game": "planted_game", "finished": True, "roster": roster,
              "rewards": {"p0": 1.0, "p1": 1.0, "p2": 0.0, "p3": 0.0}}
    assert episode_teams(record) == ([["b"], ["c"]], [0.0, 1.0])


def test_failed_and_one_sided_episodes_rate_nothing():
    ratings = SkillRatings()
    assert not ratings.update({**ffa_record(["a", "b"], [1.0, 0.0]), "failed": True})
    assert not ratings.update(ffa_record(["a", "a"], [1.0, 0.0]))       # self-play only: no opponent
    assert ratings.table() == []
