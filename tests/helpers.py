"""Small helpers shared by the game tests."""
import socialgym_env


def play(game_id: str, moves, seed: int = 0, **config):
    """Create a game with ``invalid_action="raise"``, reset it, and play ``moves`` (a list of
    action strings, one per step in AEC order). Returns the env."""
    env = socialgym_env.make(game_id, invalid_action="raise", **config)
    env.reset(seed=seed)
    for move in moves:
        env.step(move)
    return env


def finish_dead(env):
    """Step None for every agent after the end, as a PettingZoo loop would."""
    for agent in env.agent_iter():
        env.step(None)


def public_lines(env):
    return env.episode_record()["transcript"]
