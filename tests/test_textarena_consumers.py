"""TextArena's consumers run their own code on Social Gym's TextArena envs
(socialgym_env.textarena; docs/integrations/textarena.md).

* UnstableBaselines (unstable-rl 0.2.2) and SPIRAL (spiral-rl 0.2.0) are installed without their
  dependencies (vLLM, Ray, torch, tinker) into a cached venv beside this interpreter's packages
  (socialgym_benchmarks/perf/textarena_venv.py); their own loop code runs in a subprocess with
  the unused heavy imports stubbed (tests/textarena_consumers/). Marked ``outside_venv``: the
  first run builds the venv, later runs reuse it.
* OpenEnv's TextArena server (envs/textarena_env in the OpenEnv repository) is on no package
  registry, so it cannot run here: :class:`OpenEnvTextArenaCalls` makes exactly the calls its
  ``server/environment.py`` makes on the TextArena env (cited by line), served by
  openenv-core's own ``create_app`` and driven by openenv-core's own client.
"""
import asyncio
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
import textarena as ta

from socialgym_benchmarks.perf.textarena_venv import ensure_venv
from socialgym_env import textarena as sg_ta

DRIVERS = Path(__file__).parent / "textarena_consumers"
ROOT = Path(__file__).resolve().parents[1]
CONSUMERS = ("unstable-rl==0.2.2", "spiral-rl==0.2.0", "trueskill==0.4.5")


@pytest.fixture(scope="module")
def consumer_python():
    return ensure_venv(no_deps=CONSUMERS)


