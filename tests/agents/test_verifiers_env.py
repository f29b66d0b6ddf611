"""The verifiers environment package (environments/socialgym_verifiers): verifiers' own eval loop
(``run_eval``) plays it against a scripted OpenAI-compatible server on 127.0.0.1."""
import asyncio
import json
import re
import sys
import time

import pytest

pytest.importorskip("verifiers")
pytest.importorskip("fastapi")

from fastapi import FastAPI, Request   # noqa: E402

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.single_agent import SingleAgentEnv   # noqa: E402
from tests.conftest import ROOT   # noqa: E402

try:                                   # installed by `make setup`; a bare checkout still tests it
    import socialgym_verifiers   # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "environments" / "socialgym_verifiers"))

JUNK = "I am not sure what to do"


def scripted_model(replies: list):
    """An OpenAI chat-completions endpoint: junk on a game's first turn (planted invalid move),
    then the first legal move listed in the last user message. Records every reply it sends as
    (model asked for, the conversation's first user message, the move)."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        legal = re.findall(r"Legal moves: (.*)", body["messages"][-1]["content"])
        move = legal[-1].split("; ")[0] if legal else JUNK
        replies.append((body["model"], body["messages"][1]["content"], move))
        return {"id": f"c{len(replies)}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": move}}]}

    return app


def test_verifiers_eval_loop_scores_the_rule_decided_outcome(tmp_path, monkeypatch):
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from socialgym_verifiers import TASKSET_ID, SocialGymConfig, SocialGymEnvConfig

    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "unused")
    replies = []
    taskset = SocialGymConfig(id=TASKSET_ID, game="liars_dice", seat=0, opponents=["scripted:heuristic"],
                              num_tasks=2, first_seed=3, format_weight=0.5)
    with BackgroundServer(scripted_model(replies)) as url:
        config = EvalConfig(env=SocialGymEnvConfig(taskset=taskset), model="scripted", num_rollouts=1,
                            client={"base_url": url + "/v1", "api_key_var": "SCRIPTED_MODEL_KEY"},
                            rich=None, push=False, output_dir=tmp_path)
        episodes = asyncio.run(run_eval(config))

    assert len(episodes) == 2 and all(e.ok for e in episodes)
    for episode in episodes:
        (trace,) = episode.traces
        game = trace.info["game"]
        seed = int(game["episode_id"].split("-")[1])
        # Replay the model's replies for this episode through the engine directly: the reward
        # on the trace is the game's own outcome, not anything the env computed on its own.
        first_prompt = episode.task.data.prompt
        moves = [move for _, prompt, move in replies if prompt == first_prompt]
        env = SingleAgentEnv("liars_dice", 0, ["scripted:heuristic"])
        env.reset(seed=seed)
        for move in moves:
            *_, info = env.step(move)
        assert env.done and len(moves) == game["moves"]
        assert trace.rewards["game_reward"].score == env.final_reward() == info["reward"]
        # One planted invalid move (the junk first reply) out of ``moves``.
        assert game["invalid_actions"] == 1
        assert trace.rewards["format_reward"].score == pytest.approx(1 - 1 / game["moves"])
        assert trace.rewards["format_reward"].weight == 0.5
    written = [json.loads(line) for path in tmp_path.rglob("traces.jsonl") for line in path.read_text().splitlines()]
    assert len(written) == 2                            # verifiers' own results file, one line per episode


def test_load_environment_checks_its_arguments():
    from socialgym_verifiers import SocialGymEnv, load_environment

    env = load_environment(game="prisoners_dilemma", seat=1, opponents="scripted:tit_for_tat", num_tasks=3, rounds=2)
    assert isinstance(env, SocialGymEnv)
    tasks = list(env.taskset)
    assert [t.data.info["seed"] for t in tasks] == [0, 1, 2] and tasks[0].data.info["config"] == {"rounds": 2}
    assert "Prisoner's Dilemma" in tasks[0].data.prompt
    with pytest.raises(ValueError, match="neither a seat nor a role"):
        load_environment(game="prisoners_dilemma", seat="player_7")


def vf_eval(tmp_path, replies: list, args: list) -> list:
    """verifiers' own ``vf-eval`` on this package against the offline model (``args``: the run's
    options); the episodes of its results file."""
    import os
    import shutil
    import subprocess
    if shutil.which("vf-eval") is None:
        pytest.skip("verifiers' vf-eval is not on PATH")
    from socialgym_agents.serve.offline_model import OfflineModel

    # the offline model users try routes with (docs/training/routes.md), on a free port
    with OfflineModel(replies=replies) as server:
        env = {**os.environ, "SCRIPTED_MODEL_KEY": "unused",
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "environments" / "socialgym_verifiers")])}
        done = subprocess.run(["vf-eval", "socialgym-verifiers", *args, "--env.taskset.num-tasks", "1", "-r", "1",
                               "--client.base-url", server.url, "--client.api-key-var", "SCRIPTED_MODEL_KEY",
                               "--no-push", "--output-dir", str(tmp_path)],
                              capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for path in tmp_path.rglob("traces.jsonl") for line in path.read_text().splitlines()]


def test_vf_eval_command_line_takes_a_digit_seat(tmp_path):
    """The docs' own ``vf-eval ... --env.taskset.seat 0``: verifiers' command line passes the seat
    as the text "0", which once failed while loading ("'0' is neither a seat nor a role")."""
    replies = []
    traces = vf_eval(tmp_path, replies, ["--env.taskset.game", "prisoners_dilemma", "--env.taskset.seat", "0",
                                         "--env.taskset.opponents", "scripted:heuristic", "-m", "scripted"])
    assert len(traces) == 1 and replies                  # one episode, played against the model



@pytest.mark.parametrize("game", ["kuhn_poker", "liars_dice"])
def test_every_seat_is_an_agent_of_one_rollout(tmp_path, monkeypatch, game):
    """all_seats: verifiers' eval loop plays every seat through its own agent; seat 1 is pinned
    to another model (an opponent served elsewhere) and frozen. Every request is on a trace,
    each seat's reward is the game's own outcome for it, replayed through the engine."""
    import socialgym_env
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from socialgym_verifiers import TASKSET_ID, SocialGymConfig, SocialGymEnvConfig

    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "unused")
    requests = []
    taskset = SocialGymConfig(id=TASKSET_ID, game=game, all_seats=True, num_tasks=2, first_seed=4)
    with BackgroundServer(scripted_model(requests)) as url:
        client = {"base_url": url + "/v1", "api_key_var": "SCRIPTED_MODEL_KEY"}
        env = SocialGymEnvConfig(taskset=taskset, frozen_seats=[1],
                                 seat_1={"model": "opponent-model", "client": {"type": "eval", **client},
                                         "runtime": {"type": "subprocess"}})
        config = EvalConfig(env=env, model="learner-model", num_rollouts=1, client=client, rich=None, push=False,
                            output_dir=tmp_path)
        episodes = asyncio.run(run_eval(config))

    assert len(episodes) == 2 and all(e.ok for e in episodes)
    seats = socialgym_env.make(game).possible_agents
    on_traces = 0
    for episode in episodes:
        traces = {t.info["game"]["seat"]: t for t in episode.traces}
        assert sorted(traces) == sorted(seats)               # every seat had a decision here
        for seat, trace in traces.items():
            index = seats.index(seat)
            assert trace.agent.name == f"seat_{index}"
            assert trace.agent.trainable == (index != 1)       # the frozen seat is marked
            on_traces += trace.num_turns
        # Replay each seat's replies (told apart by the seat's first view) through the engine.
        replies = {}
        for model, first_view, move in requests:
            replies.setdefault(first_view, []).append((model, move))
        table = socialgym_env.make(game)
        table.reset(seed=episode.task.data.info["seed"])
        first_views, played = {}, {}
        while table.agents:
            seat = table.agent_selection
            if table.terminations[seat] or table.truncations[seat]:
                table.step(None)
                continue
            first_views.setdefault(seat, table.observe(seat)["text"])
            model, move = replies[first_views[seat]][played.get(seat, 0)]
            assert model == ("opponent-model" if seats.index(seat) == 1 else "learner-model")
            played[seat] = played.get(seat, 0) + 1
            table.step(move)
        record = table.episode_record()
        for seat, trace in traces.items():
            assert trace.rewards["game_reward"].score == record["rewards"][seat]
            assert trace.info["game"]["moves"] == played[seat]
            assert trace.info["game"]["invalid_actions"] == 1     # the planted junk first reply
    assert on_traces == len(requests)                          # no request bypassed the traces


def test_an_openai_opponent_is_refused_with_one_clear_message():
    from socialgym_verifiers import load_environment

    with pytest.raises(ValueError, match="would bypass verifiers' recording; play it as a seat agent"):
        load_environment(game="kuhn_poker", opponents="openai:gpt-4o-mini")
    from socialgym_verifiers import SocialGymEnvConfig
    with pytest.raises(ValueError, match="frozen seat 12"):
        SocialGymEnvConfig(taskset={"id": "socialgym-verifiers"}, frozen_seats=[12])


def test_vf_eval_command_line_plays_every_seat(tmp_path):
    """The docs' all-seat command through verifiers' own ``vf-eval``: seat 1 pinned to another
    model name and frozen; the results file holds one trace per seat."""
    requests = []
    (episode,) = vf_eval(tmp_path, requests, ["--env.taskset.game", "kuhn_poker", "--env.taskset.all-seats",
                                              "--env.frozen-seats", "1", "--env.seat-1.model", "opponent",
                                              "-m", "learner"])
    seats = {t["agent"]["name"]: (t["agent"]["trainable"], t["agent"]["config"]["model"]) for t in episode["traces"]}
    assert seats == {"seat_0": (True, "learner"), "seat_1": (False, "opponent")}
    assert {model for model, _, _ in requests} == {"learner", "opponent"}
