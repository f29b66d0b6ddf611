"""The masked view (socialgym_env.masked): PettingZoo's API, seed and parallel tests on every
game, and that a slot plays exactly the legal action its mask promises."""
import json
import random
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, seed_test
from pettingzoo.utils.conversions import aec_to_parallel

import socialgym_env
from socialgym_env.masked import CANNED_MESSAGES, SAMPLED, decision_menu, flatten_state, masked_env, masked_layout

GAMES = socialgym_env.game_ids()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # api_test warns about the Text part of the observation
        yield


@pytest.mark.parametrize("game_id", GAMES)
def test_pettingzoo_api_and_seed(game_id):
    api_test(masked_env(game_id), num_cycles=10)
    seed_test(lambda: masked_env(game_id), num_cycles=5)
    if socialgym_env.game_class(game_id).info.simultaneous:
        parallel_api_test(aec_to_parallel(masked_env(game_id)), num_cycles=10)


def _masked_episode(game_id: str, seed: int):
    """Random masked play; checks each decision's mask against the engine's legal actions."""
    env = masked_env(game_id)
    layout = env.layout
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    talk_slots = 0
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        assert obs["observation"].shape == (layout.size,) and obs["observation"].dtype == np.float32
        mask = obs["action_mask"]
        assert mask.shape == (layout.n,) and mask.any()
        legal = env.env.grammar(agent).enumerate()
        entries = layout.slot_entries(decision_menu(env.env, agent))
        assert sorted(entries) == list(np.flatnonzero(mask))
        if legal is not None and len(legal) <= layout.overflow:
            assert sorted(e.legal_index for e in entries.values()) == list(range(len(legal)))
        slot = int(rng.choice(np.flatnonzero(mask)))
        entry = entries[slot]
        before = len(env.env.turns)
        env.step(slot)
        turn = env.env.turns[before]
        assert turn["valid"], (game_id, slot, turn)
        if entry.legal_index is not None:
            assert turn["action"] == legal[entry.legal_index]
            if slot < len(layout.actions):
                assert layout.actions[slot] == entry.label
        else:
            talk_slots += 1
            assert turn["action"] == entry.text
    return env.episode_record(), talk_slots


@pytest.mark.parametrize("game_id", GAMES)
def test_every_slot_plays_its_legal_action(game_id):
    record, talk = _masked_episode(game_id, 1)
    assert record["finished"] and not any(record["invalid_actions"].values())
    again, _ = _masked_episode(game_id, 1)
    assert json.dumps(record, sort_keys=True) == json.dumps(again, sort_keys=True)
    if socialgym_env.game_class(game_id).info.communication == "free_form":
        assert talk > 0, f"{game_id}: no talk-menu slot was played"


def test_talk_phases_get_the_canned_menu():
    env = socialgym_env.make("werewolves")
    env.reset(seed=0)
    rng = random.Random(0)
    while env.grammar(env.agent_selection).enumerate() is not None:
        env.step(env.grammar(env.agent_selection).sample(rng).text)
    menu = decision_menu(env, env.agent_selection)
    labels = [entry.label for entry in menu]
    assert labels == [f"say {m}" for m in CANNED_MESSAGES] + ["pass"]
    assert all(entry.legal_index is None for entry in menu)


def test_an_unlistable_action_gets_one_seeded_sampled_slot():
    layout = masked_layout("dead_last")
    assert f"offer {SAMPLED}" in layout.actions


def test_catalogue_names_seats_not_display_names():
    layout = masked_layout("werewolves")
    assert {f"vote player_{k}" for k in range(6)} <= set(layout.actions)
    assert not any("Yusuf" in label for label in layout.actions)
    # the same slot means the same action in episodes with different names
    env = masked_env("werewolves")
    seen = set()
    for seed in (0, 1):
        env.reset(seed=seed)
        seen.add(tuple(env.env.state.seat[a].name for a in env.possible_agents))
    assert len(seen) == 2


def test_bad_slots():
    env = masked_env("prisoners_dilemma")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside"):
        env.step(env.layout.n)
    with pytest.raises(ValueError, match="integer"):
        env.step("defect")
    # a slot that is masked out now is an invalid action: the engine's fallback plays
    masked_out = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[0])
    env.step(masked_out)
    assert env.env.turns[-1]["valid"] is False and env.env.turns[-1].get("fallback")


def test_encoding_is_fixed_and_follows_the_state():
    layout = masked_layout("prisoners_dilemma")
    assert len(layout.feature_names) == layout.size
    env = masked_env("prisoners_dilemma")
    env.reset(seed=0)
    first = env.observe("player_1")["observation"]
    defect = layout.actions.index("defect")
    cooperate = layout.actions.index("cooperate")
    env.step(defect)
    env.step(cooperate)
    after = env.observe("player_1")["observation"]
    assert first.shape == after.shape
    names = layout.feature_names
    changed = {names[i] for i in np.flatnonzero(first != after)}
    assert "state/history[-1]/player_0=defect" in changed
    assert "state/history[-1]/player_1=cooperate" in changed
    # a null change: the same state encodes the same
    assert np.array_equal(after, env.observe("player_1")["observation"])


def test_flatten_state_kinds():
    seats = frozenset({"player_0", "player_1"})
    leaves = flatten_state({"bid": [2, 5], "who": "player_1", "word": "cat", "alive": ["player_0"],
                            "none": None, "flag": True}, seats)
    assert ("/bid#len", "num", 2.0) in leaves and ("/bid[-1]", "num", 5.0) in leaves
    assert ("/who", "seat", "player_1") in leaves and ("/word", "str", "cat") in leaves
    assert ("/alive[*]", "bag", "player_0") in leaves and ("/flag", "num", 1.0) in leaves
    assert not any(path == "/none" for path, _, _ in leaves)


def test_resistance_catalogue_has_one_slot_per_team():
    """Widening seat arguments once gave 86 propose slots for 20 teams (repeated seats and
    reordered teams that no mask ever marks): now one slot per set of distinct seats, in seat
    order, and each is legal at some proposal of a random game."""
    import itertools
    from socialgym_env.masked import masked_layout
    layout = masked_layout("resistance")
    proposals = [label.split()[1:] for label in layout.actions if label.startswith("propose ")]
    seats = layout.seats
    teams = [list(team) for size in (2, 3) for team in itertools.combinations(seats, size)]
    assert sorted(proposals) == sorted(teams)
    env = masked_env("resistance")
    seen = set()
    for seed in range(30):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            seen.update(layout.slot_label(int(slot)) for slot in legal if slot < len(layout.actions))
            env.step(int(legal[seed % len(legal)]))
    assert {f"propose {' '.join(team)}" for team in proposals} <= seen
