"""The coup heuristic baseline beats random play: one heuristic seat against random seats,
rotated through every seat for each seed (seat-balanced). Random play wins a seat's share
(1/n) at most, draws counting as non-wins; one-sided binomial test, p < 0.01."""
from scipy.stats import binomtest

import socialgym_env
from agents.runner import EpisodeJob, PolicyPool, run_jobs

GAME, SEEDS = "coup", 12


def heuristic_wins(spec="scripted:heuristic", pool=None, seeds=SEEDS):
    n = socialgym_env.game_class(GAME).info.num_players
    jobs = []
    for seed in range(seeds):
        for seat in range(n):
            seats = ["scripted:random"] * n
            seats[seat] = spec
            jobs.append(EpisodeJob(GAME, 7000 + seed, seats, config={"log_observations": False}, tags={"seat": seat}))
    records = run_jobs(jobs, pool or PolicyPool())
    wins = 0
    for record in records:
        assert not record.get("failed"), record.get("error")
        wins += record["rewards"][f"player_{record['tags']['seat']}"] > 0
    return wins, len(records), n


def test_heuristic_beats_random():
    wins, total, n = heuristic_wins()
    assert binomtest(wins, total, 1 / n, alternative="greater").pvalue < 0.01, (wins, total)


def test_bluffer_variant_beats_random_and_bluffs():
    from agents.baselines.coup import BLUFFER
    pool = PolicyPool(prebuilt={"bluffer": BLUFFER()})
    wins, total, n = heuristic_wins("bluffer", pool)
    assert binomtest(wins, total, 1 / n, alternative="greater").pvalue < 0.01, (wins, total)


def test_honest_never_claims_a_card_it_lacks_and_bluffer_does():
    from agents.baselines.coup import BLUFFER, POLICY
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
