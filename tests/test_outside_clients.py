"""Other libraries' own clients on every game (issue 44): PettingZoo's ``aec_to_parallel`` with
turn caps that fall mid-round, TorchRL's ``PettingZooWrapper`` with ``check_env_specs``, and
PettingZoo's ``performance_benchmark``."""
import random
import warnings

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
        # the cap was reached, or the rules ended the game first (one Colonel Blotto allocation)
        assert rounds >= 1 and (env.state.step >= cap or not env.state.result.truncated)
        assert env.state.step % seats == 0 or env.episode_record()["finished"], (cap, env.state.step)


@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_torchrl_pettingzoo_wrapper_on_the_masked_view(game_id):
    """TorchRL's PettingZooWrapper once failed on the masked view (``new(): invalid data type
    'str'``: the text env's infos); masked_env(..., classic_infos=True) gives PettingZoo-classic
    infos, and check_env_specs passes, then a 100-step rollout through episode ends."""
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    from socialgym_env.masked import masked_env
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # TorchRL warns that it was tested on PettingZoo 1.24.3
        env = PettingZooWrapper(masked_env(game_id, with_text=False, classic_infos=True), use_mask=True,
                                categorical_actions=True)
        check_env_specs(env, seed=0)
        rollout = env.rollout(100, break_when_any_done=False)
    assert rollout.batch_size[0] == 100


@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_pettingzoo_performance_benchmark_runs_on_every_game(game_id, monkeypatch):
    """PettingZoo's own performance_benchmark (random actions from the text action space: the
    invalid-action path), its fixed 5 s cut to 0.25 s by a faster clock."""
    import sys

    import pettingzoo.test  # noqa: F401 -- its performance_benchmark name is the function, not the module
    benchmark_module = sys.modules["pettingzoo.test.performance_benchmark"]

    from socialgym_benchmarks.perf.pettingzoo_benchmark import turns_per_second

    class FastClock:
        start = None

        def time(self):
            import time
            now = time.time()
            self.start = self.start if self.start is not None else now
            return self.start + (now - self.start) * 20

    monkeypatch.setattr(benchmark_module, "time", FastClock())
    assert turns_per_second(game_id) > 0
