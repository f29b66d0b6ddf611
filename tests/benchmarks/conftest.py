import pytest


@pytest.fixture(scope="module")
def toy_spy():
    """Register the toy hidden-role game for one test module, then remove it again."""
    import bench_toy_game
    import socialgym_env
    from socialgym_env import registry
    registry.register_game(bench_toy_game.GAME)
    assert socialgym_env.game_class("toy_spy") is bench_toy_game.GAME
    yield "toy_spy"
    registry.unregister_game("toy_spy")
