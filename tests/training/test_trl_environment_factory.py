"""TRL's native environment route (socialgym_training.trl_env): a class per game for
``GRPOTrainer(environment_factory=...)``, the embedded model's tool-calling chat template, and
two GRPO steps through TRL's own trainer and tool loop."""
import json

import pytest

pytest.importorskip("trl")

from socialgym_agents.single_agent import SingleAgentEnv   # noqa: E402
from socialgym_training import trl_env   # noqa: E402
from tests.agents.scripted_servers import schema_instance   # noqa: E402


def a_legal_move(info: dict) -> tuple:
    """(action_type, argument) of a legal move of the decision ``info``."""
    listed = info.get("legal_action_list")
    if listed:
        action_type, _, argument = listed[0].partition(" ")
        return action_type, argument
    action = schema_instance(info["action_schema"])
    argument = action.get("argument", "")
    return action["action_type"], " ".join(map(str, argument)) if isinstance(argument, list) else str(argument)


def test_every_game_has_a_class_whose_move_schema_is_its_grammar():
    from transformers.utils import get_json_schema

    classes = trl_env.environment_classes()
    import socialgym_env
    assert sorted(classes) == sorted(g["id"] for g in socialgym_env.list_games())
    for game, Env in classes.items():
        schema = get_json_schema(Env.move)["function"]
        assert schema["name"] == "move" and schema["parameters"]["required"] == ["action_type"]
        env = Env()
        first_view = env.reset(seed=2, prompt=[])               # TRL passes the row's columns
        assert first_view == env.env.game.observe(env.env.learner)["text"]
        # Every action type the decision allows is in the tool's enum.
        assert set(env.info["action_types"]) <= set(schema["parameters"]["properties"]["action_type"]["enum"]), game
        step_before = env.env.game.state.step
        answer = env.move("no_such_move", "")
        assert answer.startswith("Illegal move") and env.invalid_moves == 1 and env.moves == 0, game
        assert env.env.game.state.step == step_before             # an illegal move changes nothing
        answer = env.move(*a_legal_move(env.info))
        assert env.moves == 1 and not answer.startswith("Illegal move"), (game, answer)
        assert env.env.game.state.step > step_before


@pytest.mark.parametrize("game,seat", [("kuhn_poker", 0), ("liars_dice", 1), ("prisoners_dilemma", 1)])
def test_get_reward_is_the_rule_decided_outcome(game, seat):
    """Play the tool to the end, then replay the same moves in a plain SingleAgentEnv: the reward
    is the game's own outcome for the seat, minus the penalty per planted illegal move."""
    Env = trl_env.environment_class(game, seat, "scripted:heuristic", invalid_penalty=0.25)
    env = Env()
    env.reset(seed=5)
    assert env.get_reward() == -1.0                       # unfinished: a forfeit
    env.move("no_such_move")
    moves = []
    while not env.env.done:
        moves.append(" ".join(a_legal_move(env.info)).strip())
        answer = env.move(*a_legal_move(env.info))
    assert answer.startswith("Game over")
    replay = SingleAgentEnv(game, seat, ["scripted:heuristic"])
    replay.reset(seed=5)
    for move in moves:
        *_, info = replay.step(move)
    assert replay.done and env.get_reward() == replay.final_reward() - 0.25 == info["reward"] - 0.25
    assert env.move(*a_legal_move(env.info) if env.info.get("legal_action_list") else ("pass",)) \
        == "The game is over; no more moves."


def test_bad_settings_fail_when_the_class_is_made():
    with pytest.raises(ValueError, match="neither a seat nor a role"):
        trl_env.environment_class("kuhn_poker", seat="player_9")
    with pytest.raises(KeyError):
        trl_env.environment_class("no_such_game")