def run_driver(python, script: str, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(DRIVERS)]))
    done = subprocess.run([str(python), str(DRIVERS / script), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.outside_venv
def test_unstable_baselines_run_game_on_werewolves(consumer_python):
    """UnstableBaselines' run_game on a six-seat game: error_allowance 0, the seat that answers
    nonsense is flagged through game_info[pid]["invalid_move"] (which its trajectories read), the
    others are not, and the rewards are the rules' (one team wins, the other loses)."""
    out = run_driver(consumer_python, "unstable_run_game.py", "SocialGym-Werewolves-v0", 6, 3, 2)
    infos, rewards = out["game_info"], out["final_rewards"]
    assert sorted(infos) == [str(pid) for pid in range(6)] and len(out["trajectories"]) == 6
    assert infos["2"]["invalid_move"] is True and "[juggle]" in out["extracted_actions"]
    assert all(infos[pid]["invalid_move"] is False for pid in infos if pid != "2")
    by_pid = {t["pid"]: t for t in out["trajectories"]}
    assert by_pid[2]["last_invalid"] is True
    assert all(by_pid[pid]["last_invalid"] is False for pid in by_pid if pid != 2)
    wolves = {pid for pid, info in infos.items() if info["role"] == "Werewolf"}
    assert len(wolves) == 2 and {rewards[pid] for pid in wolves}.isdisjoint({rewards[p] for p in rewards if p not in wolves})
    assert out["num_turns"] == len(out["pids"]) == sum(info["turn_count"] for info in infos.values())


@pytest.mark.outside_venv
def test_spiral_two_player_loop_on_kuhn_poker(consumer_python):
    """SPIRAL's coordinator plays both seats to the end: its illegal-move check (the player to
    move did not change) never fires on legal play. Its reward code indexes close()'s answer by
    player, as TextArena 0.6.4 (which spiral-rl pins) returned it; on 0.7.4 close() is
    (rewards, game_info), for every 0.7.4 env: docs/integrations/textarena.md says what to do."""
    for out in run_driver(consumer_python, "spiral_two_player.py", "SocialGym-KuhnPoker-v0-raw", "1,2,3,4,5"):
        check_spiral_episode(out)


def check_spiral_episode(out: dict) -> None:
    assert out["done"] and out["illegal_player_id"] is None and out["close_type"] == "tuple"
    assert sorted(out["rewards"].values()) == [-1.0, 1.0]
    assert out["turns"] == sum(1 for seat in out["seats"] for move in seat["moves"] if move)   # "": a done step
    assert all(info["invalid_move"] is False for info in out["game_info"].values())


# ----------------------------------------------------------------------------- OpenEnv
class OpenEnvTextArenaCalls:
    """The calls OpenEnv's TextArena server (envs/textarena_env/server/environment.py at
    OpenEnv 685de411) makes on the TextArena env, in its order; built by the factory its
    server/app.py builds from TEXTARENA_ENV_ID and TEXTARENA_NUM_PLAYERS (lines 41-60)."""

    def __init__(self):
        self.env_id = os.environ["TEXTARENA_ENV_ID"]
        self.num_players = int(os.environ.get("TEXTARENA_NUM_PLAYERS", "1"))
        self.ta_env = ta.make(env_id=self.env_id)                   # line 113
        self.ta_env.reset(num_players=self.num_players)             # line 127: unseeded

    def reset(self) -> dict:
        env = self.ta_env                                           # lines 141-148: clear the
        while hasattr(env, "env"):                                  # wrappers' histories
            if hasattr(env, "full_observations"):
                env.full_observations = {}
            env = env.env
        self.ta_env.reset(num_players=self.num_players)             # line 150
        return self.observation()

    def step(self, message: str) -> dict:
        done, info = self.ta_env.step(message)                      # line 173
        observation = self.observation()
        observation.update(done=done, reward=self.reward(), turn=self.ta_env.state.turn)   # lines 176, 182
        return observation

    def observation(self) -> dict:
        player_id, messages = self.ta_env.get_observation()         # line 210
        state = self.ta_env.state
        return {"current_player_id": player_id, "text": "".join(map(str, messages)),   # lines 285-310 on a string
                "legal_players": sorted(p for p in state.role_mapping if p >= 0),      # lines 257-262
                "info": dict(state.step_info), "done": False, "reward": 0.0,
                "raw_state": {"turn": state.turn, "game_state": state.game_state,      # lines 325-336
                              "logs": list(state.logs), "rewards": state.rewards, "done": state.done,
                              "role_mapping": state.role_mapping, "game_info": state.game_info,
                              "step_info": state.step_info}}

    def reward(self) -> float:
        rewards = self.ta_env.state.rewards                         # lines 314-323
        if isinstance(rewards, dict):
            return float(rewards.get(self.ta_env.state.current_player_id, rewards.get(0, 0.0)))
        return 0.0


def openenv_app():
    """openenv-core's own create_app over the calls above, with TextArena's models' fields."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class TextArenaAction(Action):
        message: str

    class TextArenaObservation(Observation):
        text: str = ""
        current_player_id: int = 0
        legal_players: List[int] = []
        info: Dict[str, Any] = {}
        raw_state: Dict[str, Any] = {}

    class Server(Environment):
        def __init__(self):
            super().__init__()
            self.calls = OpenEnvTextArenaCalls()

        def reset(self, seed=None, episode_id=None, **kwargs):
            return TextArenaObservation(**self.calls.reset())

        def step(self, action, timeout_s=None, **kwargs):
            observed = self.calls.step(action.message)
            observed.pop("turn")
            return TextArenaObservation(**observed)

        @property
        def state(self):
            return State(step_count=self.calls.ta_env.state.turn)

    return create_app(Server, TextArenaAction, TextArenaObservation, env_name="textarena_env", max_concurrent_envs=1)


def test_openenv_textarena_server_plays_werewolves_driven_by_openenvs_client(monkeypatch):
    from openenv.core.generic_client import GenericEnvClient

    from socialgym_agents.serve.app import BackgroundServer
    monkeypatch.setenv("TEXTARENA_ENV_ID", "SocialGym-Werewolves-v0")
    monkeypatch.setenv("TEXTARENA_NUM_PLAYERS", "6")

    def first_legal(text: str) -> str:
        line = next(line[2:] for line in text.rsplit("Legal actions:", 1)[1].splitlines() if line.startswith("- "))
        offered = re.search(r"one of: ([^,;\n]+)", line)
        return re.sub(r"\b[A-Z]{2,}\b", offered.group(1).strip() if offered else "hello", line.split(" — ")[0])

    async def episode(url):
        async with GenericEnvClient(base_url=url) as client:
            result, steps = await client.reset(), 0
            while not result.done and steps < 500:
                result = await client.step({"message": first_legal(result.observation["text"])})
                steps += 1
            return result, steps

    with BackgroundServer(openenv_app()) as url:
        result, steps = asyncio.run(episode(url))
    raw = result.observation["raw_state"]
    assert result.done and result.reward in (-1.0, 0.0, 1.0) and 0 < steps < 500
    assert raw["done"] and sorted(info["role"] for info in raw["game_info"].values()).count("Werewolf") == 2
    assert all(info["invalid_move"] is False for info in raw["game_info"].values())
    assert result.observation["legal_players"] == list(range(6))
    assert raw["game_state"]["game"] == "werewolves"


def test_openenvs_history_reset_stops_at_our_env():
    """OpenEnv's reset walks ``.env`` down the wrappers (lines 141-148): the TextArena env keeps its
    engine env under another name, so the walk ends on it and clears only the wrappers."""
    env = ta.make("SocialGym-KuhnPoker-v0")
    env.reset(num_players=2, seed=0)
    walked = env
    while hasattr(walked, "env"):
        walked = walked.env
    assert isinstance(walked, sg_ta.SocialGymTextArenaEnv)
