"""OpenAI-compatible chat-completions backend (OpenAI, vLLM, SGLang, Ollama, ...), stdlib only.

Spec: ``openai:<model>@<base_url>`` (e.g. ``openai:gpt-4o-mini@https://api.openai.com/v1``,
``openai:Qwen/Qwen3-4B@http://127.0.0.1:8000/v1``); without ``@`` the base URL is
``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. The API key is read from the environment
variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; may be unset for local servers);
it is sent as a Bearer header and never logged: error bodies are redacted of it (and of anything
shaped like a secret key) before they reach a message or the log.

Robustness: each request gets ``timeout`` seconds in all (the whole exchange, however slowly the
server sends); HTTP 429 and 5xx, timeouts, connection
errors, bodies cut short, malformed replies (not JSON, wrong field types, huge numbers, deep
nesting) and replies without choices are retried up to ``attempts`` times
in all, with exponential backoff (``backoff`` seconds, doubling, capped at 30 s; a server's
``Retry-After`` is honoured up to that cap). Other 4xx errors are not retried. A request that
still fails comes back as an exception object in its slot; the policy turns it into
``Decision.error`` and the runner records that episode as failed with the reason. A batch is
sent concurrently by a thread pool of ``concurrency`` workers.

Structured output: a constrained request (``Completion.schema``) is sent with
``response_format={"type": "json_schema", "json_schema": {"name": "action", "schema": ...}}``.
A server that rejects it (HTTP 400/404/422 naming ``response_format``) is asked again without it,
and the backend stops sending it; the policy's re-ask loop then remains the fallback.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from .backend import Reply
from .config import LLMConfig

MAX_BACKOFF_S = 30.0
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class BackendError(RuntimeError):
    """A request that failed for good (after retries, or a non-retryable error)."""


def _rejects_schema(error: str) -> bool:
    """A non-retried HTTP error about the structured-output field."""
    return any(f"HTTP {code}" in error for code in (400, 404, 422)) and \
        any(word in error for word in ("response_format", "json_schema", "schema"))


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def parse_target(target: str) -> tuple[str, str]:
    """``"model@base_url"`` -> (model, base_url)."""
    model, sep, base_url = target.partition("@")
    if not model:
        raise ValueError("openai spec needs a model: openai:<model>@<base_url>")
    if not sep:
        base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return model, base_url.rstrip("/")


class OpenAIBackend:
    kind = "openai"

    def __init__(self, target: str, config: LLMConfig):
        self.model, self.base_url = parse_target(target)
        self.model_name = self.model
        self.config = config
        self.url = f"{self.base_url}/chat/completions"
        self.stats = {"requests": 0, "retries": 0, "failures": 0}
        self.schema_supported = True     # set False once the server rejects response_format

    # The policy asks whether a prompt fits; by default (context_chars=0) everything does.
    def fits(self, messages: list, share: float = 1.0) -> bool:
        """Whether ``messages`` take at most ``share`` of ``context_chars`` (no limit: always)."""
        limit = self.config.context_chars
        return not limit or sum(len(m["content"]) for m in messages) <= limit * share

    def release(self, key: tuple) -> None:
        pass

    def complete(self, items: list) -> list:
        if len(items) <= 1 or self.config.concurrency <= 1:
            return [self._one(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(items))) as pool:
            return list(pool.map(self._one, items))

    # ------------------------------------------------------------------ one request
    def _payload(self, item, with_schema: bool = True) -> bytes:
        cfg = self.config
        body = {"model": self.model, "messages": item.messages, "max_tokens": cfg.max_new_tokens,
                "temperature": cfg.temperature, "seed": item.sample_seed}
        if cfg.top_p < 1.0:
            body["top_p"] = cfg.top_p
        schema = getattr(item, "schema", None)
        if schema and with_schema and self.schema_supported:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "action", "schema": schema}}
        return json.dumps(body).encode("utf-8")

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _one(self, item):
        """A Reply, or the exception that ended the attempts (returned, not raised, so one bad
        request fails only its own episode and the rest of the batch goes on)."""
        try:
            return self._one_with_schema_fallback(item)
        except Exception as err:                  # a server reply shape nothing above foresaw
            self.stats["failures"] += 1
            return BackendError(f"{self.url}: {type(err).__name__}: {self.redact(str(err))[:200]}")

    def _one_with_schema_fallback(self, item):
        reply = self._attempts(item, self._payload(item))
        if isinstance(reply, BackendError) and getattr(item, "schema", None) and _rejects_schema(str(reply)):
            self.schema_supported = False      # this server has no structured output: plain requests
            reply = self._attempts(item, self._payload(item, with_schema=False))
        return reply

    def _attempts(self, item, payload: bytes):
        cfg = self.config
        headers = self._headers()
        last = "no attempt made"
        attempts = max(1, cfg.attempts)
        for attempt in range(attempts):
            self.stats["requests"] += 1
            try:
                return self._post(payload, headers, attempt)
            except _Retryable as err:
                last = str(err)
                if attempt + 1 < attempts:
                    self.stats["retries"] += 1
                    delay = min(MAX_BACKOFF_S, cfg.backoff * (2 ** attempt))
                    if err.retry_after is not None:
                        delay = min(MAX_BACKOFF_S, max(delay, err.retry_after))
                    time.sleep(delay)
            except BackendError as err:
                self.stats["failures"] += 1
                return err
        self.stats["failures"] += 1
        return BackendError(f"{self.url}: gave up after {attempts} attempts; last error: {last}")

    def _post(self, payload: bytes, headers: dict, attempt: int) -> Reply:
        # ``timeout`` bounds the whole request, not each socket read: a server that trickles one
        # byte at a time must not hold a decision past it.
        deadline = time.monotonic() + self.config.timeout
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                raw = _read_until(response, deadline, MAX_BODY_BYTES)
        except urllib.error.HTTPError as err:
            detail = self.redact(err.read(300).decode("utf-8", "replace") if err.fp else "")
            if err.code in RETRY_STATUS or err.code >= 500:
                retry_after = None
                try:
                    retry_after = float(err.headers.get("Retry-After")) if err.headers else None
                except (TypeError, ValueError):
                    pass
                raise _Retryable(f"HTTP {err.code}: {detail[:200]}", retry_after) from None
            raise BackendError(f"{self.url}: HTTP {err.code} (not retried): {detail[:200]}") from None
        except (socket.timeout, TimeoutError) as err:
            raise _Retryable(f"timed out after {self.config.timeout}s ({err})") from None
        except urllib.error.URLError as err:
            reason = err.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise _Retryable(f"timed out after {self.config.timeout}s") from None
            raise _Retryable(f"connection error: {self.redact(str(reason))}") from None
        except (ConnectionError, OSError, http.client.HTTPException) as err:   # incl. a body cut short
            raise _Retryable(f"connection error: {self.redact(str(err))[:200]}") from None
        return self._reply(raw, attempt)

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
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if text is None:
            text = choice.get("text", "")
        if not isinstance(text, str):
            raise _Retryable(f"reply content is a {type(text).__name__}, not text")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Reply(text, {"prompt_tokens": _count(usage.get("prompt_tokens")),
                            "new_tokens": _count(usage.get("completion_tokens")),
                            "finish_reason": str(choice.get("finish_reason"))[:40], "http_attempts": attempt + 1})

    def redact(self, text: str) -> str:
        """``text`` without the API key (a server may echo it in an error body) or anything
        shaped like a secret key."""
        key = os.environ.get(self.config.api_key_env)
        if key:
            text = text.replace(key, "[redacted]")
        return _KEY_SHAPED.sub("[redacted]", text)


MAX_BODY_BYTES = 8 << 20       # a chat completion is kilobytes; stop reading a runaway body
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*]{8,}")


def _read_until(response, deadline: float, limit: int) -> bytes:
    """The whole body, or socket.timeout once ``deadline`` (time.monotonic) has passed."""
    sock = getattr(getattr(response.fp, "raw", None), "_sock", None)
    chunks, size = [], 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("the whole request took longer than the timeout")
        if sock is not None:
            sock.settimeout(remaining)
        chunk = response.read1(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise http.client.HTTPException(f"reply body larger than {limit} bytes")


def _count(value):
    """A token count from a server's usage block, or None when it is not a plain integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else None
