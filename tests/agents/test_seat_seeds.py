"""Seat randomness depends on (game, seed, seat) only (issue 26): two episodes that differ in
their id (SPaRTan names the arm in it) draw the same scripted moves and LLM sampling seeds."""
from socialgym_agents.base import seat_seed
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs

from helpers import fake_policy

GOOD = '{"action_type": "cooperate", "argument": ""}'


def _moves(record):
    return [(t["agent"], t["action"]) for t in record["turns"]]


def test_scripted_seats_draw_the_same_moves_whatever_the_episode_id():
    seats = ["scripted:random"] * 2
    a, b = run_jobs([EpisodeJob("prisoners_dilemma", 5, seats, {}, "arm-baseline"),
                     EpisodeJob("prisoners_dilemma", 5, seats, {}, "arm-playbook@1234")])
    assert _moves(a) == _moves(b)
    other_seed = run_jobs([EpisodeJob("prisoners_dilemma", 6, seats, {}, "arm-baseline")])[0]
    other_game = seat_seed("chicken", 5, "player_0")
    assert _moves(other_seed) != _moves(a) and other_game != seat_seed("prisoners_dilemma", 5, "player_0")
    assert seat_seed("prisoners_dilemma", 5, "player_0") != seat_seed("prisoners_dilemma", 5, "player_1")


def test_llm_sampling_seeds_follow_the_seat_not_the_episode_id():
    seeds = {}
    for episode_id in ("arm-baseline", "arm-placebo"):
        policy = fake_policy([GOOD] * 10, seed=3)
        pool = PolicyPool(prebuilt={"fake": policy})
        play_episode(EpisodeJob("prisoners_dilemma", 9, ["fake", "fake"], {"rounds": 2}, episode_id), pool)
        seeds[episode_id] = sorted((c.key[1], c.sample_seed) for call in policy.backend.calls for c in call)
    assert seeds["arm-baseline"] == seeds["arm-placebo"]
    assert len({s for _, s in seeds["arm-baseline"]}) == 4          # 2 seats x 2 turns, all distinct
