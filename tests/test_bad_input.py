"""Junk that once escaped as ValueError / RecursionError / UnicodeEncodeError (audit, issue 11)."""
import json

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


# ---------------------------------------------------------------------- the fuzz (issue 30)
@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_hostile_junk_never_raises_and_records_stay_strict_utf8_json(game_id):
    """Every game x the three invalid-action modes x 41 kinds of junk (testing.hostile_junk):
    0 exceptions besides InvalidActionError in raise mode, records always strict UTF-8 JSON."""
    from socialgym_env.testing import check_hostile_junk, hostile_junk
    kinds = len(hostile_junk())
    counts = check_hostile_junk(game_id, seed=3)
    for mode, tally in counts.items():
        assert sum(tally.values()) == kinds, (mode, tally)
    # Non-strings (more than half the kinds) are never accepted: each mode saw its own outcome.
    assert counts["fallback"]["invalid"] > kinds / 2 and counts["forfeit"]["invalid"] > kinds / 2
    assert counts["raise"]["raised"] > kinds / 2 and counts["raise"]["invalid"] == 0


def test_junk_is_named_briefly_in_the_turn_and_the_reason():
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    env.step(10**5000)
    turn = env.turns[-1]
    assert turn["raw"] == "<int of about 5001 digits>" and "not int" in turn["reason"]
    env.step(b"z" * 1_000_000)
    assert len(env.turns[-1]["raw"]) < 200 and env.turns[-1]["raw"].endswith("...")


def test_a_json_escaped_surrogate_never_reaches_the_board():
    env = socialgym_env.make("survivor")
    env.reset(seed=0)
    env.step('{"action_type": "say", "argument": "half \\ud83d an emoji"}')
    assert env.turns[-1]["valid"] and env.turns[-1]["action"] == "say half \ufffd an emoji"
    assert env.episode_record()["transcript"][-1].endswith("half \ufffd an emoji")


def test_what_callers_attach_is_cleaned_at_the_source():
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0, options={"episode_id": "ep\udcff"})
    env.step("cooperate")
    env.annotate_last_turn(agent_meta={"reply": "r\ud800", "attempts": [{"prompt": "p\udfff"}]})
    record = env.episode_record(policies={"player_0": "pol\udcff"}, extra={"tags": {"k\udcff": "v\udcff"}})
    text = json.dumps(record, ensure_ascii=False)
    text.encode("utf-8")                        # strict: raises on a lone surrogate
    assert "ep\ufffd" in text and "r\ufffd" in text and "p\ufffd" in text and "pol\ufffd" in text
    assert record["tags"] == {"k\ufffd": "v\ufffd"}


@pytest.mark.parametrize("seed", [1.5, 2.0, True, "3", None.__class__, 2**64, -2**64])
def test_reset_refuses_a_seed_that_is_not_a_small_integer(seed):
    env = socialgym_env.make("chicken")
    with pytest.raises((TypeError, ValueError), match="seed must be an integer"):
        env.reset(seed=seed)


def test_reset_takes_numpy_integers_as_ints():
    import numpy as np
    env = socialgym_env.make("chicken")
    env.reset(seed=np.int64(7))
    assert type(env.seed_value) is int and env.episode_record()["seed"] == 7


@pytest.mark.parametrize("game_id", [None, 42, ["werewolves"], b"werewolves"])
def test_make_with_a_non_string_game_id_is_a_type_error(game_id):
    with pytest.raises(TypeError, match="a game id is a string such as 'werewolves'"):
        socialgym_env.make(game_id)


@pytest.mark.parametrize("game", [42, None, object(), int, dict])
def test_register_game_with_neither_class_nor_reference_is_a_type_error(game):
    with pytest.raises(TypeError, match="register_game needs a Game subclass"):
        socialgym_env.register_game(game)


def test_config_errors_never_format_a_huge_value():
    with pytest.raises(socialgym_env.ConfigError, match="about 5001 digits"):
        socialgym_env.make("bargaining", rounds=-10**5000)


