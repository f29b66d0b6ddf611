"""A human seat: the observation text goes to a terminal, the action comes back from a line.

``human`` in a spec string. The player types either the plain form (``propose 6``, ``defect``)
or JSON (``{"action_type": "propose", "argument": 6}``). A line whose action type is not legal
now is answered with the legal types and asked again (at most ``max_retries`` times; then the
line goes to the env, whose invalid-action mode decides). End of input raises EOFError, which
the runner records as a failed episode. Streams are injectable for tests and other front ends.
"""
from __future__ import annotations

import sys
from typing import Optional, TextIO

from .base import BasePolicy, Decision


class HumanPolicy(BasePolicy):
    policy_id = "human"

    def __init__(self, seed: int = 0, input_stream: Optional[TextIO] = None,
                 output_stream: Optional[TextIO] = None, max_retries: int = 3):
        super().__init__(seed)
        self.input_stream = input_stream
        self.output_stream = output_stream
        self.max_retries = max_retries

    def _print(self, text: str) -> None:
        out = self.output_stream or sys.stdout
        out.write(text + "\n")
        out.flush()

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

    def act(self, observation: dict, info: dict, key: tuple = ("", "")) -> Decision:
        self._print("\n" + observation.get("text", ""))
        legal = [t.casefold() for t in info.get("action_types") or []]
        lines = []
        for attempt in range(1 + self.max_retries):
            self._print(f"[{info.get('name', key[1] if len(key) > 1 else '')}] your action> ")
            line = self._read()
            lines.append(line)
            if not legal or self._action_type(line).casefold() in legal:
                return Decision(line, {"policy": self.policy_id, "inputs": lines})
            self._print(f"'{line}' is not a legal action now; legal action types: "
                        f"{', '.join(info.get('action_types') or [])}")
        return Decision(lines[-1], {"policy": self.policy_id, "inputs": lines})
