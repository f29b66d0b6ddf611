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
  own token or another seat's. :meth:`Session.reseat` revokes them all when the seats change.
- **Idle timeout.** :meth:`SessionStore.reap` closes sessions idle longer than
  ``idle_timeout_s``; the app runs it periodically. Closing calls the session's ``on_close``
  hooks (a WebSocket session closes its socket there), then the held object's ``close()``.
  A session marked ``resumable`` is *parked* instead: its hooks run (the socket closes) but
  what it holds is kept, still under its id and token, for one more idle timeout, so a client
  that reconnects can take it up again (:meth:`SessionStore.resume`); then it is closed.
- **Why a session is gone.** A closed session leaves a short note (why and when), kept for
  the last :data:`NOTES_KEPT` sessions and shown only to a caller holding its token, so a
  client coming back to an expired session is told why, not just "unknown session".
- **Work off the event loop.** :meth:`SessionStore.run` runs a session's blocking call (a game
  step and its opponents' moves) on one worker thread, one call per session at a time
  (a per-session lock keeps a session's calls in order). One thread, not a pool: the games are
  pure Python, so more threads only contend for the GIL, and policies shared between sessions
  are then never called from two threads at once.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Sequence


NOTES_KEPT = 4096


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


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
    resumable: bool = False
    parked_at: Optional[float] = None        # when the idle reaper parked it (resumable sessions)

    def touch(self, step: bool = False) -> None:
        self.last_active = time.monotonic()
        self.steps += int(step)

    def reseat(self, seats: Sequence[str]) -> None:
        """Seat tokens for the seats now held by callers: kept when they are the same seats (the
        same holders), else every old token revoked and one new per seat (none for no seats), so a
        token never outlives the seat it was handed out for."""
        if set(self.seat_tokens) != set(seats):
            self.seat_tokens = {seat: secrets.token_urlsafe(32) for seat in seats}


def _token_matches(expected: Optional[str], token) -> bool:
    """Whether ``token`` is the ``expected`` one; one constant-time comparison whatever is missing,
    so an unknown id, an unknown seat and a wrong token take the same time."""
    usable = expected is not None and isinstance(token, str)
    same = hmac.compare_digest((expected if usable else "x" * 43).encode(), (token if usable else "").encode())
    return usable and same


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
        self._notes: OrderedDict[str, tuple] = OrderedDict()    # id -> (token digest, why it closed)

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
        expected = None if session is None else session.token if seat is None else session.seat_tokens.get(seat)
        if not _token_matches(expected, token):
            raise self._refusal(session_id, token if session is None and seat is None else None)
        return session

    def _refusal(self, session_id, given) -> SessionError:
        """Why a caller may not have the session: the note of a closed one to a caller holding its
        token (``given``), else the same words for every miss."""
        note = self._notes.get(session_id or "")
        if note is not None and isinstance(given, str) and hmac.compare_digest(note[0], _digest(given)):
            return SessionError(f"session {session_id} {note[1]}")
        return SessionError("unknown session or wrong session token (sessions expire when idle)")

    def resume(self, session_id, token) -> Session:
        """A live or parked session, taken up again by a reconnecting client (its id and token);
        SessionError saying why when it cannot be (unknown, wrong token, or closed, and why)."""
        session = self.get(session_id, token)
        session.parked_at = None
        session.touch()
        return session

    async def _hang_up(self, session: Session) -> None:
        hooks, session.on_close = list(session.on_close), []
        for hook in hooks:
            try:
                await hook()
            except Exception:     # a socket already gone must not keep the value from closing
                pass

    async def close(self, session: Session, why: str = "was closed") -> None:
        """Remove ``session``, run its ``on_close`` hooks, close what it holds (idempotent);
        ``why`` is the note a caller with its token reads later."""
        if session.closed:
            return
        session.closed = True
        self._sessions.pop(session.id, None)
        self._notes[session.id] = (_digest(session.token), f"{why} ({time.strftime('%H:%M:%S')} server time)")
        while len(self._notes) > NOTES_KEPT:
            self._notes.popitem(last=False)
        await self._hang_up(session)
        close = getattr(session.value, "close", None)
        if close is not None:
            async with session.lock:           # after any call in flight for this session
                await self._call(close)

    async def reap(self, now: Optional[float] = None) -> int:
        """Close every session idle longer than the timeout (park a resumable one first, close
        it one more timeout later); returns how many were closed."""
        if self.idle_timeout_s is None:
            return 0
        now = time.monotonic() if now is None else now
        timeout = self.idle_timeout_s
        closed = 0
        for session in [s for s in self._sessions.values() if now - s.last_active > timeout]:
            if session.resumable and session.parked_at is None:
                session.parked_at = now
                await self._hang_up(session)
                continue
            if session.parked_at is not None and now - session.parked_at <= timeout:
                continue
            why = (f"was closed after {timeout:g} s idle and {timeout:g} s more unclaimed; its episode is gone: "
                   "reset without session_id to start a new one") if session.parked_at is not None else \
                f"was closed after {timeout:g} s idle (the server's idle timeout); reset to start a new episode"
            await self.close(session, why)
            closed += 1
        self.expired += closed
        return closed

    async def close_all(self) -> None:
        for session in list(self._sessions.values()):
            await self.close(session)
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def stats(self) -> dict:
        return {"active_sessions": len(self._sessions), "max_sessions": self.max_sessions,
                "idle_timeout_s": self.idle_timeout_s, "sessions_opened": self.opened,
                "sessions_expired": self.expired}
