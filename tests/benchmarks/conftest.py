import sys

import pytest


@pytest.fixture(scope="session")
def toy_spy():
    """Register the toy hidden-role game (in this process only) and return its id."""
    import bench_toy_game
    import socialgym_env
    from socialgym_env import registry
    if hasattr(registry, "register_game"):
        registry.register_game(bench_toy_game.GAME)
    else:  # older registry API: a dotted module path
        sys.modules.setdefault("socialgym_bench_tests.bench_toy_game", bench_toy_game)
        registry.register_module("toy_spy", "socialgym_bench_tests.bench_toy_game")
    assert socialgym_env.game_class("toy_spy") is bench_toy_game.GAME
    return "toy_spy"