def test_spaces_print_on_one_short_line():
    env = socialgym_env.make("werewolves")
    text = str(env.observation_space("player_0"))
    assert text == "Dict('text': Text(1, 200000, charset=<12257 characters>))"
    assert len(repr(env.action_space("player_0"))) < 80


@pytest.mark.parametrize("seed", [1.5, True, -1, 2**64, 10**5000, "7"],
                         ids=["float", "bool", "negative", "2**64", "10**5000", "str"])
def test_env_server_session_refuses_a_bad_seed_in_one_line(seed):
    from socialgym_agents.serve.game_session import BadRequest, GameDefaults, GameSession
    session = GameSession(GameDefaults())
    with pytest.raises(BadRequest, match="seed must be an integer from 0 to 2\\*\\*64 - 1, got") as caught:
        session.reset(seed=seed)
    assert len(str(caught.value)) < 150
    session.reset(seed=2**64 - 1)                  # the largest seed plays
    assert session.seed == 2**64 - 1


# ---------------------------------------------------------------------- the API table (issue 44)
def _deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


class _StrIsAnInt:
    def __str__(self):
        return 5


class _ClaimsToBeStr:
    """Lies about its class (issue 65.8): isinstance(x, str) is True, type(x) is not str."""

    @property
    def __class__(self):
        return str


@pytest.mark.parametrize("action", [_deep_list(200_000), _StrIsAnInt(), 10**5000, _ClaimsToBeStr()],
                         ids=["200k-deep-list", "str-returns-int", "10**5000", "__class__-says-str"])
def test_single_seat_env_takes_any_object_as_an_invalid_action(action):
    """The single-seat env once called str(action): RecursionError, TypeError, ValueError."""
    from socialgym_agents.single_agent import make_single_agent_env
    env = make_single_agent_env("prisoners_dilemma", 0)
    env.reset(seed=0)
    env.step(action)
    assert env.game.invalid_counts["player_0"] == 1


def test_single_seat_raise_mode_keeps_opponents_invalid_moves_inside():
    """invalid_action="raise" is the learner's contract: dead_last seat 5, seed 0, has an
    opponent play an invalid offer, which once escaped the learner's step() after the learner's
    move was applied (and the next step failed with "player_0 is to act")."""
    from socialgym_agents.single_agent import make_single_agent_env
    env = make_single_agent_env("dead_last", 5, invalid_action="raise")
    _, info = env.reset(seed=0)
    for _ in range(400):
        if info.get("legal_action_list"):
            action = info["legal_action_list"][0]
        elif info["phase"] == "final_offer":
            action = '{"action_type": "offer", "argument": [100, 0, 0, 0, 0, 0]}'
        else:
            action = "pass"
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert env.done and sum(not turn["valid"] for turn in env.record["turns"]) >= 1
    with pytest.raises(InvalidActionError):          # the learner's own invalid move still raises
        env.reset(seed=0)
        env.step("not a move")


def test_single_seat_step_before_reset_is_game_over_error():
    from socialgym_agents.single_agent import make_single_agent_env
    from socialgym_env.errors import GameOverError
    with pytest.raises(GameOverError, match="call reset"):
        make_single_agent_env("prisoners_dilemma", 0).step("cooperate")


@pytest.mark.parametrize("index", [True, 0.0, "0", None, [0], _ClaimsToBeStr()],
                         ids=["True", "0.0", "'0'", "None", "[0]", "__class__-says-str"])
def test_step_index_refuses_what_is_not_an_integer_with_value_error(index):
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="an action index must be an integer"):
        env.step_index(index)
    assert env.state.step == 0 and not env.turns


def test_step_index_and_masked_slots_take_numpy_integers():
    import numpy as np
    from socialgym_agents.single_agent import make_masked_single_agent_env
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    env.step_index(np.array(1))
    env.step_index(np.int64(0))
    assert [turn["action"] for turn in env.turns] == ["defect", "cooperate"]
    masked = make_masked_single_agent_env("prisoners_dilemma", 0)
    masked.reset(seed=0)
    slot = int(np.flatnonzero(masked.action_masks())[0])
    masked.step(np.array(slot))                       # what Stable-Baselines3's predict() returns
    assert masked.game.turns[0]["valid"]
    with pytest.raises(ValueError, match="must be an integer"):
        masked.step(np.array([slot]))


