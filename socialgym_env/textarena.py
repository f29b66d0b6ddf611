"""Every Social Gym game behind TextArena's interface (``pip install "socialgym[textarena]"``).

Importing this module registers each game in TextArena's registry as ``SocialGym-<Game>-v<N>``
(``SocialGym-Werewolves-v0``, ``SocialGym-KuhnPoker-v0``, ...) with TextArena's own
``register_with_versions``, so ``ta.make`` builds it like any TextArena game::

    import textarena as ta
    import socialgym_env.textarena        # registers the games (TextArena has no plugin discovery)

    env = ta.make("SocialGym-Werewolves-v0")        # LLMObservationWrapper + ActionFormattingWrapper
    env.reset(num_players=6, seed=0)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, step_info = env.step("[pass]")
    rewards, game_info = env.close()

What each part of TextArena's interface (0.7.4, ``textarena/core.py`` and ``textarena/state.py``)
holds here:

* ``env.state`` is TextArena's own state class: ``TwoPlayerState`` for a two-seat game,
  ``TeamMultiPlayerState`` for a team game, else ``FFAMultiPlayerState``. The game itself runs
  in this package's engine (``socialgym_env.make``); the state holds TextArena's bookkeeping
  (current player, observations, turn counts, error allowance, rewards, ``game_info``) and a
  public, JSON-able ``game_state`` (game, phase, round).
* Observations are TextArena message tuples ``(from_id, text, ObservationType)``: the seat's
  introduction (game, who it is, its goal) is ``PROMPT``; every board line a seat receives is
  ``GAME_ACTION_DESCRIPTION`` when a player's action made it (a line of talk, a vote, a bid:
  the game's rendering of the action, naming the player, as the other seats see it) and
  ``GAME_MESSAGE`` when the moderator posted it; at each decision the acting seat gets its
  private information, status, instructions and legal actions as ``GAME_BOARD``; a refused
  move is answered with ``GAME_ADMIN``. All come from ``GAME_ID``: the text names the speaker.
* Actions are text; TextArena's bracket convention is understood: tried in turn are the inside
  of one pair of brackets around the whole action, the action as sent, then the inside of each
  ``[...]``, so ``"[vote Ines]"``, ``"I vote [vote Ines]"`` and ``"vote Ines"`` are one move.
* Invalid moves go through TextArena's error allowance (``state.error_allowance``, 1 by default;
  UnstableBaselines and SPIRAL set it to 0): while it lasts the seat is told why
  (``GAME_ADMIN``) and moves again; when it runs out the engine's fallback move is played for
  the seat (the phase's declared fallback, else a legal move drawn from the episode's RNG), the
  turn is logged as invalid, and ``game_info[pid]["invalid_move"]`` is set. The game goes on:
  unlike TextArena's two-player state, an invalid move never decides the game here -- the
  outcome stays the rules' (TextArena's ``set_invalid_move`` ends a two-player game at once).
* ``close()`` returns ``(rewards, game_info)``: each seat's outcome reward by the game's rule
  (in {-1, 0, +1}), and ``game_info[pid]`` with ``role`` (the seat's true role in a hidden-role
  game, else ``"Player <pid>"``), ``invalid_move``, ``turn_count`` and ``reason``.
* ``reset(num_players, seed)``: the same seed and the same actions give the same transcript.
  The game draws from its own RNG, seeded by ``seed`` (an unseeded episode draws one); unlike
  TextArena's states, the global ``random`` module is not reseeded.

Variants (TextArena's ``register_with_versions``): the plain id wraps the env in TextArena's
default wrappers (``LLMObservationWrapper``: the whole history as one string;
``ActionFormattingWrapper``: an action without brackets gets them); ``-train`` uses
``GameMessagesAndCurrentBoardObservationWrapper`` instead (the prompt, every board line and
only the latest board: a shorter, non-repeating context, as TextArena's own board games train);
``-raw`` has no wrapper (the observation is the list of new message tuples).
"""
from __future__ import annotations

