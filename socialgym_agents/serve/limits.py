"""What one client may make a server read or hold: :class:`ServerLimits`, the defaults of both
servers' ``--max-body-bytes``, ``--handshake-timeout`` and ``--max-handshakes`` (enforced in
:mod:`socialgym_agents.serve.app`). A module of its own so the CLI reads the defaults without
importing the server stack."""
from __future__ import annotations

from dataclasses import dataclass

STALL_S = 1.0     # the longest a connection over --max-handshakes waits for its first bytes before it may be shed


@dataclass(frozen=True)
class ServerLimits:
    """Limits on every connection of one server."""

    max_body_bytes: int = 1 << 20       # an HTTP body or WebSocket frame; a move is a few KB, a config 2,000 chars
    handshake_timeout_s: float = 10.0   # a request's headers and body, a WebSocket's first message
    max_handshakes: int = 64            # WebSockets (and, apart, HTTP connections) waiting that long at once

    @property
    def stall_s(self) -> float:
        """How long a connection waits for its first bytes before it counts as stalled, and past
        ``max_handshakes`` may be shed: one that sends its request at once is read long before."""
        return min(STALL_S, self.handshake_timeout_s / 2)

    def __post_init__(self):
        if self.max_body_bytes < 1 or self.max_handshakes < 1 or not self.handshake_timeout_s > 0:
            raise ValueError(f"--max-body-bytes, --handshake-timeout and --max-handshakes must be positive "
                             f"(got {self.max_body_bytes}, {self.handshake_timeout_s}, {self.max_handshakes})")
