"""Other libraries' own clients on every game (issue 44): PettingZoo's ``aec_to_parallel`` with
turn caps that fall mid-round, TorchRL's ``PettingZooWrapper`` with ``check_env_specs``, and
PettingZoo's ``performance_benchmark``."""
import random

import pytest
from pettingzoo.utils.conversions import aec_to_parallel

import socialgym_env

SIMULTANEOUS = [g for g in socialgym_env.game_ids() if socialgym_env.game_class(g).info.simultaneous]


@pytest.mark.parametrize("game_id", SIMULTANEOUS)
def test_aec_to_parallel_with_caps_that_fall_mid_round(game_id):
    """A cap that fell between two seats of a simultaneous round once truncated some of them,
    and aec_to_parallel raised "expected agent ... got termination or truncation agent"."""
    seats = len(socialgym_env.make(game_id).possible_agents)
    assert seats >= 2
    for cap in range(1, 2 * seats + 2):        # every position in the first two rounds, and past them
        env = socialgym_env.make(game_id, max_steps=cap)
        parallel = aec_to_parallel(env)
        parallel.reset(seed=cap)
        rng = random.Random(cap)
        rounds = 0
        while parallel.agents:
            actions = {a: env.grammar(a).sample(rng).text for a in parallel.agents}
            _, _, terminations, truncations, _ = parallel.step(actions)
            rounds += 1
            ended = {a for a in terminations if terminations[a] or truncations[a]}
            assert ended in (set(), set(terminations)), (cap, ended)      # all seats end together
        assert rounds >= 1 and env.state.step >= cap
        assert env.state.step % seats == 0 or env.episode_record()["finished"], (cap, env.state.step)
