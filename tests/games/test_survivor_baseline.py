"""The survivor heuristic baseline beats scripted:random: a 3-seat heuristic alliance (all 6 cyclic seatings) vs 3 random players.

Per episode: mean outcome reward of the heuristic seats minus that of the random seats; a
two-sided sign test over the episodes where they differ must give p < 0.01.
"""
from scipy.stats import binomtest

from agents.registry import make_policy
from agents.runner import EpisodeJob, PolicyPool, run_jobs

GAME = "survivor"
SEATS, HEURISTIC_SEATS, EPISODES = 6, 3, 30


def seating(episode):
    seats = ["scripted:random"] * SEATS
    for j in range(HEURISTIC_SEATS):
        seats[(episode + j) % SEATS] = "scripted:heuristic"
    return seats


def test_heuristic_is_dispatched_for_the_game():
    policy = make_policy("scripted:heuristic")
    assert policy._delegate(GAME).policy_id == "scripted:heuristic:survivor"


def test_heuristic_beats_random_sign_test():
    jobs = [EpisodeJob(GAME, 5000 + i, seating(i), config={"log_observations": False}) for i in range(EPISODES)]
    records = run_jobs(jobs, PolicyPool(seed=0))
    better = worse = 0
    for record in records:
        assert not record.get("failed"), record.get("error")
        mine = [record["rewards"][r["agent"]] for r in record["roster"] if r["policy"] == "scripted:heuristic"]
        theirs = [record["rewards"][r["agent"]] for r in record["roster"] if r["policy"] == "scripted:random"]
        diff = sum(mine) / len(mine) - sum(theirs) / len(theirs)
        better += diff > 0
        worse += diff < 0
    print(f"{GAME}: heuristic better in {better}, worse in {worse} of {len(records)} episodes")
    assert better > worse
    assert binomtest(better, better + worse, 0.5).pvalue < 0.01, (better, worse)
