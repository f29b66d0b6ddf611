"""UnstableBaselines' own ``run_game`` (unstable-rl 0.2.2, unstable/collector.py lines 34-62:
what its Collector runs for every game) on a Social Gym game, with a stub actor in place of its
vLLM actor. Stubbed: ``ray`` (``@ray.remote`` runs in-process, ``ray.get`` is the identity),
``vllm`` (imported by unstable/actor.py, unused here); the ``unstable`` package is entered
without its ``__init__`` (it imports the learners: torch, peft, wandb). Prints a JSON summary.

    python unstable_run_game.py ENV_ID NUM_PLAYERS SEED INVALID_PID
"""
import json
import re
import sys

from stubs import bare_package, stub_ray_and_vllm

stub_ray_and_vllm()
bare_package("unstable")
bare_package("unstable.utils")
from unstable._types import AgentSpec, GameSpec         # noqa: E402
from unstable.collector import run_game                 # noqa: E402

import socialgym_env.textarena                          # noqa: E402,F401  registers SocialGym-*

env_id, num_players, seed, invalid_pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


class StubActor:
    """Answers as a model would, in \\boxed{}: the first legal action of the board in the
    prompt, its argument (NAME, MESSAGE, ...) filled with the first value the line offers
    ("one of: ...") or a word; for the seat on lora path 'invalid' a move no game has."""

    class submit_prompt:
        @staticmethod
        def remote(prompt: str, lora_path: str) -> str:
            if lora_path == "invalid":
                return "I think so. \\boxed{juggle}"
            block = prompt.rsplit("Legal actions:", 1)[1]
            line = next(line[2:] for line in block.splitlines() if line.startswith("- "))
            offered = re.search(r"one of: ([^,;\n]+)", line)
            move = re.sub(r"\b[A-Z]{2,}\b", offered.group(1).strip() if offered else "hello", line.split(" — ")[0])
            return f"Let me think. \\boxed{{{move}}}"


specs = [AgentSpec(pid=pid, kind="checkpoint", collect_data=True,
                   lora_path="invalid" if pid == invalid_pid else f"lora-{pid}") for pid in range(num_players)]
game_information, trajectories = run_game.remote(GameSpec(game_idx=0, env_id=env_id, seed=seed, agent_specs=specs),
                                                 StubActor())
print(json.dumps({
    "final_rewards": {str(k): v for k, v in game_information.final_rewards.items()},
    "game_info": {str(k): v for k, v in game_information.game_info.items()},
    "num_turns": game_information.num_turns,
    "pids": game_information.pid,
    "extracted_actions": game_information.extracted_actions,
    "trajectories": [{"pid": t.pid, "final_reward": t.final_reward, "num_turns": t.num_turns, "steps": len(t.obs),
                      "last_invalid": t.format_feedbacks[-1]["invalid_move"] if t.format_feedbacks else None,
                      "game_info": t.game_info} for t in trajectories],
}))
