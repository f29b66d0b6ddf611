"""The engine: one PettingZoo AEC env class that runs any :class:`~socialgym_env.game.Game`.

It owns the turn loop, FSM transitions, eligibility (eliminated seats never act), message
delivery with visibility filtering, invalid-action handling, the turn cap, outcome rewards and
the episode log. It contains no game-specific code.
"""
from __future__ import annotations

import bisect
import copy
import functools
import random
import re
from typing import Optional

from gymnasium import spaces
from pettingzoo import AECEnv

from .actions import MAX_ACTION_CHARS, Action, ActionError, Grammar, clip, encodable
from .errors import EngineError, GameOverError, InvalidActionError, NotYourTurnError
from .game import TEAM, TWO_PLAYER, Game, outcome_label, outcome_rewards
from .lazy import LazyInfo
from .names import NAME_POOL
from .state import MODERATOR, PRIVATE, PUBLIC, TEAM as TEAM_VIS, Message, Result, Seat, State

LOG_SCHEMA = "socialgym.episode/1"
MAX_OBSERVATION_CHARS = 200_000
# Every character an observation may hold: printable Unicode below the CJK block plus
# newline and tab. Characters outside it are shown as "?" in observations (never in logs).
CHARSET = "\n\t" + "".join(chr(c) for c in range(0x20, 0x3000) if c != 0x7F)
_OUTSIDE_CHARSET = re.compile("[^\n\t\x20-\x7e\x80-\u2fff]")
INVALID_MODES = ("fallback", "forfeit", "raise")
# log_observations: keep each turn's whole observation text in the episode record. Off by default:
# it repeats the history every turn (100 scripted Triadic Werewolf episodes wrote 528 MB);
# logs.replay_observations rebuilds it from the seed and the actions.
ENGINE_CONFIG = {"invalid_action": "fallback", "max_steps": None, "log_observations": False}


_SANITIZED: dict = {}
_SANITIZED_MAX = 8192


def _sanitize(text: str) -> str:
    """``text`` with characters outside CHARSET shown as "?". The substitution works character
    by character, so sanitising the pieces of a text and joining them equals sanitising the
    joined text: observations sanitise each piece (memoised: most pieces, such as rules and
    goals, repeat every step) and each history line once, when it first appears."""
    clean = _SANITIZED.get(text)
    if clean is None:
        if len(_SANITIZED) >= _SANITIZED_MAX:
            _SANITIZED.clear()
        clean = _SANITIZED[text] = _OUTSIDE_CHARSET.sub("?", text)
    return clean


def render_message(message: Message, state: State, viewer: Optional[str] = None) -> str:
    """One board line as an agent sees it: ``[R2 vote] Alice: text``."""
    speaker = state.name(message.sender) if message.sender else MODERATOR
    if message.visibility == TEAM_VIS:
        speaker += " (team only)"
    elif message.visibility == PRIVATE:
        speaker += " (private)" if viewer is None or len(message.receivers) == 1 else \
            f" (to {state.names(message.receivers)})"
    elif message.visibility != PUBLIC:
        speaker += f" (to {state.names(message.receivers)})"
    where = f"R{message.round} {message.phase}" if message.phase else f"R{message.round}"
    return f"[{where}] {speaker}: {message.text}"


def start_aec_episode(env: AECEnv) -> None:
    """The PettingZoo AEC bookkeeping of a fresh episode: every possible agent live, no
    rewards yet, nobody terminated or truncated, empty infos."""
    env.agents = env.possible_agents[:]
    env.rewards = {a: 0.0 for a in env.agents}
    env._cumulative_rewards = {a: 0.0 for a in env.agents}
    env.terminations = {a: False for a in env.agents}
    env.truncations = {a: False for a in env.agents}
    env.infos = {a: {} for a in env.agents}


def begin_aec_step(env: AECEnv, action) -> Optional[str]:
    """The PettingZoo AEC step prologue: a terminated or truncated agent's step only removes
    it (None is returned); otherwise the acting agent's reward of the last step is cleared and
    the agent returned."""
    agent = env.agent_selection
    if env.terminations[agent] or env.truncations[agent]:
        env._was_dead_step(action)
        return None
    env._cumulative_rewards[agent] = 0.0
    env._clear_rewards()
    return agent


