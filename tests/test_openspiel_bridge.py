"""The OpenSpiel bridge: the mapping holds on every history and information state of Kuhn and
Leduc poker, and exploitability / NashConv / expected chips agree with OpenSpiel's own."""
import pytest

from socialgym_agents import openspiel_bridge as bridge

pyspiel = pytest.importorskip("pyspiel")


def test_kuhn_mapping_on_every_information_state():
    counts = bridge.check_mapping("kuhn_poker")
    # 6 deals x (5 terminals + 4 decisions) = 54 histories; 12 information states
    assert counts == {"histories": 54, "decisions": 24, "terminals": 30,
                      "openspiel_information_states": 12, "information_states": 12}


def test_leduc_mapping_on_every_information_state():
    counts = bridge.check_mapping("leduc_poker")
    game = pyspiel.load_game("leduc_poker")
    assert counts["openspiel_information_states"] == 936
    # suits never matter here: 936 OpenSpiel states fold to as many as their suit-free strings
    assert counts["information_states"] < 936 and counts["decisions"] > 0
    assert counts["histories"] == counts["decisions"] + counts["terminals"]
    assert game.num_players() == 2


def test_uniform_exploitability_equals_openspiels():
    from open_spiel.python import policy
    from open_spiel.python.algorithms import exploitability
    for game_id, expected in (("kuhn_poker", 0.4583), ("leduc_poker", 2.3736)):
        game = pyspiel.load_game(game_id)
        reference = exploitability.exploitability(game, policy.UniformRandomPolicy(game))
        assert bridge.exploitability(game_id, bridge.uniform) == pytest.approx(reference, abs=1e-12)
        assert reference == pytest.approx(expected, abs=1e-4)
    assert bridge.nash_conv("kuhn_poker", bridge.uniform) == pytest.approx(2 * 0.458333, abs=1e-5)


def test_cfr_policy_through_the_bridge_keeps_its_exploitability():
    """A policy from OpenSpiel's CFR, read back through this project's observations (keyed by
    info_key), has the exploitability OpenSpiel computes for it: the round trip loses nothing."""
    from open_spiel.python.algorithms import cfr, exploitability
    game = pyspiel.load_game("kuhn_poker")
    solver = cfr.CFRSolver(game)
    for _ in range(20):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    table = {}
    mapping = bridge.GAMES["kuhn_poker"][2]
    for state, ranks, words in bridge.walk("kuhn_poker"):
        if state.is_terminal():
            continue
        env = bridge.replay("kuhn_poker", ranks, words)
        info = env.infos[env.agent_selection]
        probs = average.action_probabilities(state)
        table[bridge.info_key(info)] = {w: probs[mapping[w]] for w in info["legal_action_list"]}
    assert len(table) == 12
    ours = bridge.exploitability("kuhn_poker", bridge.from_table(table))
    assert ours == pytest.approx(exploitability.exploitability(game, average), abs=1e-12)
    assert ours < 0.1


def test_llm_scores_become_a_softmax_over_the_legal_replies():
    """An LLM policy in scoring mode: a backend preferring 'bet'/'call' by log-prob 2 gives
    probability e^2 / (1 + e^2) to them, and the bridge measures that policy."""
    import math

    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.policy import LLMPolicy

    class ScoringBackend:
        kind, model_name = "fake", "fake-scorer"

        def score(self, items, candidates):
            return [[2.0 if ("bet" in c or "call" in c) else 0.0 for c in cands] for cands in candidates]

    policy_fn = bridge.from_llm_scores(LLMPolicy(ScoringBackend(), LLMConfig(mode="score"), "fake"))
    env = bridge.replay("kuhn_poker", ["J", "Q"], [])
    probs = policy_fn(env, "player_0")
    assert probs["bet"] == pytest.approx(math.exp(2) / (1 + math.exp(2)))
    aggressive = {w: (0.0 if w in ("check", "fold") else 2.0) for w in ("check", "bet", "call", "fold")}
    expected = bridge.exploitability("kuhn_poker", lambda e, a: bridge.softmax(
        {w: aggressive[w] for w in e.infos[a]["legal_action_list"]}))
    assert bridge.exploitability("kuhn_poker", policy_fn) == pytest.approx(expected, abs=1e-12)


def test_unknown_game_is_refused():
    with pytest.raises(ValueError, match="kuhn_poker"):
        bridge.exploitability("chess", bridge.uniform)
