"""OpenAI-compatible chat-completions backend (OpenAI, vLLM, SGLang, llama.cpp, Ollama, ...) on httpx.

Spec: ``openai:<model>@<base_url>`` (e.g. ``openai:gpt-4o-mini@https://api.openai.com/v1``,
``openai:Qwen/Qwen3-4B@http://127.0.0.1:8000/v1``); without ``@`` the base URL is
``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. The API key is read from the environment
variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; may be unset for local servers);
it is sent as a Bearer header and never logged: error bodies, and the text, reasoning and finish
reason of every reply (a server may echo the key in a normal 200 reply), are redacted of it (and
of anything shaped like a secret key) before they reach a message, the log or an export.

Transport: ``httpx.AsyncClient`` on one background event loop shared by every server backend of
the process. All requests of a batch (every pending decision of a tick) are in flight at once,
up to ``concurrency`` (default 64) per backend; an HTTP 429 halves that window (it grows back by
one per success) and the request waits ``Retry-After`` (capped at 30 s) or its backoff.

Robustness: each request gets ``timeout`` seconds in all (``asyncio.wait_for`` around the whole
exchange, however slowly the server sends); bodies over 8 MB are cut off; HTTP 429 and 5xx,
timeouts, connection errors, bodies cut short, malformed replies (not JSON, wrong field types,
huge numbers, deep nesting), replies without choices and replies without answer text (a tool
call, reasoning only: an error, never an empty reply) are retried up to ``attempts`` times in
all, with exponential backoff (``backoff`` seconds, doubling, capped at 30 s). Other 4xx errors
are not retried. A request that still fails comes back as an exception object in its slot; the
policy turns it into ``Decision.error`` and the runner records that episode as failed.

Redirects: never followed to another origin (scheme, host, port): the key would go with it. A
307/308 to the same origin is followed (at most 3 hops); any other redirect is an error of that
request, not retried, that names where the server pointed.

Structured output, a ladder per endpoint (``structured=auto``): a constrained request
(``Completion.schema`` / ``Completion.grammar``) is sent at the endpoint's current level,

1. ``json_schema``: ``response_format={"type": "json_schema", "json_schema": {"name", "schema"}}``
   (OpenAI, vLLM, SGLang, Ollama >= 0.5, recent llama.cpp servers);
2. ``json_object``: ``response_format={"type": "json_object", "schema": ...}`` (llama-cpp-python,
   whose server answers ``json_schema`` with HTTP 500);
3. ``structured_outputs``: ``{"structured_outputs": {"json": schema}}`` (vLLM >= 0.10.2);
4. ``guided_json``: ``{"guided_json": schema}`` (earlier vLLM);
5. ``grammar``: ``{"grammar": <GBNF>}``, generated from the action grammar
   (:func:`socialgym_agents.llm.constraint.to_gbnf`; llama.cpp's servers);
6. ``none``: free text; the policy's re-asks are the fallback.

A level is left when the server rejects it (HTTP 400/404/422, or a 500 whose body names the
field) or when it is silently ignored: the policy reports each reply's legality
(:meth:`OpenAIBackend.feedback`), and a level whose replies are illegal at least twice and more
than a quarter of the time is taken as not enforced (vLLM and llama.cpp servers accept fields
they do not apply). The first constrained request of an endpoint goes alone (the probe); what
it learns is kept for the process (``ladder_for``) and every later request starts there.
``structured=<level>`` pins a level (no probing).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import threading
from collections import deque
from urllib.parse import urlsplit

from .backend import Reply
from .config import LLMConfig, STRUCTURED_LEVELS

MAX_BACKOFF_S = 30.0
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_BODY_BYTES = 8 << 20       # a chat completion is kilobytes; stop reading a runaway body
MAX_REDIRECTS = 3
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*]{8,}")
# Words in an error body that say which structured-output field the server refused.
_FIELD_WORDS = {"json_schema": ("json_schema", "response_format"),
                "json_object": ("json_object", "response_format", "schema"),
                "structured_outputs": ("structured_outputs",),
                "guided_json": ("guided_json", "guided"),
                "grammar": ("grammar",)}
# A level is taken as silently ignored past this share of illegal replies (and at least 2).
IGNORED_SHARE = 0.25


class BackendError(RuntimeError):
    """A request that failed for good (after retries, or a non-retryable error)."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _Rejected(Exception):
    """The server refused the structured-output field of this level."""