class SocialGymEnv(AECEnv):
    """A Social Gym game as a PettingZoo AEC env with text observations.

    Observation: ``{"text": str}``, the prompt-ready view of the seat. ``infos[agent]`` holds
    the structured view (role, team, phase, legal actions, new messages, invalid-action
    records; at the end score and outcome). Action: a string, JSON or plain form.
    """

    metadata = {"render_modes": ["human", "ansi"], "name": "socialgym", "is_parallelizable": False}

    def __init__(self, game_cls: type[Game], config: dict, render_mode: Optional[str] = None):
        super().__init__()
        self.game_cls = game_cls
        self.game: Game = game_cls(config)
        self.game_info = game_cls.info
        self.config = config
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, name=f"socialgym/{self.game_info.id}-v{self.game_info.version}",
                             is_parallelizable=self.game_info.simultaneous)
        self.possible_agents = [f"player_{i}" for i in range(self.game.num_players)]
        self.max_steps = int(config.get("max_steps") or self.game_info.max_steps)
        # Spaces are built lazily (a wide-charset Text space costs ~20 ms) and cached per agent:
        # api_test checks they are the same object on every call.
        self._observation_spaces: dict = {}
        self._action_spaces: dict = {}
        self.state: Optional[State] = None
        self.agents = []
        self._clear_views()

    # ------------------------------------------------------------------ view caches
    # Everything an agent is shown is a function of the state, and the state only changes
    # inside reset() and step(). So between two changes ("a view epoch") a seat's grammar and
    # observation text are built at most once, and the infos are LazyInfo views built only when
    # read. _touch() ends an epoch: it seals the issued infos (built now if someone outside
    # still holds them, so they keep describing the state they were issued for) and drops the
    # per-epoch caches. Code that changes env.state any other way (a snapshot restore, a test
    # poking at the board) must call invalidate_views() just before.
    # The per-seat transcripts (_seat_lines, _seat_clean, _board_lines) are not per-epoch: messages are
    # immutable and only appended, so the rendered history grows incrementally and stays valid.
    # copy.deepcopy / pickle of the env drop the per-epoch caches (__getstate__): a cached
    # Grammar may hold closures over the original env's state; LazyInfo values copy as built
    # plain dicts; the transcripts are plain data and copy consistently.
    def _clear_views(self) -> None:
        self._grammars: dict = {}
        self._observations: dict = {}
        self._instruction_texts: dict = {}
        self._pending_view: Optional[list] = None
        self._issued: list = []

    def _touch(self, build_all: bool = False) -> None:
        """End the current view epoch: seal the issued infos (or, ``build_all``, build every
        one: for callers after which no transition replaces ``env.infos``), forget cached
        views. step() and reset() replace every info right after, so there an info only the
        env holds is dropped unbuilt."""
        issued = self._issued
        if issued:
            current = {id(info) for info in self.infos.values()}
            for info in issued:      # the same loop as lazy._references_while_sealing
                if build_all:
                    info._fill()
                else:
                    info.seal(id(info) in current)
            issued.clear()
        self._grammars.clear()
        self._observations.clear()
        self._instruction_texts.clear()
        self._pending_view = None

    def invalidate_views(self) -> None:
        """Forget every view built from the current state. Call it just before changing
        ``env.state`` other than through ``step``/``reset`` (e.g. restoring a snapshot): infos
        already handed out and still held are built first, from the state they were issued
        for, and grammars and observations are rebuilt from the new state when next asked."""
        self._touch(build_all=True)

    def __getstate__(self):
        state = self.__dict__.copy()
        for info in self._issued:
            info._fill()
        state.update(_grammars={}, _observations={}, _instruction_texts={}, _pending_view=None, _issued=[])
        return state

    def _seat_history(self, agent: str) -> tuple[list, list]:
        """The seat's visible messages so far, rendered, with their board indices. New
        messages are appended when first asked for; history is never re-rendered, and every
        seat (any viewer) gets the same line from render_message, so each message is rendered
        once and the line shared."""
        lines, indices, upto = self._seat_lines[agent]
        messages = self.state.messages
        if upto < len(messages):
            board, state = self._board_lines, self.state
            for message in messages[len(board):]:
                board.append(render_message(message, state, message.receivers[0]))
            for message in messages[upto:]:
                if agent in message.receivers:
                    lines.append(board[message.index])
                    indices.append(message.index)
            self._seat_lines[agent] = (lines, indices, len(messages))
        return lines, indices

    def _clean_history(self, agent: str) -> list:
        """The seat's history lines sanitised (each line once, when first shown)."""
        lines = self._seat_history(agent)[0]
        clean = self._seat_clean[agent]
        if len(clean) < len(lines):
            clean.extend(_OUTSIDE_CHARSET.sub("?", line) for line in lines[len(clean):])
        return clean

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent):
        if agent not in self._observation_spaces:
            self._observation_spaces[agent] = spaces.Dict(
                {"text": spaces.Text(max_length=MAX_OBSERVATION_CHARS, charset=CHARSET)})
        return self._observation_spaces[agent]

    def action_space(self, agent):
        if agent not in self._action_spaces:
            self._action_spaces[agent] = spaces.Text(max_length=MAX_ACTION_CHARS, min_length=0, charset=CHARSET)
        return self._action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        options = options or {}
        if self.state is not None:
            self._touch()
        if seed is None:
            # Draw a seed so that even an unseeded episode is reproducible from its log.
            seed = random.SystemRandom().randrange(2**31)
        self.seed_value = int(seed)
        self.episode_id = str(options.get("episode_id", f"{self.game_info.id}-{self.seed_value}"))
        rng = random.Random(self.seed_value)
        names = rng.sample(NAME_POOL, len(self.possible_agents))
        deck = self.game.role_deck()
        if len(deck) != len(self.possible_agents):
            raise EngineError(f"{self.game_info.id}: role deck has {len(deck)} cards for "
                              f"{len(self.possible_agents)} seats")
        rng.shuffle(deck)
        seats = [Seat(agent, i, names[i], role, team)
                 for i, (agent, (role, team)) in enumerate(zip(self.possible_agents, deck))]
        self.state = State(self.game_info.id, self.config, seats, rng)
        self.turns: list[dict] = []
        self.invalid_counts = {a: 0 for a in self.possible_agents}
        self._seen_upto = {a: 0 for a in self.possible_agents}
        self._last_invalid: dict = {a: None for a in self.possible_agents}
        self._record: Optional[dict] = None
        self._seat_lines = {a: ([], [], 0) for a in self.possible_agents}
        self._seat_clean = {a: [] for a in self.possible_agents}
        self._board_lines: list = []
        self._clear_views()

        start_aec_episode(self)

        self.game.setup(self.state)
        if not self.state.phase and not self.state.finished:
            raise EngineError(f"{self.game_info.id}.setup did not choose a first phase")
        self._enter_phase()
        self._after_transition()

    # ------------------------------------------------------------------ FSM
    def _enter_phase(self) -> None:
        """Compute the actors of the current phase; run automatic (actor-less) phases."""
        state = self.state
        for _ in range(10_000):
            if state.finished:
                return
            phase = self.game.phase(state.phase)
            actors = [a for a in phase.actors(state) if phase.allow_eliminated or state.seat[a].alive]
            if actors:
                self._phase_actors = actors
                self._pending: dict[str, Action] = {}
                self._cursor = 0
                return
            self._resolve(phase, {})
        raise EngineError(f"{self.game_info.id}: automatic phases loop forever")

    def _resolve(self, phase, actions: dict) -> None:
        entries = self.state.phase_entries
        phase.resolve(self.state, actions)
        if not self.state.finished and self.state.phase_entries == entries:
            raise EngineError(f"{self.game_info.id}: phase {phase.name!r} resolved without a next phase")

    def _current_actor(self) -> Optional[str]:
        phase = self.game.phase(self.state.phase)
        while self._cursor < len(self._phase_actors):
            agent = self._phase_actors[self._cursor]
            if phase.allow_eliminated or self.state.seat[agent].alive:
                return agent
            self._cursor += 1
        return None

    def pending_actors(self) -> list[str]:
        """Seats that still have to act in the current phase, in order. In a simultaneous
        phase their decisions are independent, so a runner may ask for all of them at once."""
        if self.state is None or self.state.finished or not self.agents:
            return []
        pending = self._pending_view
        if pending is None:
            phase = self.game.phase(self.state.phase)
            rest = [a for a in self._phase_actors[self._cursor:]
                    if phase.allow_eliminated or self.state.seat[a].alive]
            pending = self._pending_view = rest if phase.simultaneous else rest[:1]
        return list(pending)

    # ------------------------------------------------------------------ views
    def grammar(self, agent: str) -> Grammar:
        grammar = self._grammars.get(agent)
        if grammar is None:
            grammar = self._grammars[agent] = Grammar(self.game.phase(self.state.phase).grammar(self.state, agent))
        return grammar

    def _instructions(self, agent: str) -> str:
        text = self._instruction_texts.get(agent)
        if text is None:
            text = self.game.phase(self.state.phase).instructions
            text = self._instruction_texts[agent] = text(self.state, agent) if callable(text) else text
        return text

    def _new_messages(self, agent: str) -> list[str]:
        lines, indices = self._seat_history(agent)
        return lines[bisect.bisect_left(indices, self._seen_upto[agent]):]

    def decision_view(self, agent: str) -> dict:
        """The structured view of one seat now (what ``infos[agent]`` holds when it acts)."""
        state = self.state
        seat = state.seat[agent]
        role, team = self.game.known_role(state, agent)
        acting = agent in self.pending_actors()
        view = {
            "game": self.game_info.id, "agent": agent, "name": seat.name, "role": role, "team": team, "alive": seat.alive,
            "phase": state.phase, "round": state.round, "step": state.step,
            "acting": acting, "new_messages": self._new_messages(agent),
            "invalid_action": self._last_invalid[agent],
            "game_state": self.game.public_data(state, agent),
        }
        if acting:
            grammar = self.grammar(agent)
            view["legal_actions"] = grammar.legal_actions()
            view["action_types"] = grammar.action_types()
            view["instructions"] = self._instructions(agent)
            view["action_schema"] = grammar.json_schema()
            enumerated = grammar.enumerate()
            if enumerated is not None:
                view["legal_action_list"] = enumerated
        else:
            view["legal_actions"] = []
            view["action_types"] = []
        return view

    def prompt_parts(self, agent: str) -> dict:
        """The slots of the paper's game-play prompt (Appendix E) for one seat."""
        state = self.state
        return {
            "agent": state.name(agent),
            "description": self.game.description(state),
            "goal": self.game.goal(state, agent),
            "secret": self.game.secret(state, agent),
            "status": self.game.status(state, agent),
            "history": list(self._seat_history(agent)[0]),
        }

    def _require_reset(self, what: str) -> None:
        if self.state is None:
            raise EngineError(f"call reset() before {what}(): the env has no episode yet")

    def observe(self, agent):
        self._require_reset("observe")
        return {"text": self.observation_text(agent)}

    def skip_dead(self) -> None:
        """Step the dead-agent turns (``step(None)``) that PettingZoo's AEC loop requires before
        the next live seat acts, as ``agent_iter`` does."""
        while self.agents and (self.terminations[self.agent_selection] or self.truncations[self.agent_selection]):
            self.step(None)

    def last(self, observe: bool = True):
        self._require_reset("last")
        return super().last(observe)

    def observation_text(self, agent: str) -> str:
        text = self._observations.get(agent)
        if text is None:
            text = self._observations[agent] = self._render_observation(agent)
        return text

    def _render_observation(self, agent: str) -> str:
        state = self.state
        game = self.game
        seat = state.seat[agent]
        lines = [_sanitize(f"=== {self.game_info.name} ===\n{game.description(state)}\n"),
                 _sanitize(f"You are {seat.name} ({agent})."
                           + (f" Your role: {game.known_role(state, agent)[0]}." if self.game_info.roles else "")
                           + ("" if seat.alive else " You have been eliminated and only watch.")),
                 _sanitize(f"Your goal: {game.goal(state, agent)}")]
        secret = game.secret(state, agent)
        if secret:
            lines.append("Your private information:")
            lines.extend(_sanitize(f"- {line}") for line in secret)
        status = game.status(state, agent)
        if status:
            lines.append("Status:")
            lines.extend(_sanitize(f"- {line}") for line in status)
        lines.append("--- What you have seen ---")
        lines.extend(self._clean_history(agent) or ["(nothing yet)"])
        lines.append("--- Now ---")
        if self.agents and agent in self.pending_actors():
            grammar = self.grammar(agent)
            lines.append(_sanitize(f"Phase: {state.phase}. {self._instructions(agent)}".rstrip()))
            lines.append("Legal actions:")
            lines.extend(_sanitize(f"- {line}") for line in grammar.legal_actions())
            lines.append('Answer with one action: JSON {"action_type": "...", "argument": "..."} '
                         'or plain text "<action_type> <argument>".')
        elif state.result is not None:
            lines.append(_sanitize(f"The game is over: {state.result.reason}."))
        else:
            lines.append(_sanitize(f"Phase: {state.phase}. You have no decision to make now."))
        text = "\n".join(lines)
        if len(text) > MAX_OBSERVATION_CHARS:
            # Keep the newest history: drop from the front with a marker.
            text = "[... earlier history dropped ...]\n" + text[-(MAX_OBSERVATION_CHARS - 40):]
        return text

    # ------------------------------------------------------------------ step
    def act(self, agent: str, action) -> None:
        """``step`` with a check that ``agent`` is the one selected."""
        if agent != self.agent_selection:
            raise NotYourTurnError(f"it is {self.agent_selection}'s turn, not {agent}'s")
        self.step(action)

    def step(self, action) -> None:
        if self.state is None:
            raise GameOverError("call reset() before step()")
        if not self.agents:
            raise GameOverError("the episode is over; call reset() to start a new one")
        agent = begin_aec_step(self, action)
        if agent is None:
            return
        state = self.state
        phase = self.game.phase(state.phase)
        grammar = self.grammar(agent)
        observation = self.observation_text(agent) if self.config.get("log_observations") else None
        raw = encodable(action if isinstance(action, str) else repr(action))
        try:
            parsed, reason = grammar.parse(action), None
        except ActionError as err:
            parsed, reason = None, clip(str(err))
        mode = self.config.get("invalid_action", "fallback")
        if reason is not None and mode == "raise":
            raise InvalidActionError(f"{agent} in phase {state.phase!r}: {reason}")
        # Nothing has changed so far (a raised action leaves the env as it was, views
        # included); from here on the state does, so the views of the state before end here.
        self._touch()
        turn = {"step": state.step, "round": state.round, "phase": state.phase, "agent": agent,
                "raw": raw[:MAX_ACTION_CHARS], "valid": reason is None}
        if observation is not None:
            turn["observation"] = observation
        if reason is not None:
            record = {"raw": raw[:500], "reason": reason, "phase": state.phase, "step": state.step}
            self._last_invalid[agent] = record
            self.invalid_counts[agent] += 1
            turn["reason"] = reason
            if mode == "forfeit":
                turn["action"] = None
                self.turns.append(turn)
                state.step += 1
                self._forfeit(agent, reason)
                self._after_transition()
                return
            parsed = self._fallback(phase, agent, grammar)
            turn["fallback"] = True
        else:
            self._last_invalid[agent] = None
        turn["action"] = parsed.text
        self.turns.append(turn)
        self._seen_upto[agent] = len(state.messages)
        state.step += 1

        self._pending[agent] = parsed
        self._cursor += 1
        entries = state.phase_entries
        if not phase.simultaneous and phase.on_action is not None:
            phase.on_action(state, agent, parsed)
        if not state.finished:
            if state.phase_entries != entries:      # on_action branched the FSM itself
                self._enter_phase()
            elif self._current_actor() is None:
                self._resolve(phase, self._pending)
                self._enter_phase()
        if not state.finished and state.step >= self.max_steps:
            self.game.on_truncation(state)
            if not state.finished:
                raise EngineError(f"{self.game_info.id}.on_truncation did not end the game")
        self._after_transition()

    def _fallback(self, phase, agent: str, grammar: Grammar) -> Action:
        fallback = phase.fallback
        if callable(fallback):
            fallback = fallback(self.state, agent)
        if isinstance(fallback, Action):
            return fallback
        if isinstance(fallback, str) and fallback != "random":
            try:
                return grammar.parse(fallback)
            except ActionError:
                pass
        return grammar.sample(self.state.rng)

    def _forfeit(self, offender: str, reason: str) -> None:
        """``invalid_action="forfeit"``: the offender loses at once; in two-player and team
        games the other side wins, elsewhere the others draw."""
        state = self.state
        rule = self.game_info.outcome
        if rule == TWO_PLAYER:
            rewards = {a: (-1.0 if a == offender else 1.0) for a in state.agents}
        elif rule == TEAM:
            team = state.team(offender)
            rewards = {a: (-1.0 if state.team(a) == team else 1.0) for a in state.agents}
        else:
            rewards = {a: (-1.0 if a == offender else 0.0) for a in state.agents}
        state.finish(f"{state.name(offender)} forfeited by an invalid action ({reason})", rewards=rewards)

    # ------------------------------------------------------------------ bookkeeping
    def _after_transition(self) -> None:
        state = self.state
        if state.finished and state.result is None:
            self._finalize()
        if state.result is not None:
            return
        self.agent_selection = selected = self._current_actor()
        infos, issued = self.infos, self._issued
        for agent in self.agents:
            if agent == selected:
                info = LazyInfo(functools.partial(self.decision_view, agent), "game", self.game_info.id)
            else:
                info = LazyInfo(functools.partial(self._basic_info, agent), "agent", agent)
            infos[agent] = info
            issued.append(info)

    def _basic_info(self, agent: str) -> dict:
        seat = self.state.seat[agent]
        role, team = self.game.known_role(self.state, agent)
        return {"agent": agent, "name": seat.name, "role": role, "team": team, "alive": seat.alive,
                "phase": self.state.phase, "round": self.state.round, "acting": False,
                "legal_actions": [], "invalid_action": self._last_invalid[agent]}

    def _finalize(self) -> None:
        state = self.state
        pending = state._pending_finish
        rewards = pending["rewards"]
        if rewards is None:
            rewards = outcome_rewards(self.game_info.outcome, state.agents, state.scores, pending["winners"])
        rewards = {a: float(rewards[a]) for a in state.agents}
        state.result = Result(dict(state.scores), rewards, pending["reason"], pending["truncated"],
                              pending["winners"])
        state.announce(f"Game over: {pending['reason']}.")
        for agent in self.agents:
            self.rewards[agent] = rewards[agent]
            if pending["truncated"]:
                self.truncations[agent] = True
            else:
                self.terminations[agent] = True
            info = self._basic_info(agent)
            info.update(score=state.scores[agent], outcome=outcome_label(rewards[agent]),
                        reward=rewards[agent], reason=pending["reason"])
            self.infos[agent] = info
        self._accumulate_rewards()
        self.agent_selection = self.agents[0]

    # ------------------------------------------------------------------ snapshot
    def clone(self) -> "SocialGymEnv":
        """An independent copy of the env in its current state: board, FSM position, turn log,
        rewards and the RNG. Stepping the copy never affects this env, and the copy continued
        with the same actions gives the same episode record (branching rollouts rely on it).
        Generic on purpose: a deep copy of everything except the (immutable, costly) spaces."""
        memo = {id(self._observation_spaces): {}, id(self._action_spaces): {}}
        return copy.deepcopy(self, memo)

    # ------------------------------------------------------------------ log
    def episode_record(self, policies: Optional[dict] = None, playbooks: Optional[dict] = None,
                       extra: Optional[dict] = None, playbook_ids: Optional[dict] = None) -> dict:
        """The JSONL episode record (the log format: docs/log-format.md)."""
        state = self.state
        policies = policies or {}
        playbooks = playbooks or {}
        playbook_ids = playbook_ids or {}
        result = state.result
        roster = [{"agent": s.agent, "name": s.name, "role": s.role, "team": s.team,
                   "policy": policies.get(s.agent), "playbook": playbooks.get(s.agent),
                   "playbook_id": playbook_ids.get(s.agent), "alive_at_end": s.alive} for s in state.seats]
        record = {
            "schema": LOG_SCHEMA,
            "episode_id": self.episode_id,
            "game": self.game_info.id,
            "game_version": self.game_info.version,
            "seed": self.seed_value,
            "config": {k: v for k, v in sorted(self.config.items())},
            "roster": roster,
            "turns": copy.deepcopy(self.turns),
            "messages": [m.to_dict() for m in state.messages],
            "transcript": [render_message(m, state) for m in state.messages if m.visibility == PUBLIC],
            "steps": state.step,
            "finished": result is not None,
            "scores": dict(result.scores) if result else dict(state.scores),
            "rewards": dict(result.rewards) if result else None,
            "outcomes": {a: outcome_label(r) for a, r in result.rewards.items()} if result else None,
            "winners": list(result.winners) if result else [],
            "reason": result.reason if result else None,
            "truncated": bool(result.truncated) if result else False,
            "invalid_actions": dict(self.invalid_counts),
            "metrics": self.game.metrics(state),
        }
        if extra:
            record.update(extra)
        return record

    def annotate_last_turn(self, **fields) -> None:
        """Attach agent-side data (model prompt, raw reply, parse attempts) to the last turn."""
        if self.turns:
            self.turns[-1].update(fields)

    # ------------------------------------------------------------------ render
    def render(self):
        if self.state is None:
            return None
        lines = [render_message(m, self.state) for m in self.state.messages if m.visibility == PUBLIC]
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self):
        pass