import re
from typing import Optional

try:
    import textarena as ta
    from textarena.envs.registration import ENV_REGISTRY, register_with_versions
    from textarena.wrappers import (ActionFormattingWrapper, GameMessagesAndCurrentBoardObservationWrapper,
                                    LLMObservationWrapper)
except ImportError as err:      # pragma: no cover - the message is the point
    raise ImportError("socialgym_env.textarena needs TextArena: pip install 'socialgym[textarena]' "
                      f"(textarena 0.7.x) -- {err}") from err

from .actions import ActionError, clip
from .game import TEAM
from .registry import game_class, game_ids, make
from .views import render_message, sanitize

__all__ = ["ANSWER_FORMAT", "SocialGymTextArenaEnv", "env_classes", "register_games", "textarena_id"]

ANSWER_FORMAT = "Answer with one action in square brackets, e.g. [pass] or [vote Ines]."
WRAPPERS = {"default": [LLMObservationWrapper, ActionFormattingWrapper],
            "-train": [GameMessagesAndCurrentBoardObservationWrapper, ActionFormattingWrapper]}
_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
Type = ta.ObservationType


def textarena_id(game_id: str) -> str:
    """The TextArena id of a game: ``werewolves`` -> ``SocialGym-Werewolves-v0``."""
    info = game_class(game_id).info
    return "SocialGym-" + "".join(part.capitalize() for part in game_id.split("_")) + f"-v{info.version}"


def state_class(game_id: str, num_players: int) -> type:
    """TextArena's state class that fits the game: two seats, teams, or every seat for itself."""
    if num_players == 2:
        return ta.TwoPlayerState
    return ta.TeamMultiPlayerState if game_class(game_id).info.outcome == TEAM else ta.FFAMultiPlayerState


def action_candidates(action: str) -> list[str]:
    """The texts an action may mean, in the order tried: the inside of one bracket pair around
    the whole (``ActionFormattingWrapper``'s), the text as sent (talk may hold brackets), then
    each bracketed part (``"I vote [vote Ines]"``)."""
    text = action.strip()
    whole = [text[1:-1].strip()] if text.startswith("[") and text.endswith("]") else []
    parts = [inner.strip() for inner in _BRACKETED.findall(text)]
    return list(dict.fromkeys(candidate for candidate in whole + [text] + parts if candidate))


