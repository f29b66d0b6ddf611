"""The Open Reward Standard server (socialgym_agents.serve.ors_app; issue 64, item 3d), driven by the
ORS SDK's own client on 127.0.0.1: splits and tasks, a whole episode through the ``move`` tool
whose final reward is the seat's rule-decided one (the same as the OpenEnv sessions give for the
same seed and moves), errors as one line (the CLI's bad input: tests/test_cli_bad_input_table.py)."""
import pytest

pytest.importorskip("ors")

from ors.client import ORS, Task   # noqa: E402

import socialgym_env   # noqa: E402
from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.game_session import GameDefaults, GameSession   # noqa: E402
from socialgym_agents.serve.ors_app import ENV_NAME, TASKS_PER_GAME, create_ors_app   # noqa: E402


@pytest.fixture(scope="module")
def environment():
    with BackgroundServer(create_ors_app()) as url:
        with ORS(base_url=url) as client:
            yield client.environment(ENV_NAME)


def play(session, pick=lambda legal, turn: legal[turn % len(legal)], max_moves=400):
    """A whole episode through the move tool; the moves sent and the last output."""
    moves, out, turn = [], None, 0
    while out is None or not out.finished:
        actions = ((out.metadata if out else None) or {}).get("legal_actions") or ["pass"]
        moves.append(pick(actions, turn))
        out = session.call_tool("move", {"action": moves[-1]})
        turn += 1
        assert turn < max_moves
    return moves, out


def test_splits_and_tasks_cover_every_game(environment):
    assert set(environment.list_splits()) == {"train", "test"}
    games = socialgym_env.game_ids()
    assert environment.num_tasks("train") == len(games) * TASKS_PER_GAME
    assert environment.get_task("train", TASKS_PER_GAME + 3).task_spec == {"game": games[1], "seed": 3}
    assert environment.get_task("test", 0).task_spec == {"game": games[0], "seed": 1_000_000}
    (move,) = environment.list_tools()
    assert move.name == "move" and "action" in move.input_schema["properties"]


def test_an_episode_ends_with_the_rule_decided_reward(environment):
    task = Task(ENV_NAME, {"game": "prisoners_dilemma", "seed": 11, "config": {"rounds": 3}})
    with environment.session(task=task) as session:
        prompt = session.get_prompt()[0].text
        first = session.call_tool("move", {"action": "cooperate"})
        moves, out = play(session)
        moves.insert(0, "cooperate")
        after = session.call_tool("move", {"action": "cooperate"})
    assert first.reward == 0.0 and not first.finished and first.metadata["seed"] == 11
    assert out.finished and out.reward in (-1.0, 0.0, 1.0)
    assert after.finished and after.blocks[0].text.startswith("error: the episode is over")
    # the same seed and moves through the OpenEnv sessions' GameSession: the same prompt and reward
    direct = GameSession(GameDefaults())
    result = direct.reset(game="prisoners_dilemma", seed=11, config={"rounds": 3})
    assert result["observation"]["text"] == prompt
    for move in moves:
        result = direct.step({"message": move})
    assert result["done"] and result["reward"] == out.reward


def test_a_task_by_split_and_index_plays_that_game_and_seed(environment):
    with environment.session(split="train", index=2 * TASKS_PER_GAME + 5) as session:
        out = session.call_tool("move", {"action": "x" * 5})       # illegal: the game's fallback plays
    assert out.metadata["seed"] == 5
    assert out.metadata["episode_id"]


def test_a_client_cannot_seat_a_model_opponent(environment):
    task = Task(ENV_NAME, {"game": "prisoners_dilemma", "seed": 1, "opponents": "smollm2"})
    with pytest.raises(Exception, match="operator|model"):
        with environment.session(task=task) as session:
            session.get_prompt()

