"""Gymnasium task ``socialgym/HiddenRoleDeduction-v0``: one puzzle, one answer, one step.

Create it with ``gymnasium.make("socialgym/HiddenRoleDeduction-v0", preset="easy",
variant="full")`` after ``import socialgym_env.socialmaze`` (which registers it).

=============  ============================================================
Observation    ``Dict({"text": Text})``: the log from Player 1's seat, the
               role counts, Player 1's told role and the question
Action         ``Text``: the answer, free text or JSON (see ``scoring``)
Reward         1.0 if both the Criminal and Player 1's true role are right,
               else 0.0; always terminates after the single step
Info (reset)   id, n_players, variant, told_role, evidence (no answer)
Info (step)    criminal_correct, role_correct, parsed_criminal, parsed_role,
               reason (why parsing failed, else None), answer, evidence
=============  ============================================================

``reset(seed=s)`` generates a fresh certified instance from ``s`` (same seed, same
puzzle); ``reset(options={"instance": inst})`` evaluates a given
:class:`MazeInstance` (or its ``to_dict()``), e.g. a row of a JSONL data set.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces

from .generator import DEFAULT_MAX_ATTEMPTS, generate_instance
from .instance import CHARSET, DEFAULT_ROUNDS, MazeConfig, MazeInstance
from .scoring import score_answer

ENV_ID = "socialgym/HiddenRoleDeduction-v0"
MAX_ANSWER_CHARS = 4096
# Room for the fixed rules text plus one line per statement (longest line < 64 chars
# for 3-digit player numbers), so any configured size fits the Text space.
_BASE_PROMPT_CHARS = 2048
_CHARS_PER_STATEMENT = 64


class HiddenRoleDeductionEnv(gym.Env[dict[str, str], str]):
    # render_fps only silences the checker: a text puzzle has no frame rate.
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        preset: str = "easy",
        variant: str = "full",
        *,
        n_players: int | None = None,
        n_rounds: int = DEFAULT_ROUNDS,
        n_rumormongers: int | None = None,
        n_lunatics: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}")
        self.config = MazeConfig.from_preset(
            preset,
            variant,
            n_players=n_players,
            n_rounds=n_rounds,
            n_rumormongers=n_rumormongers,
            n_lunatics=n_lunatics,
        )
        self.max_attempts = max_attempts
        self.render_mode = render_mode
        self._max_prompt = self._prompt_bound(self.config)
        self.observation_space = spaces.Dict(
            {"text": spaces.Text(max_length=self._max_prompt, min_length=1, charset=CHARSET)}
        )
        self.action_space = spaces.Text(max_length=MAX_ANSWER_CHARS, min_length=0, charset=CHARSET)
        self.instance: MazeInstance | None = None
        self._done = False

    @staticmethod
    def _prompt_bound(config: MazeConfig) -> int:
        return _BASE_PROMPT_CHARS + _CHARS_PER_STATEMENT * config.n_players * config.n_rounds

    def _obs(self) -> dict[str, str]:
        assert self.instance is not None
        return {"text": self.instance.prompt()}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        super().reset(seed=seed)
        given = (options or {}).get("instance")
        if given is not None:
            inst = given if isinstance(given, MazeInstance) else MazeInstance.from_dict(given)
            if len(inst.prompt()) > self._max_prompt:
                raise ValueError(
                    f"instance {inst.id} has {inst.config.n_players} players x "
                    f"{inst.config.n_rounds} rounds; too large for this env's observation space"
                )
        else:
            # Instance seed drawn from the env's own RNG: reset(seed=s) is reproducible
            # and successive unseeded resets give fresh puzzles.
            instance_seed = int(self.np_random.integers(0, 2**63 - 1))
            inst = generate_instance(self.config, instance_seed, max_attempts=self.max_attempts)
        self.instance = inst
        self._done = False
        info = {
            "id": inst.id,
            "n_players": inst.config.n_players,
            "variant": inst.config.variant,
            "told_role": inst.told_role.value,
            "evidence": inst.evidence,
        }
        return self._obs(), info

    def step(self, action: str) -> tuple[dict[str, str], float, bool, bool, dict[str, Any]]:
        if self.instance is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over (one answer per puzzle); call reset()")
        self._done = True
        result = score_answer(action, self.instance)
        info = result.to_dict()
        info.update(
            answer={"criminal": self.instance.criminal, "role": self.instance.player1_role.value},
            evidence=self.instance.evidence,
            id=self.instance.id,
        )
        return self._obs(), result.reward, True, False, info

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.instance is not None:
            return self.instance.prompt()
        return None


def register() -> None:
    """Register ``ENV_ID`` with Gymnasium; safe to call any number of times."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=HiddenRoleDeductionEnv)