def test_the_embedded_models_template_is_one_trl_takes_for_tools(tokenizer):
    import copy

    from trl.chat_template_utils import is_chat_template_prefix_preserving, parse_response, supports_tool_calling

    assert not supports_tool_calling(tokenizer)           # SmolLM2's own: what TRL refuses
    tok = trl_env.tool_calling_tokenizer(copy.deepcopy(tokenizer))
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    Env = trl_env.environment_class("kuhn_poker")
    from transformers.utils import get_json_schema
    rendered = tok.apply_chat_template([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                                       tools=[get_json_schema(Env.move)], tokenize=False, add_generation_prompt=True)
    assert rendered.startswith("<|im_start|>system\nS") and '"enum": ["check", "bet"' in rendered \
        and rendered.endswith("<|im_start|>assistant\n")
    # A reply in the template's call format parses (TRL's own parser) into a call of `move`.
    reply = '<tool_call>\n{"name": "move", "arguments": {"action_type": "bet", "argument": ""}}\n</tool_call><|im_end|>'
    prefix = tok.apply_chat_template([{"role": "user", "content": "U"}], tokenize=True, add_generation_prompt=True,
                                     return_dict=False)
    parsed = parse_response(tok, tok.encode(reply, add_special_tokens=False), prefix=prefix)
    (call,) = parsed["tool_calls"]
    assert call["function"] == {"name": "move", "arguments": {"action_type": "bet", "argument": ""}}


def test_grpo_trains_two_steps_through_trls_own_tool_loop(tiny_llama, tmp_path, capsys):
    """The example script, test-sized (tiny model, 2 generations, short completions): TRL's
    GRPOTrainer builds the environments from the factory, plays them, scores them with
    get_reward and takes 2 optimiser steps."""
    out = tmp_path / "run"
    metrics = trl_env.main(["--game", "kuhn_poker", "--steps", "2", "--num_generations", "2",
                            "--max_completion_length", "12", "--max_tool_calls", "2", "--threads", "0",
                            "--out", str(out), "--progress", "false", "--device", "cpu"], preloaded=tiny_llama)
    log = metrics["log"]
    assert [row["step"] for row in log] == [1, 2] and metrics["environment"] == "KuhnPokerEnvironment"
    for row in log:
        # TRL scored each rollout with the environment's get_reward (its own reward column);
        # a random tiny model calls no tool, so every episode is unfinished: the forfeit -1.
        assert row["rewards/KuhnPokerEnvironment/mean"] == row["reward"]
        if row["tools/call_frequency"] == 0:
            assert row["reward"] == -1.0
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert json.loads((out / "metrics.json").read_text())["config"]["game"] == "kuhn_poker"
    # it ends saying what it did and where its outputs are (issue 65: once it ended without a word)
    printed = capsys.readouterr().out
    assert "trained 2 steps in " in printed and "reward " in printed
    assert f"adapter: {out / 'adapter'}" in printed and f"metrics: {out / 'metrics.json'}" in printed


def test_the_tool_loop_says_what_it_has_done_between_optimiser_steps():
    """TRL's bar moves once a step; the environments count moves, illegal ones and finished
    episodes, and say so at most every ``every_s`` seconds (a fake clock)."""
    now = [0.0]
    lines = []
    progress = trl_env.MoveProgress(every_s=10, clock=lambda: now[0], write=lines.append)
    Env = trl_env.environment_class("kuhn_poker", 0, "scripted:heuristic")
    Env.progress = progress
    env = Env()
    env.reset(seed=0)
    env.move("fly")                                   # illegal
    now[0] = 12.0
    env.move("check")                                 # the first seat's legal moves: check, bet
    assert lines == ["tool loop: 2 moves (1 illegal), 0 episodes finished in 12 s"]
    while not env.env.done:
        env.move(env.info["legal_action_list"][0].split(" ")[0])
    assert progress.illegal == 1 and progress.finished == 1 and len(lines) == 1     # under 10 s since: quiet


@pytest.mark.parametrize("argv,message", [(["--game", "nope"], "unknown game 'nope'"),
                                          (["--num_generations", "1"], "at least 2 (a GRPO group)"),
                                          (["--seat", "player_9"], "neither a seat nor a role")])
def test_bad_arguments_are_one_line_and_exit_2(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        trl_env.main(argv + ["--out", str(tmp_path / "run")])
    assert done.value.code == 2 and message in capsys.readouterr().err
