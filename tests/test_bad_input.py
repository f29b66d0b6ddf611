"""Junk that once escaped as ValueError / RecursionError / UnicodeEncodeError (audit, issue 11)."""
import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.logs import append_episode, read_episodes

JUNK = {
    "a 3000-digit integer": "contribute " + "9" * 3000,
    "a 5000-digit integer (over the length cap)": "contribute " + "9" * 5000,
    "deeply nested JSON": '{"action_type": "contribute", "argument": ' + "[" * 1500 + "]" * 1500 + "}",
    "a bare bracket storm": "[" * 3999,
    "a JSON integer past Python's digit limit": '{"action_type": "contribute", "argument": ' + "7" * 3990 + "}",
    "a lone surrogate": "contribute \udcff",
}


@pytest.mark.parametrize("label", sorted(JUNK))
def test_junk_is_an_invalid_action_in_fallback_and_forfeit_modes(label):
    for mode in ("fallback", "forfeit"):
        env = socialgym_env.make("public_goods", invalid_action=mode)
        env.reset(seed=0)
        agent = env.agent_selection
        env.step(JUNK[label])
        invalid = env.infos[agent]["invalid_action"] if mode == "fallback" else env.turns[-1]
        assert invalid["reason"], (label, mode)
        assert len(invalid["reason"]) < 200


@pytest.mark.parametrize("label", sorted(JUNK))
def test_junk_raises_the_projects_error_in_raise_mode(label):
    env = socialgym_env.make("public_goods", invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError) as caught:
        env.step(JUNK[label])
    assert type(caught.value) is InvalidActionError


def test_reasons_name_the_cap():
    env = socialgym_env.make("public_goods", invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="action too long: 5011 characters, at most 4000"):
        env.step(JUNK["a 5000-digit integer (over the length cap)"])
    with pytest.raises(InvalidActionError, match="JSON nested deeper than 8 levels"):
        env.step(JUNK["deeply nested JSON"])
    with pytest.raises(InvalidActionError, match="got a 3000-digit number"):
        env.step(JUNK["a 3000-digit integer"])


def test_a_lone_surrogate_in_talk_reaches_the_log_as_a_replacement_character(tmp_path):
    env = socialgym_env.make("survivor")
    env.reset(seed=0)
    env.step("say hello \ud83d there")                 # half of an emoji's surrogate pair
    assert env.episode_record()["transcript"][-1].endswith("hello \ufffd there")
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
        else:
            env.step(env.grammar(agent).sample(env.state.rng).text)
    record = env.episode_record(policies={a: "bad\udcffpolicy" for a in env.possible_agents})
    log = tmp_path / "log.jsonl"
    append_episode(log, record)
    append_episode(log, record)                          # a resume writes the next one fine
    back = list(read_episodes(log))
    assert len(back) == 2 and back[0]["roster"][0]["policy"] == "bad\ufffdpolicy"
    assert any("hello \ufffd there" in line for line in back[0]["transcript"])
