"""What a game author outside the package relies on (issue 11, item 22)."""
import dataclasses

import pettingzoo
import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, EngineError, UnknownGameError
from tests.test_engine import Probe


def test_the_game_authoring_api_is_exported():
    for name in ("register_game", "unregister_game", "ActionSpec", "Choice", "Int", "Player", "Text", "Word",
                 "Game", "GameInfo", "Phase", "TEAM", "MEDIAN", "TWO_PLAYER", "WINNER_TAKE_ALL", "CUSTOM",
                 "patterns", "env_id"):
        assert hasattr(socialgym_env, name), name
    assert callable(socialgym_env.patterns.vote_phase)


def test_a_builtin_is_replaced_only_when_asked():
    fake = type("FakeChess", (Probe,), {"info": dataclasses.replace(Probe.info, id="chess", version=3)})
    with pytest.raises(ConfigError, match="a game 'chess' is already registered; pass replace=True"):
        socialgym_env.register_game(fake)
    original = socialgym_env.game_class("chess")
    try:
        socialgym_env.register_game(fake, replace=True)
        assert socialgym_env.make("chess").game_info.name == "Probe"
        assert "socialgym/chess-v3" in pettingzoo.aec_registry and "socialgym/chess-v1" not in pettingzoo.aec_registry
    finally:
        socialgym_env.register_game(original, replace=True)
    assert socialgym_env.make("chess").game_info.id == "chess" and "socialgym/chess-v1" in pettingzoo.aec_registry


def test_env_ids_carry_the_version():
    versioned = type("Versioned", (Probe,), {"info": dataclasses.replace(Probe.info, id="versioned", version=2)})
    socialgym_env.register_game(versioned)
    try:
        assert socialgym_env.env_id("versioned") == "socialgym/versioned-v2"
        env = pettingzoo.make("aec", "socialgym/versioned-v2")
        assert env.metadata["name"] == "socialgym/versioned-v2"
        with pytest.raises(UnknownGameError, match="versioned is at version 2 here, not 0"):
            socialgym_env.make("socialgym/versioned-v0")
    finally:
        socialgym_env.unregister_game("versioned")
    assert not any(k.startswith("socialgym/versioned") for k in pettingzoo.aec_registry)


def test_simultaneous_flag_is_checked_against_the_phases():
    liar = type("Liar", (Probe,), {"info": dataclasses.replace(Probe.info, id="liar", simultaneous=True)})
    with pytest.raises(EngineError, match=r"liar: GameInfo.simultaneous=True but phases \['night'\] are not"):
        liar({})


def test_goto_an_unknown_phase_names_the_valid_ones():
    class Lost(Probe):
        info = dataclasses.replace(Probe.info, id="lost")

        def setup(self, state):
            state.goto("nigth")

    socialgym_env.register_game(Lost)
    try:
        with pytest.raises(EngineError, match="lost: no phase 'nigth' .*the phases are night, day"):
            socialgym_env.make("lost").reset(seed=0)
    finally:
        socialgym_env.unregister_game("lost")


def test_an_outside_package_registers_a_heuristic_baseline():
    from socialgym_agents.base import BasePolicy, Decision
    from socialgym_agents.baselines import heuristic_for, register_baseline
    from socialgym_agents.runner import EpisodeJob, run_jobs

    class AlwaysFirst(BasePolicy):
        def act(self, observation, info, key=("", "")):
            return Decision(info["legal_action_list"][0])

    with pytest.raises(TypeError, match="BasePolicy subclass"):
        register_baseline("probe2", object)
    probe2 = type("Probe2", (Probe,), {"info": dataclasses.replace(Probe.info, id="probe2")})
    socialgym_env.register_game(probe2)
    register_baseline("probe2", AlwaysFirst)
    try:
        assert heuristic_for("probe2") is AlwaysFirst
        for seed in range(6):                       # random play would match 1 time in 2 per seed
            env = socialgym_env.make("probe2")
            env.reset(seed=seed)
            first_choice = env.infos[env.agent_selection]["legal_action_list"][0]
            record = run_jobs([EpisodeJob("probe2", seed, ["scripted:heuristic"] * 3)])[0]
            assert [t["action"] for t in record["turns"] if t["phase"] == "night"][0] == first_choice
    finally:
        socialgym_env.unregister_game("probe2")


def test_observe_and_last_before_reset_say_so():
    env = socialgym_env.make("chess")
    with pytest.raises(EngineError, match=r"call reset\(\) before observe\(\)"):
        env.observe("player_0")
    with pytest.raises(EngineError, match=r"call reset\(\) before last\(\)"):
        env.last()
    env.reset(seed=0)
    assert "text" in env.last()[0]