class SocialGymTextArenaEnv(ta.Env):
    """One Social Gym game as a TextArena ``Env`` (see the module's docstring).
    ``config``: the game's options, as ``socialgym_env.make`` takes them (``ta.make(id, **config)``
    passes them here)."""

    game_id: str = ""

    def __init__(self, **config):
        if not self.game_id:
            raise TypeError("use a game's class (env_classes()[game_id]) or ta.make('SocialGym-...')")
        self.config = config
        self.game_env = None  # the engine's AEC env of the episode (not named env: TextArena's wrappers unwrap .env)

    # ------------------------------------------------------------------ episode
    def reset(self, num_players: int, seed: Optional[int] = None):
        # a seat count the game is not played by is the registry's ConfigError (a ValueError)
        self.game_env = env = make(self.game_id, **{**self.config, "num_players": num_players})
        env.reset(seed=seed)
        self.pids = {agent: pid for pid, agent in enumerate(env.possible_agents)}
        game_state = env.state
        roles = ({pid: game_state.role(agent) for agent, pid in self.pids.items()}
                 if env.game_info.roles else None)
        self.state = state_class(self.game_id, num_players)(num_players=num_players, seed=None)
        self.state.reset(game_state=self._public_state(), player_prompt_function=self._prompt,
                         role_mapping={pid: game_state.name(agent) for agent, pid in self.pids.items()},
                         secret_roles=roles)
        self._delivered = 0         # board messages handed to the seats' observations so far
        self._after_move()

    def _prompt(self, player_id: int, game_state: dict) -> str:
        agent = self.game_env.possible_agents[player_id]
        return "\n".join(self.game_env.views.head_blocks(agent) + [ANSWER_FORMAT])

    def _public_state(self) -> dict:
        state = self.game_env.state
        return {"game": self.game_env.game_info.id, "phase": state.phase, "round": state.round}

    # ------------------------------------------------------------------ moves
    def step(self, action: str):
        if self.game_env is None or self.state.done:
            raise RuntimeError(f"{self.game_id}: " + ("call reset() before step()" if self.game_env is None
                                                      else "the game is over; call reset() to start another"))
        agent = self.game_env.agent_selection
        pid = self.pids[agent]
        text = action if isinstance(action, str) else str(action)
        move, reason = self._parse(agent, text)
        if move is None and self.state.error_allowance > self.state.error_count:
            self.state.set_invalid_move(reason)         # the seat is told and moves again
            return self.state.step(rotate_player=False)
        if move is None:
            self.state.game_info[pid]["invalid_move"] = True
            move = text             # the engine logs it as sent and plays the phase's fallback
        self.game_env.step(move)
        turns_before = self.state.game_info[pid]["turn_count"]
        _, step_info = self.state.step(rotate_player=False)
        if self.state.game_info[pid]["turn_count"] == turns_before:      # TeamMultiPlayerState counts none
            self.state.game_info[pid]["turn_count"] += 1
        self._after_move()
        return self.state.done, step_info

    def _parse(self, agent: str, text: str) -> tuple[Optional[str], Optional[str]]:
        """The first candidate text that is a legal move, or None and why the last was not."""
        grammar = self.game_env.grammar(agent)
        reason = "an empty action"
        for candidate in action_candidates(text):
            if grammar.lookup(candidate) is not None:
                return candidate, None
            try:
                grammar.parse(candidate)
                return candidate, None
            except ActionError as err:
                reason = clip(str(err))
        return None, reason

    def _after_move(self) -> None:
        """Hand the new board lines to their receivers, then the outcome or the next board."""
        env, state = self.game_env, self.state
        board = env.state.messages
        for message in board[self._delivered:]:
            kind = Type.GAME_ACTION_DESCRIPTION if message.sender else Type.GAME_MESSAGE
            line = sanitize(render_message(message, env.state, message.receivers[0]))
            for receiver in message.receivers:
                state.add_observation(message=line, observation_type=kind, to_id=self.pids[receiver])
        self._delivered = len(board)
        state.game_state.update(self._public_state())
        result = env.state.result
        if result is not None:
            state.rewards = {self.pids[agent]: reward for agent, reward in result.rewards.items()}
            for pid in state.game_info:
                state.game_info[pid]["reason"] = result.reason
            state.done = True
            return
        agent = env.agent_selection
        state.current_player_id = self.pids[agent]
        board_text = "\n".join(env.views.private_blocks(agent) + env.views.now_blocks(agent, ANSWER_FORMAT))
        state.add_observation(message=board_text, observation_type=Type.GAME_BOARD, to_id=self.pids[agent])


def env_classes() -> dict:
    """game id -> its TextArena ``Env`` class (one subclass per game, as TextArena has)."""
    return {game_id: type(f"{textarena_id(game_id).split('-')[1]}TextArenaEnv", (SocialGymTextArenaEnv,),
                          {"game_id": game_id, "__module__": __name__})
            for game_id in game_ids()}


def register_games() -> list[str]:
    """Register every game of the registry not yet in TextArena's (the three ids each:
    plain, ``-raw`` and ``-train``); the plain ids registered now. Called on import; call it
    again after registering a game of your own."""
    added = []
    for game_id, cls in env_classes().items():
        ta_id = textarena_id(game_id)
        if ta_id not in ENV_REGISTRY:
            register_with_versions(id=ta_id, entry_point=cls, wrappers=WRAPPERS)
            added.append(ta_id)
    return added


register_games()
