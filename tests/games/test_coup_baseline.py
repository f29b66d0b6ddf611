"""The coup heuristic baseline beats random play: one heuristic seat against random seats,
rotated through every seat for each seed (seat-balanced). Random play wins a seat's share
(1/n) at most, draws counting as non-wins; one-sided binomial test, p < 0.01."""
import socialgym_env
from socialgym_agents.runner import PolicyPool

from baseline_support import assert_significantly_better, seat_rotation_wins

GAME, SEEDS = "coup", range(7000, 7000 + 12)


def test_heuristic_beats_random():
    wins, episodes, num_seats = seat_rotation_wins(GAME, SEEDS)
    assert_significantly_better(wins, episodes - wins, alpha=0.01, chance=1 / num_seats)


def test_bluffer_variant_beats_random_and_bluffs():
    from socialgym_agents.baselines.coup import BLUFFER
    pool = PolicyPool(prebuilt={"bluffer": BLUFFER()})
    wins, episodes, num_seats = seat_rotation_wins(GAME, SEEDS, "bluffer", pool)
    assert_significantly_better(wins, episodes - wins, alpha=0.01, chance=1 / num_seats)


def test_honest_never_claims_a_card_it_lacks_and_bluffer_does():
    from socialgym_agents.baselines.coup import BLUFFER, POLICY
    claims = {}
    for label, policy in (("honest", POLICY()), ("bluffer", BLUFFER())):
        lies = 0
        for seed in range(10):
            env = socialgym_env.make(GAME)
            env.reset(seed=seed)
            policy.reset(("e", "x"), seed)
            for agent in env.agent_iter():
                _, _, term, trunc, info = env.last(observe=False)
                if term or trunc:
                    env.step(None)
                    continue
                if agent == "player_0":
                    action = policy.act(env.observe(agent), info, key=("e", agent)).action
                    claim = {"tax": "Duke", "steal": "Captain", "assassinate": "Assassin",
                             "exchange": "Ambassador"}.get(action.split()[0]) if env.state.phase == "turn" else None
                    lies += claim is not None and claim not in env.state.g.hands[agent]
                else:
                    action = "income" if env.state.phase == "turn" else (info.get("legal_action_list") or ["pass"])[-1]
                env.step(action)
        claims[label] = lies
    assert claims["honest"] == 0 and claims["bluffer"] > 0, claims
