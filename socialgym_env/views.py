"""What a seat is shown, computed on demand from the turn machine: observation text, infos,
legal actions and the action schema (the grammar), prompt parts.

Everything here is a function of the machine's state, which only changes inside the machine
(``machine.py``). So within one *epoch* (between two changes) a seat's grammar, instructions
and observation text are built at most once, and the infos are :class:`LazyInfo` views built
only when read. The machine calls :meth:`Views.before_change` just before every change: the
infos issued so far are sealed -- one that someone outside still holds is frozen (what it
reads from the state is taken now, the grammar's lists are built from this decision's grammar
when read), so it keeps describing the state it was issued for; one nobody holds has been
read by nobody, so it stays unbuilt and :meth:`Views.issue` hands the same object out again
for the next state -- and the per-epoch caches are keyed by the machine's epoch, so they go
stale by themselves.

The per-seat transcripts are not per-epoch: messages are immutable and only appended, so the
rendered history grows incrementally; they are rebuilt only when the machine holds another
State object (a new episode, a restored snapshot). ``copy.deepcopy`` / pickle drop the
per-epoch caches (a cached Grammar may hold closures over the original state).
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import Optional

from .actions import Grammar
from .lazy import LazyInfo
from .machine import TurnMachine
from .state import MODERATOR, PRIVATE, PUBLIC, TEAM as TEAM_VIS, Message, State

MAX_OBSERVATION_CHARS = 200_000
# Every character an observation may hold: printable Unicode below the CJK block plus
# newline and tab. Characters outside it are shown as "?" in observations (never in logs).
CHARSET = "\n\t" + "".join(chr(c) for c in range(0x20, 0x3000) if c != 0x7F)
_OUTSIDE_CHARSET = re.compile("[^\n\t\x20-\x7e\x80-\u2fff]")
ANSWER_FORMAT = ('Answer with one action: JSON {"action_type": "...", "argument": "..."} '
                 'or plain text "<action_type> <argument>".')

_SANITIZED: dict = {}
_SANITIZED_MAX = 8192


def sanitize(text: str) -> str:
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


def _complete_decision_view(view: dict, grammar: Optional[Grammar], instructions: Optional[str]) -> dict:
    """The decision view's grammar part (the acting seat's legal actions, schema, list), and
    its new messages if a frozen view left them to render now."""
    new_messages = view["new_messages"]
    if callable(new_messages):
        view["new_messages"] = new_messages()
    if grammar is not None:
        view["legal_actions"] = grammar.legal_actions()
        view["action_types"] = grammar.action_types()
        view["instructions"] = instructions
        view["action_schema"] = grammar.json_schema()
        enumerated = grammar.enumerate()
        if enumerated is not None:
            view["legal_action_list"] = enumerated
    else:
        view["legal_actions"] = []
        view["action_types"] = []
    return view


class Views:
    """The on-demand views of one env's seats (one instance per env)."""

    def __init__(self, machine: TurnMachine):
        self.machine = machine
        self.game = machine.game
        self.game_info = machine.game_info
        machine.before_change = self.before_change
        self._state: Optional[State] = None       # the State the transcripts were rendered from
        self._epoch = -1                          # the epoch the per-epoch caches belong to
        self._grammars: dict = {}
        self._observations: dict = {}
        self._instruction_texts: dict = {}
        self._issued: list = []
        self._reusable: dict = {}                 # id -> an unheld, unbuilt info of the last state
        self._infos: dict = {}                    # the dict the issued infos were put in

    # ------------------------------------------------------------------ invalidation
    def before_change(self, build_all: bool) -> None:
        """Seal the infos issued for the state about to change (or, ``build_all``, build every
        one: after a change no transition replaces ``env.infos``). Called by the machine. An
        unbuilt info that nobody but ``env.infos`` holds is kept for :meth:`issue` to hand out
        again: nobody has read it, and its builder reads the state when it is first read."""
        issued = self._issued
        if issued:
            current = {id(info) for info in self._infos.values()}
            reusable = self._reusable
            for info in issued:      # the same loop as lazy._references_while_sealing
                if build_all:
                    info._fill()
                elif info.seal(id(info) in current):
                    reusable[id(info)] = info
            issued.clear()

    def _caches(self) -> None:
        """Start a new epoch's caches if the machine moved on (or holds another State)."""
        machine = self.machine
        if machine.state is not self._state:
            self._state = machine.state
            agents = machine.possible_agents
            self._seat_lines = {a: ([], [], 0) for a in agents}
            self._seat_clean = {a: [0, None] for a in agents}
            self._board_lines: list = []
            self._board_checked = 0               # board lines sanitised so far
            self._board_changed: dict = {}        # board index -> its sanitised line, where it differs
            self._last_legal_block: Optional[tuple] = None    # (shared grammar facts, its lines)
        self._epoch = machine.epoch
        self._grammars = {}
        self._observations = {}
        self._instruction_texts = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        for info in self._issued:
            info._fill()
        state.update(_grammars={}, _observations={}, _instruction_texts={}, _issued=[], _reusable={},
                     _epoch=-1)
        if "_last_legal_block" in state:      # a shared facts object: not copied with the env
            state["_last_legal_block"] = None
        return state

    # ------------------------------------------------------------------ infos
    def issue(self, infos: dict, agents, selected: Optional[str]) -> None:
        """Put a lazy view of every seat in ``infos``: the decision view for the selected seat,
        the basic one for the others. None is built until read. A seat whose last info nobody
        read or held, and of the same kind, keeps that object (see :meth:`before_change`)."""
        self._infos = infos
        issued = self._issued
        reusable = self._reusable
        game_id = self.game_info.id
        for agent in agents:
            info = reusable.pop(id(infos.get(agent)), None) if reusable else None
            if agent == selected:      # the selected seat is the first pending one: acting
                if info is None or info._freeze is None:
                    info = LazyInfo(functools.partial(self.decision_view, agent, True), "game", game_id,
                                    functools.partial(self.frozen_decision_view, agent, True))
            elif info is None or info._freeze is not None:
                info = LazyInfo(functools.partial(self.basic_info, agent), "agent", agent)
            infos[agent] = info
            issued.append(info)
        if reusable:
            for info in reusable.values():
                info.drop()
            reusable.clear()

    def basic_info(self, agent: str) -> dict:
        state = self.machine.state
        seat = state.seat[agent]
        role, team = self.game.known_role(state, agent)
        return {"agent": agent, "name": seat.name, "role": role, "team": team, "alive": seat.alive,
                "phase": state.phase, "round": state.round, "acting": False,
                "legal_actions": [], "invalid_action": self.machine.last_invalid[agent]}

    def decision_view(self, agent: str, acting: Optional[bool] = None) -> dict:
        """The structured view of one seat now (what ``infos[agent]`` holds when it acts).
        ``acting``: whether the seat has a decision now, if the caller knows."""
        return _complete_decision_view(*self._decision_parts(agent, acting))

    def frozen_decision_view(self, agent: str, acting: Optional[bool] = None):
        """The builder of the decision view of now that no later change can alter: the parts
        read from the state are taken now, the grammar's derived lists (legal actions, schema,
        enumeration) are built from the grammar of now only when read."""
        view, grammar, instructions = self._decision_parts(agent, acting, frozen=True)
        if grammar is not None:
            grammar.enumerate_now()    # a spec's check may read the live state
        return functools.partial(_complete_decision_view, view, grammar, instructions)

    def _new_messages_later(self, agent: str):
        """``new_messages(agent)`` of now, rendered only when called: messages are immutable
        and only appended, so the board's length now says which they are."""
        machine = self.machine
        state, seen, upto = machine.state, machine.seen_upto[agent], len(machine.state.messages)

        def render() -> list:
            if self._state is state and machine.state is state:      # the shared lines
                lines, indices = self.seat_history(agent)
                return lines[bisect.bisect_left(indices, seen):bisect.bisect_left(indices, upto)]
            return [render_message(message, state, message.receivers[0])
                    for message in state.messages[seen:upto] if agent in message.receivers]
        return render

    def _decision_parts(self, agent: str, acting: Optional[bool], frozen: bool = False) -> tuple:
        machine = self.machine
        state = machine.state
        seat = state.seat[agent]
        role, team = self.game.known_role(state, agent)
        if acting is None:
            acting = self.acting(agent)
        view = {
            "game": self.game_info.id, "agent": agent, "name": seat.name, "role": role, "team": team, "alive": seat.alive,
            "phase": state.phase, "round": state.round, "step": state.step,
            "acting": acting, "new_messages": self._new_messages_later(agent) if frozen else self.new_messages(agent),
            "invalid_action": machine.last_invalid[agent],
            "game_state": self.game.public_data(state, agent),
        }
        if acting:
            return view, self.grammar(agent), self.instructions(agent)
        return view, None, None

    # ------------------------------------------------------------------ decisions
    def acting(self, agent: str) -> bool:
        """Whether the seat has a decision to make now."""
        machine = self.machine
        return not machine.state.finished and agent in machine.pending_actors()

    def grammar(self, agent: str) -> Grammar:
        if self._epoch != self.machine.epoch:
            self._caches()
        grammar = self._grammars.get(agent)
        if grammar is None:
            state = self.machine.state
            grammar = self._grammars[agent] = Grammar(self.machine.phase().grammar(state, agent))
        return grammar

    def instructions(self, agent: str) -> str:
        if self._epoch != self.machine.epoch:
            self._caches()
        text = self._instruction_texts.get(agent)
        if text is None:
            state = self.machine.state
            text = self.machine.phase().instructions
            text = self._instruction_texts[agent] = text(state, agent) if callable(text) else text
        return text

    # ------------------------------------------------------------------ history
    def seat_history(self, agent: str) -> tuple[list, list]:
        """The seat's visible messages so far, rendered, with their board indices. New
        messages are appended when first asked for; history is never re-rendered, and every
        seat (any viewer) gets the same line from render_message, so each message is rendered
        once and the line shared."""
        if self._state is not self.machine.state:
            self._caches()
        lines, indices, upto = self._seat_lines[agent]
        state = self._state
        messages = state.messages
        if upto < len(messages):
            board = self._board_lines
            for message in messages[len(board):]:
                board.append(render_message(message, state, message.receivers[0]))
            for message in messages[upto:]:
                if agent in message.receivers:
                    lines.append(board[message.index])
                    indices.append(message.index)
            self._seat_lines[agent] = (lines, indices, len(messages))
        return lines, indices

    def _legal_block(self, grammar: Grammar) -> str:
        """The observation's legal-action lines; kept while decisions share a list of specs
        (equal pure specs: the same lines)."""
        facts = grammar._facts
        last = self._last_legal_block
        if last is not None and last[0] is facts:
            return last[1]
        block = sanitize("Legal actions:\n- " + "\n- ".join(grammar.legal_actions()))
        if facts.shared:
            # only the last one: holding every list's facts would outlive their bounded cache
            self._last_legal_block = (facts, block)
        return block

    def _clean_history(self, agent: str) -> list:
        """The seat's history lines sanitised. Each board line is sanitised once, for every
        seat, when first shown; the few that change are kept by board index. A seat none of
        whose lines changed reads its own history list (no list of its own)."""
        lines, indices = self.seat_history(agent)
        entry = self._seat_clean[agent]        # [lines checked, the clean list, or None: the lines]
        checked, clean = entry
        if checked < len(lines):
            board, changed = self._board_lines, self._board_changed
            for index in range(self._board_checked, len(board)):
                line = board[index]
                cleaned = _OUTSIDE_CHARSET.sub("?", line)       # the same object if nothing to replace
                if cleaned is not line:
                    changed[index] = cleaned
            self._board_checked = len(board)
            if changed:
                if clean is None and any(index in changed for index in indices[checked:]):
                    clean = entry[1] = lines[:checked]
                if clean is not None:
                    clean.extend([changed.get(index, line) for index, line in zip(indices[checked:], lines[checked:])])
            entry[0] = len(lines)
        return lines if clean is None else clean

    def new_messages(self, agent: str) -> list[str]:
        lines, indices = self.seat_history(agent)
        return lines[bisect.bisect_left(indices, self.machine.seen_upto[agent]):]

    def prompt_parts(self, agent: str) -> dict:
        """The slots of the paper's game-play prompt (Appendix E) for one seat."""
        state = self.machine.state
        return {
            "agent": state.name(agent),
            "description": self.game.description(state),
            "goal": self.game.goal(state, agent),
            "secret": self.game.secret(state, agent),
            "status": self.game.status(state, agent),
            "history": list(self.seat_history(agent)[0]),
        }

    # ------------------------------------------------------------------ observation
    def observation_text(self, agent: str) -> str:
        if self._epoch != self.machine.epoch:
            self._caches()
        text = self._observations.get(agent)
        if text is None:
            text = self._observations[agent] = self.render_observation(agent)
        return text

    def head_blocks(self, agent: str) -> list[str]:
        """The observation's head: the game, who the seat is (and its role), its goal."""
        state, game, info = self.machine.state, self.game, self.game_info
        seat = state.seat[agent]
        # three memoised pieces: the first is every seat's, the others few
        return [sanitize(f"=== {info.name} ===\n{game.description(state)}\n"),
                sanitize(f"You are {seat.name} ({agent})."
                         + (f" Your role: {game.known_role(state, agent)[0]}." if info.roles else "")
                         + ("" if seat.alive else " You have been eliminated and only watch.")),
                sanitize(f"Your goal: {game.goal(state, agent)}")]

    def private_blocks(self, agent: str) -> list[str]:
        """The seat's private information and status lines (none, or one block)."""
        state = self.machine.state
        secret = self.game.secret(state, agent)
        status = self.game.status(state, agent)
        if not (secret or status):
            return []
        middle = []
        if secret:
            middle.append("Your private information:")
            middle.extend(f"- {line}" for line in secret)
        if status:
            middle.append("Status:")
            middle.extend(f"- {line}" for line in status)
        # not memoised: status lines change every round, the memo would fill with them
        return [_OUTSIDE_CHARSET.sub("?", "\n".join(middle))]

    def now_blocks(self, agent: str, answer_format: str) -> list[str]:
        """The observation's tail: the phase, the instructions, the legal actions and
        ``answer_format`` when the seat acts; else that the game is over or it waits."""
        state = self.machine.state
        if self.acting(agent):
            return [sanitize(f"--- Now ---\nPhase: {state.phase}. {self.instructions(agent)}".rstrip()),
                    self._legal_block(self.grammar(agent)), answer_format]
        if state.result is not None:
            return [sanitize(f"--- Now ---\nThe game is over: {state.result.reason}.")]
        return [sanitize(f"--- Now ---\nPhase: {state.phase}. You have no decision to make now.")]

    def render_observation(self, agent: str) -> str:
        # Built from a few blocks, each sanitised as a whole (sanitising works character by
        # character, so this equals sanitising every line); the legal-action block is kept
        # while decisions share their specs; history lines are sanitised once, when first shown.
        if self._state is not self.machine.state:
            self._caches()
        blocks = self.head_blocks(agent) + self.private_blocks(agent)
        blocks.append("--- What you have seen ---")
        blocks.extend(self._clean_history(agent) or ["(nothing yet)"])
        blocks.extend(self.now_blocks(agent, ANSWER_FORMAT))
        text = "\n".join(blocks)
        if len(text) > MAX_OBSERVATION_CHARS:
            # Keep the newest history: drop from the front with a marker.
            text = "[... earlier history dropped ...]\n" + text[-(MAX_OBSERVATION_CHARS - 40):]
        return text
