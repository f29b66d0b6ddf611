"""A bounded store of live sessions, each guarded by its own secret token.

Generic over what a session holds (a single-seat game for ``serve-env``; the browser arena
reuses it for seats): the store owns the limits, the tokens and the idle reaper, never the game.

- **Limits.** At most ``max_sessions`` live at once; one more is refused with
  :class:`CapacityError` (the caller answers ``CAPACITY_REACHED``), never queued.
- **Tokens.** Every session gets a random id and a separate secret token
  (``secrets.token_urlsafe``, 256 bits). :meth:`SessionStore.get` needs both and compares the
  token in constant time (``hmac.compare_digest``), so knowing an id -- e.g. from a log line --
  is not enough to read or act for a session. A session may also hold *seat tokens*, one per
  named seat (``create(..., seats=[...])``): the browser arena gives each seat of a game its own
  secret, and ``get(id, token, seat=...)`` accepts only that seat's token, never the game's
  own token or another seat's.
- **Idle timeout.** :meth:`SessionStore.reap` closes sessions idle longer than
  ``idle_timeout_s``; the app runs it periodically. Closing calls the session's ``on_close``
  hooks (a WebSocket session closes its socket there), then the held object's ``close()``.
- **Work off the event loop.** :meth:`SessionStore.run` runs a session's blocking call (a game
  step and its opponents' moves) on one worker thread, one call per session at a time
  (a per-session lock keeps a session's calls in order). One thread, not a pool: the games are
  pure Python, so more threads only contend for the GIL, and policies shared between sessions
  are then never called from two threads at once.
"""
from __future__ import annotations

import asyncio
import hmac
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Sequence


class SessionError(Exception):
    """An unknown session, a wrong token, or a closed session (the message says which)."""


class CapacityError(SessionError):
    """The store already holds ``max_sessions`` sessions."""

    def __init__(self, active: int, limit: int):
        super().__init__(f"server at capacity: {active} of {limit} sessions in use; retry later")
        self.active, self.limit = active, limit


@dataclass
class Session:
    """One live session: what it holds plus its bookkeeping."""

    id: str
    token: str
    value: Any
    created_at: float
    last_active: float
    steps: int = 0
    closed: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    on_close: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    seat_tokens: dict[str, str] = field(default_factory=dict)

    def touch(self, step: bool = False) -> None:
        self.last_active = time.monotonic()
        self.steps += int(step)


class SessionStore:
    """Sessions by id, bounded, token-checked, reaped when idle (see the module docstring)."""

    def __init__(self, max_sessions: int = 1024, idle_timeout_s: Optional[float] = 300.0,
                 worker_thread: bool = True):
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if idle_timeout_s is not None and idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s}")
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self._sessions: dict[str, Session] = {}
        self._pending = 0                  # slots reserved by creations still building their value
        self._executor = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="socialgym-session")
                          if worker_thread else None)
        self.opened = 0                    # counters over the store's life (the /health figures)
        self.expired = 0

    def __len__(self) -> int:
        return len(self._sessions)

    async def _call(self, fn: Callable, *args) -> Any:
        if self._executor is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def run(self, session: Optional[Session], fn: Callable, *args) -> Any:
        """Run the blocking ``fn(*args)`` on the worker thread, in order within ``session``."""
        if session is None:
            return await self._call(fn, *args)
        async with session.lock:
            if session.closed:
                raise SessionError("session closed")
            return await self._call(fn, *args)

    async def create(self, factory: Callable[[], Any], seats: Sequence[str] = ()) -> Session:
        """Reserve a slot, build the value with ``factory()`` on the worker thread, store it
        (with a secret token per name in ``seats``).

        Raises :class:`CapacityError` when full; a factory error frees the slot and propagates."""
        if len(self._sessions) + self._pending >= self.max_sessions:
            raise CapacityError(len(self._sessions) + self._pending, self.max_sessions)
        self._pending += 1
        try:
            value = await self.run(None, factory)
        finally:
            self._pending -= 1
        now = time.monotonic()
        session = Session(id=secrets.token_hex(16), token=secrets.token_urlsafe(32), value=value,
                          created_at=now, last_active=now,
                          seat_tokens={seat: secrets.token_urlsafe(32) for seat in seats})
        self._sessions[session.id] = session
        self.opened += 1
        return session

    def get(self, session_id: Optional[str], token: Optional[str], seat: Optional[str] = None) -> Session:
        """The session ``session_id`` if ``token`` is its token (with ``seat``: that seat's
        token); SessionError otherwise.

        An unknown id, an unknown seat and a wrong token give the same message, so a caller
        cannot probe ids or seats."""
        if not isinstance(session_id, (str, type(None))) or not isinstance(token, (str, type(None))):
            raise SessionError("session_id and session_token are strings (as /reset answered them)")
        session = self._sessions.get(session_id or "")
        expected = None
        if session is not None:
            expected = session.token if seat is None else session.seat_tokens.get(seat)
        if expected is None or not isinstance(token, str):
            expected, token = "x" * 43, ""          # still one comparison: no timing difference
        if not hmac.compare_digest(expected.encode(), token.encode()) or session is None:
            raise SessionError("unknown session or wrong session token (sessions expire when idle)")
        return session

    async def close(self, session: Session) -> None:
        """Remove ``session``, run its ``on_close`` hooks, close what it holds (idempotent)."""
        if session.closed:
            return
        session.closed = True
        self._sessions.pop(session.id, None)
        for hook in session.on_close:
            try:
                await hook()
            except Exception:     # a socket already gone must not keep the value from closing
                pass
        close = getattr(session.value, "close", None)
        if close is not None:
            async with session.lock:           # after any call in flight for this session
                await self._call(close)

    async def reap(self, now: Optional[float] = None) -> int:
        """Close every session idle longer than the timeout; returns how many were closed."""
        if self.idle_timeout_s is None:
            return 0
        now = time.monotonic() if now is None else now
        stale = [s for s in self._sessions.values() if now - s.last_active > self.idle_timeout_s]
        for session in stale:
            await self.close(session)
        self.expired += len(stale)
        return len(stale)

    async def close_all(self) -> None:
        for session in list(self._sessions.values()):
            await self.close(session)
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def stats(self) -> dict:
        return {"active_sessions": len(self._sessions), "max_sessions": self.max_sessions,
                "idle_timeout_s": self.idle_timeout_s, "sessions_opened": self.opened,
                "sessions_expired": self.expired}