@pytest.mark.parametrize("call", ["observe('player_9')", "observe(None)", "observation_text('nobody')",
                                  "grammar('player_9')", "decision_view(3)", "prompt_parts('player_2')"])
def test_an_unknown_seat_is_unknown_agent_error(call):
    from socialgym_env.errors import UnknownAgentError
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    with pytest.raises(UnknownAgentError, match="its seats are player_0 to player_1") as caught:
        eval(f"env.{call}")
    assert isinstance(caught.value, KeyError) and not str(caught.value).startswith('"')


def test_reset_options_are_checked():
    env = socialgym_env.make("prisoners_dilemma")
    with pytest.raises(TypeError, match="reset options are a dict"):
        env.reset(seed=0, options=[1])
    with pytest.raises(TypeError, match="episode_id is a string, got int 5"):
        env.reset(seed=0, options={"episode_id": 5})
    with pytest.warns(UserWarning, match="ignores the unknown option"):
        env.reset(seed=0, options={"bogus": 1})
    env.reset(seed=0, options={"episode_id": "ep-1"})
    assert env.episode_record()["episode_id"] == "ep-1"


@pytest.mark.parametrize("policies", ["x", {"player_0": 5}, ["scripted:random"]])
def test_episode_record_refuses_policies_that_are_not_seat_strings(policies):
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="policies is a dict of seat -> string"):
        env.episode_record(policies=policies)


def test_an_open_ended_count_has_a_bound():
    with pytest.raises(socialgym_env.ConfigError, match="rounds must be from 1 to 1000000"):
        socialgym_env.make("bargaining", rounds=10**30)
    socialgym_env.make("bargaining", rounds=1000)


@pytest.mark.parametrize("game_id", ["A" * 100_000, "socialgym/" + "a" * 300_000 + "-v1"], ids=["100k", "300k-env-id"])
def test_a_huge_game_id_is_answered_at_once_in_a_short_message(game_id):
    import time
    started = time.perf_counter()
    with pytest.raises(socialgym_env.UnknownGameError) as caught:
        socialgym_env.make(game_id)
    assert time.perf_counter() - started < 0.5 and len(str(caught.value)) < 600


@pytest.mark.parametrize("query, message", [
    ("temperature=nan", "expected a finite number"), ("temperature=inf", "expected a finite number"),
    ("timeout=1e999", "expected a finite number"), ("temperature=0.5&temperature=1", "given twice"),
    ("max_new_tokens=999999999999", "at most 131072"), ("top_p=nan", "expected a finite number"),
    ("x" * 100_000 + "=1", "unknown LLM option"), ("seed=" + "9" * 100_000, "expected a number")],
    ids=["temperature-nan", "temperature-inf", "timeout-1e999", "repeated", "max-new-tokens-huge", "top-p-nan",
         "100k-key", "100k-digit-seed"])
def test_llm_options_refuse_non_finite_repeated_and_huge_values(query, message):
    from socialgym_agents.llm.config import parse_options
    with pytest.raises(ValueError, match=message) as caught:
        parse_options(query)
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize("mode", ["fallback", "forfeit", "raise"])
def test_an_object_lying_about_its_class_is_an_invalid_action(mode):
    """``env.step`` once raised TypeError (str.__str__ of a non-str) for an object whose __class__ says str."""
    env = socialgym_env.make("prisoners_dilemma", invalid_action=mode)
    env.reset(seed=0)
    if mode == "raise":
        with pytest.raises(InvalidActionError, match="an action must be a string, not _ClaimsToBeStr"):
            env.step(_ClaimsToBeStr())
        assert not env.turns
        return
    env.step(_ClaimsToBeStr())
    assert not env.turns[-1]["valid"] and "not _ClaimsToBeStr" in env.turns[-1]["reason"]
