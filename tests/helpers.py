"""Small helpers shared by the tests: game helpers (the conformance checks are public, in
``socialgym_env.testing``) and fake LLM backends. Test modules import them from here, not from a
conftest: several folders have a ``conftest`` module, and which one ``import conftest`` finds
depends on which tests are collected together."""
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import socialgym_env
from socialgym_env.env import LOG_SCHEMA
from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import LLMConfig
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_env.testing import grammar_sample, random_junk_episode  # noqa: F401  (re-exported)


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


def decision_infos(game_id: str, seed: int = 0, move=grammar_sample, **config):
    """(env, agent, info) of every decision of one episode; each decision is then played with
    ``move(env, agent, info, rng)`` (by default the action grammar's sample), ``rng`` being
    ``random.Random(seed)``."""
    env = socialgym_env.make(game_id, **config)
    env.reset(seed=seed)
    rng = random.Random(seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last(observe=False)
        if terminated or truncated:
            env.step(None)
            continue
        yield env, agent, info
        env.step(move(env, agent, info, rng))


# Near-miss moves of the three bluffing games (Liar's Dice, Skull, Coup), each junk in the others.
BLUFF_GAME_JUNK = ["", "junk", "liar", "bid 99 9", "bid 0", "flip Nobody", "keep Duke Duke", "reveal Duke",
                   "challenge", "block", '{"action_type": "bid"}', "coup nobody", "place skull", "pass"]


def assert_random_play_pays_winner_take_all(game_id: str, seeds):
    """Random and junk play ends within the cap with one winner (+1, everyone else -1), or all 0
    for a draw, unless the cap cut it short."""
    for seed in seeds:
        env = random_junk_episode(game_id, seed, BLUFF_GAME_JUNK, log_observations=False)
        record = env.episode_record()
        assert record["finished"] and record["steps"] <= env.max_steps, (game_id, seed)
        rewards = sorted(record["rewards"].values())
        winner_alone, draw = [-1.0] * (len(rewards) - 1) + [1.0], [0.0] * len(rewards)
        assert rewards in (winner_alone, draw) or record["truncated"], (game_id, seed, record["rewards"])


def votes(*targets):
    """``vote`` actions in seat order, one per voter."""
    return [f"vote {t}" for t in targets]


def assert_turn_cap_is_a_draw(game_id: str, seed: int):
    """With ``max_steps=2`` two legal moves hit the cap: a truncated draw (all rewards 0), as a
    safety net only, since the game's real cap is far above where its rules end it."""
    env = play(game_id, [], seed=seed, max_steps=2)
    env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    assert env.state.result.truncated and env.state.result.reason == "turn cap reached: draw"
    assert set(env.state.result.rewards.values()) == {0.0}
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.game_info.max_steps >= 100


# ------------------------------------------------------------------ fake LLM backends
class FakeBackend:
    """Answers from a list of replies (or a function of the messages); records every call."""

    kind = "fake"
    model_name = "fake-model"

    def __init__(self, replies=None, fn=None, budget_chars=0):
        self.replies = list(replies or [])
        self.fn = fn
        self.calls = []          # one list of Completions per complete() call
        self.released = []
        self.budget_chars = budget_chars

    def fits(self, messages, share=1.0):
        return not self.budget_chars or sum(len(m["content"]) for m in messages) <= self.budget_chars * share

    def release(self, key):
        self.released.append(key)

    def complete(self, items):
        self.calls.append(list(items))
        out = []
        for item in items:
            if self.fn is not None:
                out.append(self.fn(item))
            else:
                reply = self.replies.pop(0) if self.replies else '{"action_type": "?"}'
                out.append(reply if isinstance(reply, BaseException) else Reply(reply, {"new_tokens": 1}))
        return out


def fake_policy(replies=None, fn=None, policy_id="fake", **options):
    config = LLMConfig(**options)
    return LLMPolicy(FakeBackend(replies, fn), config, policy_id)


class SeededChoiceBackend:
    """Replies cooperate/defect (JSON) from each request's sampling seed; ~15% unusable text."""

    kind = "fake"
    model_name = "fake-model"

    def complete(self, items):
        replies = []
        for item in items:
            rng = random.Random(item.sample_seed)
            if rng.random() < 0.15:
                replies.append(Reply("I am not sure what to do."))
            else:
                action = rng.choice(["cooperate", "defect"])
                replies.append(Reply(json.dumps({"action_type": action, "argument": ""})))
        return replies


EPISODES = 8          # episodes in the training tests' fixed Prisoner's Dilemma log (the pd_log fixture)


def venv_with(wheels, tmp_path) -> tuple[Path, dict]:
    """A fresh venv holding ``wheels`` in its own site-packages: its bin folder and the
    environment to run it in. --system-site-packages: the dependencies come from this
    environment (offline, --no-deps); the wheels go into the venv, ahead of them."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--ignore-installed", *map(str, wheels)], check=True, capture_output=True, text=True, timeout=300)
    return bindir, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}     # only what the venv installed


def unwritable_folder(parent):
    """A folder this process may not create files in, or None: ``parent``/read_only made
    chmod 555, or, for root (whom permissions do not stop), a folder on a read-only file system
    (access(2) says no to root there too)."""
    import os
    from pathlib import Path
    folder = Path(parent) / "read_only"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    if not os.access(folder, os.W_OK):
        return folder
    return next((Path(c) for c in ("/proc/sys", "/sys/kernel") if os.path.isdir(c) and not os.access(c, os.W_OK)),
                None)


def duel(game: str, first: str, second: str, first_wins: bool, index: int) -> dict:
    """A finished two-seat episode record: ``first`` beats ``second`` or loses to it (leaderboard tests)."""
    roster = [{"agent": "player_0", "policy": first, "role": "Player", "team": ""},
              {"agent": "player_1", "policy": second, "role": "Player", "team": ""}]
    rewards = {"player_0": 1.0 if first_wins else -1.0, "player_1": -1.0 if first_wins else 1.0}
    return {"schema": LOG_SCHEMA, "seed": index, "turns": [], "episode_id": f"{game}|{first}~{second}|{index}",
            "game": game, "roster": roster, "finished": True, "rewards": rewards, "scores": rewards}


def require_runtimes(*modules: str) -> None:
    """The `all` extra installs the runtimes and `make setup` builds their exports, so a missing
    one fails these tests in one line rather than skipping them (CI once skipped them silently)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: the `all` extra holds the runtimes (make setup)",
                    pytrace=False)
