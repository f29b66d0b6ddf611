import pytest


@pytest.fixture(scope="module")
def toy_spy():
    """Register the toy hidden-role game (and random play as its heuristic baseline) for one test
    module, then remove both again."""
    import bench_toy_game
    import socialgym_env
    from socialgym_env import registry
    from socialgym_agents import baselines
    from socialgym_agents.scripted import RandomPolicy
    registry.register_game(bench_toy_game.GAME)
    assert socialgym_env.game_class("toy_spy") is bench_toy_game.GAME
    # scripted:heuristic is refused in a game without a baseline; the toy's is random play, said so here.
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(baselines._REGISTERED, "toy_spy", RandomPolicy)
        yield "toy_spy"
    registry.unregister_game("toy_spy")