def parse_target(target: str) -> tuple[str, str]:
    """``"model@base_url"`` -> (model, base_url); ValueError for a URL that is not http(s)."""
    model, sep, base_url = target.partition("@")
    if not model:
        raise ValueError("openai spec needs a model: openai:<model>@<base_url>")
    if not sep:
        base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"openai spec needs an http(s) base URL after '@', e.g. "
                         f"openai:{model}@http://127.0.0.1:8000/v1 (got {base_url!r})")
    return model, base_url.rstrip("/")


def _origin(url) -> tuple:
    parts = urlsplit(str(url))
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


# ---------------------------------------------------------------------- the ladder
class Ladder:
    """What one endpoint accepts for structured output (see the module docstring)."""

    def __init__(self, pinned: str = "auto"):
        self.pinned = pinned if pinned != "auto" else None
        self.index = STRUCTURED_LEVELS.index(self.pinned) if self.pinned else 0
        self.probed = self.pinned is not None
        self.counts = {level: [0, 0] for level in STRUCTURED_LEVELS}     # [legal, illegal]
        self.events: list = []     # (level, why it was left) in order
        self._lock = threading.Lock()

    @property
    def level(self) -> str:
        return STRUCTURED_LEVELS[self.index]

    def _leave(self, level: str, why: str) -> None:
        if self.pinned is None and STRUCTURED_LEVELS.index(level) >= self.index and level != "none":
            self.index = STRUCTURED_LEVELS.index(level) + 1
            self.events.append((level, why))

    def reject(self, level: str, why: str) -> None:
        with self._lock:
            self._leave(level, f"rejected: {why[:120]}")

    def feedback(self, level: str, legal: bool) -> None:
        if level not in self.counts:
            return
        with self._lock:
            counts = self.counts[level]
            counts[0 if legal else 1] += 1
            if counts[1] >= 2 and counts[1] > IGNORED_SHARE * sum(counts):
                self._leave(level, f"ignored: {counts[1]} of {sum(counts)} replies illegal")


_LADDERS: dict = {}
_LADDERS_LOCK = threading.Lock()


def ladder_for(base_url: str, model: str, pinned: str = "auto") -> Ladder:
    """The process-wide ladder of one endpoint (a pinned level gets a ladder of its own)."""
    with _LADDERS_LOCK:
        key = (base_url, model, pinned)
        if key not in _LADDERS:
            _LADDERS[key] = Ladder(pinned)
        return _LADDERS[key]


def structured_fields(level: str, schema, gbnf) -> dict:
    """The request fields that carry the constraint at ``level``."""
    if level == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "action", "schema": schema}}}
    if level == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if level == "structured_outputs":
        return {"structured_outputs": {"json": schema}}
    if level == "guided_json":
        return {"guided_json": schema}
    if level == "grammar" and gbnf:
        return {"grammar": gbnf}
    return {}


def _names_field(level: str, detail: str) -> bool:
    return any(word in detail for word in _FIELD_WORDS.get(level, ()))


# ---------------------------------------------------------------------- the event loop
class _Loop:
    """One asyncio loop in a daemon thread: ``complete`` is called from synchronous code (the
    runner), possibly from several threads; each call runs its batch there and waits."""

    def __init__(self):
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="socialgym-http", daemon=True).start()

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


_SHARED_LOOP = None
_SHARED_LOOP_LOCK = threading.Lock()


