"""A human seat at the terminal: what the seat sees goes to the screen, the move comes back from a line.

``human`` in a spec string. The rules (the game's description, the seat's name, role and goal)
are printed once, on the seat's first turn, and again whenever the player types ``help``. Each
turn then shows only what is new to the seat (lines of the board it has not been shown yet),
its private information and status, and a prompt that says whose turn it is::

    [round 2, move] Your turn, Ines (player_0). Type a move, or help.
    - cooperate
    - defect
    >

The player types the plain form (``propose 6``, ``defect``) or JSON (``{"action_type":
"propose", "argument": 6}``). A line whose action type is not legal now is answered with the
legal types and asked again (at most ``max_retries`` times; then the line goes to the env,
whose invalid-action mode decides). End of input raises EOFError, which the runner records as
a failed episode. Streams are injectable for tests and other front ends.

:class:`TerminalTable` is the rest of the table for ``socialgym play``: passed to
:func:`socialgym_agents.runner.play_episode` as ``on_turn``, it says which seat is thinking while a model
decides and shows the other seats' moves as they happen -- the new board lines the human seat
may see, or "<name> has moved." when a move posts nothing the seat may see (a pass, a hidden
vote), so no move goes unnoticed and none is revealed. In a phase only some seats of a
hidden-role game play (a night kill), it names nobody (``env.actors_public()``).
"""
from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from .base import BasePolicy, Decision, Request

HELP = "help"


class TerminalOutput:
    """One output stream (stdout unless given) and, per human seat, how many of its board lines
    have been shown, so that the table and the seat's own prompt never print a line twice."""

    def __init__(self, output_stream: Optional[TextIO] = None):
        self.output_stream = output_stream
        self.shown: dict = {}                    # (episode_id, agent) -> board lines shown

    def print(self, text: str) -> None:
        out = self.output_stream or sys.stdout
        out.write(text + "\n")
        out.flush()

    def show_new(self, key: tuple, history: Sequence[str]) -> int:
        """Print the seat's board lines not shown yet; returns how many."""
        start = self.shown.get(key, 0)
        for line in history[start:]:
            self.print(line)
        self.shown[key] = len(history)
        return len(history) - start


class HumanPolicy(BasePolicy):
    policy_id = "human"
    needs_prompt_parts = True        # the runners pass env.prompt_parts: rules, goal, history apart

    def __init__(self, seed: int = 0, input_stream: Optional[TextIO] = None,
                 output_stream: Optional[TextIO] = None, max_retries: int = 3,
                 output: Optional[TerminalOutput] = None):
        super().__init__(seed)
        self.input_stream = input_stream
        self.output = output or TerminalOutput(output_stream)
        self.max_retries = max_retries
        self._introduced: set = set()

    def _print(self, text: str) -> None:
        self.output.print(text)

    def _read(self) -> str:
        line = (self.input_stream or sys.stdin).readline()
        if not line:
            raise EOFError("the human player closed the input (end of file)")
        return line.strip()

    @staticmethod
    def _action_type(line: str) -> str:
        if line.startswith("{"):
            from .llm.parsing import ReplyError, extract_json_object
            try:
                return str(extract_json_object(line).get("action_type", ""))
            except ReplyError:
                return ""
        return line.split()[0] if line.split() else ""

    def _rules(self, observation: dict, info: dict, parts: Optional[dict]) -> None:
        if parts is None:                        # no prompt parts: the whole observation is the rules
            self._print("\n" + observation.get("text", ""))
            return
        first = observation.get("text", "").split("\n", 1)[0]
        header = first if first.startswith("===") else f"=== {info.get('game', '')} ==="
        self._print(f"\n{header}\n{parts.get('description', '')}")
        role = f", role {info['role']}" if info.get("role") and info.get("role") != "player" else ""
        self._print(f"You are {parts.get('agent', info.get('name', ''))} ({info.get('agent', '')}{role}).")
        if parts.get("goal"):
            self._print(f"Your goal: {parts['goal']}")
        self._print(f"(Type {HELP} at any prompt to see these rules and your legal moves again.)\n")

    def act_batch(self, requests: Sequence[Request]) -> list[Decision]:
        return [self.act(r.observation, r.info, key=r.key, parts=r.prompt_parts) for r in requests]

    def act(self, observation: dict, info: dict, key: tuple = ("", ""), parts: Optional[dict] = None) -> Decision:
        if key not in self._introduced:
            self._introduced.add(key)
            self._rules(observation, info, parts)
        if parts is not None:
            self._show_news(key, parts)
        self._print(self._turn_prompt(info, key))
        self._show_legal(info)
        legal = [t.casefold() for t in info.get("action_types") or []]
        lines = []
        while True:
            self.output.print("> ")
            line = self._read()
            if line.casefold() == HELP:
                self._rules(observation, info, parts)
                self._show_legal(info)
                continue
            lines.append(line)
            # past max_retries illegal lines, the last one goes to the env as typed
            if not legal or self._action_type(line).casefold() in legal or len(lines) > self.max_retries:
                return Decision(line, {"policy": self.policy_id, "inputs": lines})
            self._print(f"'{line}' is not a legal action now; legal action types: "
                        f"{', '.join(info.get('action_types') or [])}")

    def _show_news(self, key: tuple, parts: dict) -> None:
        """The board lines the seat has not been shown yet, its private lines and its status."""
        self.output.show_new(key, parts.get("history") or [])
        for line in parts.get("secret") or []:
            self._print(f"(private) {line}")
        for line in parts.get("status") or []:
            self._print(f"- {line}")

    @staticmethod
    def _turn_prompt(info: dict, key: tuple) -> str:
        name = info.get("name", key[1] if len(key) > 1 else "")
        return (f"[round {info.get('round', '?')}, {info.get('phase', '')}] Your turn, {name} "
                f"({info.get('agent', key[-1])}). {info.get('instructions', '')}".rstrip()
                + f" Type a move, or {HELP}.")

    def _show_legal(self, info: dict) -> None:
        for line in info.get("legal_actions") or []:
            self._print(f"- {line}")


class TerminalTable:
    """``on_turn`` for :func:`socialgym_agents.runner.play_episode` with human seats at one terminal (see
    the module docstring). With one human seat the other seats' moves are shown as the board
    lines that seat may see; with several, only that someone moved (one screen cannot keep
    each person's private lines from the others)."""

    def __init__(self, seat_specs: dict, output: TerminalOutput, is_human=lambda spec: spec == "human"):
        self.seat_specs = seat_specs
        self.output = output
        self.humans = [a for a, spec in seat_specs.items() if is_human(spec)]
        self._turn_public = True

    def __call__(self, env, agent: str, decision: Optional[Decision], policy=None) -> None:
        name = f"{env.state.name(agent)} ({agent}, {self.seat_specs[agent]})"
        # Before a move the board is brought up to date, so that what shows after it is what
        # this move posted.
        shown = self._show_board(env)
        if decision is None:
            # asked before the move: after it, the env may be in the next phase already
            self._turn_public = env.actors_public()
            if self._turn_public and agent not in self.humans and not getattr(policy, "instant", False):
                self.output.print(f"... {name} is thinking")
            return
        if not self._turn_public:           # a secret phase (a night kill): name nobody
            return
        if not shown and (agent not in self.humans or len(self.humans) > 1):
            self.output.print(f"{name} has moved.")

    def _show_board(self, env) -> int:
        """The new board lines the (only) human seat may see; with several humans, none."""
        if len(self.humans) != 1:
            return 0
        human = self.humans[0]
        return self.output.show_new((env.episode_id, human), env.prompt_parts(human)["history"])
