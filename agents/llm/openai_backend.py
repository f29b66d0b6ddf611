"""OpenAI-compatible chat-completions backend (OpenAI, vLLM, SGLang, Ollama, ...), stdlib only.

Spec: ``openai:<model>@<base_url>`` (e.g. ``openai:gpt-4o-mini@https://api.openai.com/v1``,
``openai:Qwen/Qwen3-4B@http://127.0.0.1:8000/v1``); without ``@`` the base URL is
``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. The API key is read from the environment
variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; may be unset for local servers);
it is sent as a Bearer header and never logged or put in error messages.

Robustness: each request gets ``timeout`` seconds; HTTP 429 and 5xx, timeouts, connection
errors, malformed JSON bodies and replies without choices are retried up to ``attempts`` times
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

import json
import os
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
    def fits(self, messages: list) -> bool:
        limit = self.config.context_chars
        return not limit or sum(len(m["content"]) for m in messages) <= limit

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
        """A Reply, or the exception that ended the attempts (returned, not raised)."""
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
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read(300).decode("utf-8", "replace") if err.fp else ""
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
            raise _Retryable(f"connection error: {reason}") from None
        except (ConnectionError, OSError) as err:
            raise _Retryable(f"connection error: {err}") from None
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _Retryable(f"malformed JSON body: {raw[:120]!r}") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices:
            raise _Retryable("reply has no choices")
        message = choices[0].get("message") or {}
        text = message.get("content")
        if text is None:
            text = choices[0].get("text", "")
        usage = body.get("usage") or {}
        return Reply(str(text), {"prompt_tokens": usage.get("prompt_tokens"),
                                 "new_tokens": usage.get("completion_tokens"),
                                 "finish_reason": choices[0].get("finish_reason"), "http_attempts": attempt + 1})