def _loop() -> _Loop:
    global _SHARED_LOOP
    with _SHARED_LOOP_LOCK:
        if _SHARED_LOOP is None or _SHARED_LOOP.pid != os.getpid():   # a forked child has no loop thread
            _SHARED_LOOP = _Loop()
        return _SHARED_LOOP


class _Lanes:
    """The requests in flight: at most ``limit`` (halved by a 429, +1 per success up to
    ``most``), each on a lane of its own, an ``httpx.AsyncClient`` with one keep-alive
    connection. One client per connection, not one pool of 64: httpcore's pool scans every
    connection for every queued request, which made a 64-wide batch cost ~4 ms of CPU per
    request (profiled); a lane's pool has one connection to look at."""

    def __init__(self, most: int, make_client):
        self.most = max(1, most)
        self.limit = float(self.most)
        self.in_flight = 0
        self.peak = 0
        self._make_client = make_client
        self.pid = os.getpid()
        self._idle: list = []           # clients with no request on them
        self._waiters = deque()         # futures of requests waiting for a lane

    async def acquire(self):
        """A lane's client, once fewer than ``limit`` requests are in flight."""
        while self.in_flight >= int(self.limit):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        return self._idle.pop() if self._idle else self._make_client()

    def release(self, client) -> None:
        self.in_flight -= 1
        self._idle.append(client)
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:      # wake only as many as may go (no herd)
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def throttled(self) -> None:
        self.limit = max(1.0, self.limit / 2)

    def succeeded(self) -> None:
        self.limit = min(float(self.most), self.limit + 1)


