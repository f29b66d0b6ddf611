"""Bounded logs (issue 11, item 16): turns do not repeat the whole observation unless asked
(``log_observations=true``), every observation can be rebuilt exactly by replay, and free texts
(replies, reasons, errors) are clipped to a stated limit."""
import pytest

import socialgym_env
from socialgym_env.actions import MAX_ACTION_CHARS, MAX_LOG_TEXT_CHARS, clip
from socialgym_env.errors import LogFormatError
from socialgym_env.logs import encode_line, replay_observations
from socialgym_env.testing import check_replay

from helpers import BLUFF_GAME_JUNK, random_junk_episode


@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_default_log_has_no_observations_and_replay_rebuilds_each_exactly(game_id):
    check_replay(game_id, junk=BLUFF_GAME_JUNK)
    lean = random_junk_episode(game_id, 3, BLUFF_GAME_JUNK, junk_rate=0.1).episode_record()
    full = random_junk_episode(game_id, 3, BLUFF_GAME_JUNK, junk_rate=0.1, log_observations=True).episode_record()
    assert len(encode_line(lean)) < len(encode_line(full))


def test_replay_that_departs_from_the_log_says_so():
    record = random_junk_episode("prisoners_dilemma", 0, ["junk"]).episode_record()
    record["turns"][1]["agent"] = record["turns"][0]["agent"]
    with pytest.raises(LogFormatError, match="turn 1 was player_0's in the log but player_1's on replay"):
        replay_observations(record)


def test_clip_keeps_short_text_and_says_how_much_it_cut():
    assert clip("short") == "short"
    clipped = clip("x" * 5000)
    assert len(clipped) == MAX_LOG_TEXT_CHARS and clipped.endswith("[4000 more characters cut]")
    assert clip("y" * 50, 40) == "y" * 12 + "... [10 more characters cut]"


def test_an_invalid_action_reason_is_bounded():
    env = socialgym_env.make("prisoners_dilemma", rounds=1)
    env.reset(seed=0)
    env.step("x" * (MAX_ACTION_CHARS * 3))
    turn = env.turns[-1]
    assert turn["fallback"] and len(turn["raw"]) == MAX_ACTION_CHARS
    assert len(turn["reason"]) <= MAX_LOG_TEXT_CHARS