# ---------------------------------------------------------------------- the backend
class OpenAIBackend:
    kind = "openai"

    def __init__(self, target: str, config: LLMConfig):
        self.model, self.base_url = parse_target(target)
        self.model_name = self.model
        self.config = config
        self.url = f"{self.base_url}/chat/completions"
        self.ladder = ladder_for(self.base_url, self.model, config.structured)
        self.stats = {"requests": 0, "retries": 0, "failures": 0, "rejections": 0, "throttled": 0}
        self._lanes = _Lanes(config.concurrency, self._new_client)
        self._gbnf: dict = {}

    # The policy asks whether a prompt fits; by default (context_chars=0) everything does.
    def fits(self, messages: list, share: float = 1.0) -> bool:
        """Whether ``messages`` take at most ``share`` of ``context_chars`` (no limit: always)."""
        limit = self.config.context_chars
        return not limit or sum(len(m["content"]) for m in messages) <= limit * share

    def release(self, key: tuple) -> None:
        pass

    def feedback(self, reply: Reply, legal: bool) -> None:
        """The policy's verdict on a reply: whether the constraint it was sent under held."""
        self.ladder.feedback(reply.usage.get("structured"), legal)

    @property
    def peak_in_flight(self) -> int:
        return self._lanes.peak

    def complete(self, items: list) -> list:
        """One Reply (or the BackendError that prevented it) per Completion, in order."""
        if not items:
            return []
        loop = _loop()
        if self._lanes.pid != loop.pid:       # forked: the parent's clients belong to its loop
            self._lanes = _Lanes(self.config.concurrency, self._new_client)
        return loop.run(self._complete(list(items)))

    async def _complete(self, items: list) -> list:
        first = []
        if not self.ladder.probed and any(_constrained(item) for item in items):
            first = [await self._one(items[0])]     # the probe: learn the level once, alone
            self.ladder.probed = True
        rest = await asyncio.gather(*(self._one(item) for item in items[len(first):]))
        return first + list(rest)

    def _new_client(self):
        """One lane: a client with a single connection, redirects never followed by httpx."""
        import httpx
        return httpx.AsyncClient(follow_redirects=False, timeout=self.config.timeout, verify=_tls_context(),
                                 limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))

    # ------------------------------------------------------------------ one request
    def _body(self, item, level: str) -> bytes:
        cfg = self.config
        body = {"model": self.model, "messages": item.messages, "max_tokens": cfg.max_new_tokens,
                "temperature": cfg.temperature, "seed": item.sample_seed}
        if cfg.top_p < 1.0:
            body["top_p"] = cfg.top_p
        if _constrained(item):
            body.update(structured_fields(level, item.schema, self._grammar_text(item) if level == "grammar" else None))
        return json.dumps(body).encode("utf-8")

    def _grammar_text(self, item):
        if item.grammar is None:
            return None
        key = id(item.grammar)
        if key not in self._gbnf:
            from .constraint import to_gbnf
            self._gbnf = {key: to_gbnf(item.grammar)}      # one grammar per decision: keep the last
        return self._gbnf[key]

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _one(self, item):
        """A Reply, or the exception that ended the attempts (returned, not raised, so one bad
        request fails only its own episode and the rest of the batch goes on)."""
        try:
            while True:
                level = self.ladder.level if _constrained(item) else "none"
                try:
                    reply = await self._attempts(item, level)
                except _Rejected as err:
                    self.stats["rejections"] += 1
                    self.ladder.reject(level, str(err))
                    if self.ladder.level == level:      # pinned: nothing lower to try
                        self.stats["failures"] += 1
                        return BackendError(f"{self.url}: structured={level} refused ({err})")
                    continue          # the ladder moved down: ask again one level lower
                if isinstance(reply, Reply):
                    reply.usage["structured"] = level
                return reply
        except Exception as err:                  # a server reply shape nothing above foresaw
            self.stats["failures"] += 1
            return BackendError(f"{self.url}: {type(err).__name__}: {self.redact(str(err))[:200]}")

    async def _attempts(self, item, level: str):
        cfg = self.config
        payload, headers = self._body(item, level), self._headers()
        last = "no attempt made"
        attempts = max(1, cfg.attempts)
        for attempt in range(attempts):
            self.stats["requests"] += 1
            wait = None
            try:
                client = await self._lanes.acquire()
                try:
                    status, retry_after, raw = await asyncio.wait_for(self._exchange(client, payload, headers),
                                                                      cfg.timeout)
                finally:
                    self._lanes.release(client)
                return self._outcome(status, retry_after, raw, level, attempt)
            except _Retryable as err:
                last, wait = str(err), err.retry_after
            except (asyncio.TimeoutError, TimeoutError):
                last = f"timed out after {cfg.timeout}s (the whole request)"
            except BackendError as err:
                self.stats["failures"] += 1
                return err
            if attempt + 1 < attempts:
                self.stats["retries"] += 1
                delay = min(MAX_BACKOFF_S, cfg.backoff * (2 ** attempt))
                if wait is not None:
                    delay = min(MAX_BACKOFF_S, max(delay, wait))
                await asyncio.sleep(delay)
        self.stats["failures"] += 1
        return BackendError(f"{self.url}: gave up after {attempts} attempts; last error: {last}")

    async def _exchange(self, client, payload: bytes, headers: dict):
        """(status, Retry-After seconds or None, body bytes) of one POST, following only
        same-origin 307/308 redirects."""
        import httpx
        url = self.url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with client.stream("POST", url, content=payload, headers=headers) as response:
                    if response.is_redirect:
                        target = response.url.join(response.headers.get("location", ""))
                        if _origin(target) != _origin(self.url) or response.status_code not in (307, 308):
                            raise BackendError(
                                f"{self.url}: HTTP {response.status_code} redirect to {_origin(target)[1]}"
                                f"{'' if _origin(target) == _origin(self.url) else ' (another origin)'} not followed, "
                                f"so the API key stays with {_origin(self.url)[1]}; point the spec at the final URL")
                        url = target
                        continue
                    raw = await _read_limited(response, MAX_BODY_BYTES)
                    return response.status_code, _retry_after(response.headers), raw
            except httpx.TimeoutException as err:
                raise _Retryable(f"timed out after {self.config.timeout}s ({type(err).__name__})") from None
            except (httpx.TransportError, httpx.StreamError) as err:    # refused, reset, body cut short
                raise _Retryable(f"connection error: {self.redact(str(err) or type(err).__name__)[:200]}") from None
        raise BackendError(f"{self.url}: more than {MAX_REDIRECTS} redirects")

    def _outcome(self, status: int, retry_after, raw: bytes, level: str, attempt: int) -> Reply:
        if 200 <= status < 300:
            self._lanes.succeeded()
            return self._reply(raw, attempt)
        detail = self.redact(raw[:300].decode("utf-8", "replace"))
        if level != "none" and (status in (400, 404, 422) or status >= 500) and _names_field(level, detail):
            raise _Rejected(f"HTTP {status}: {detail[:200]}")
        if status == 429:
            self.stats["throttled"] += 1
            self._lanes.throttled()
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}: {detail[:200]}", retry_after)
        raise BackendError(f"{self.url}: HTTP {status} (not retried): {detail[:200]}")

    def _reply(self, raw: bytes, attempt: int) -> Reply:
        """The Reply in a response body; anything malformed (not JSON, huge numbers, deep nesting,
        wrong field types) is an error of this one request, retried like a network fault."""
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError, UnicodeDecodeError):      # JSONDecodeError is a ValueError
            raise _Retryable(f"malformed JSON body: {self.redact(repr(raw[:120]))}") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise _Retryable("reply has no choices")
        choice = choices[0]
        message = choice.get("message", {})
        if not isinstance(message, dict):
            raise _Retryable(f"reply message is a {type(message).__name__}, not an object")
        text = message.get("content")
        if text is None:
            text = choice.get("text")
        # The server's reasoning channel (vLLM / SGLang / llama.cpp reasoning parsers, Ollama).
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        if text is None:
            # no content at all is not an empty answer: a tool call, or reasoning cut off before
            # the answer, or a reply of another API; taking it as "" would play a fallback move
            what = ("a tool call" if message.get("tool_calls") or message.get("function_call")
                    else "reasoning only" if reasoning else "no content")
            raise _Retryable(f"reply holds {what}, no answer text "
                             f"(finish_reason {self.redact(str(choice.get('finish_reason')))[:40]})")
        if not isinstance(text, str):
            raise _Retryable(f"reply content is a {type(text).__name__}, not text")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        details = usage.get("completion_tokens_details")
        details = details if isinstance(details, dict) else {}
        # Stored text (attempts in the log, exports) never holds the key, even when a server echoes it.
        return Reply(self.redact(text), {"prompt_tokens": _count(usage.get("prompt_tokens")),
                                         "new_tokens": _count(usage.get("completion_tokens")),
                                         "reasoning_tokens": _count(details.get("reasoning_tokens")),
                                         "finish_reason": self.redact(str(choice.get("finish_reason")))[:40],
                                         "http_attempts": attempt + 1},
                     reasoning=self.redact(reasoning) if isinstance(reasoning, str) else "")

    def redact(self, text: str) -> str:
        """``text`` without the API key (a server may echo it in an error body) or anything
        shaped like a secret key."""
        key = os.environ.get(self.config.api_key_env)
        if key:
            text = text.replace(key, "[redacted]")
        return _KEY_SHAPED.sub("[redacted]", text)


_TLS = None


def _tls_context():
    """One TLS context for every client of the process (httpx would build one per client, tens
    of ms each): certifi's CA bundle when installed (httpx's own default), else the system's."""
    global _TLS
    if _TLS is None:
        try:
            import certifi
            cafile = certifi.where()
        except ImportError:
            cafile = None
        _TLS = ssl.create_default_context(cafile=cafile)
    return _TLS


def _constrained(item) -> bool:
    return getattr(item, "schema", None) is not None


async def _read_limited(response, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise _Retryable(f"reply body larger than {limit} bytes")
    return b"".join(chunks)


def _retry_after(headers):
    try:
        value = float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None
    return value if 0 <= value < 1e6 else None


def _count(value):
    """A token count from a server's usage block, or None when it is not a plain integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else None
