"""A stand-in OpenAI-compatible model server that plays legal moves, for trying a route offline.

Every training and evaluation route that talks to a model server (``openai:`` specs, ``vf-eval``,
prime-rl, an OpenEnv client's policy) can be tried end to end without a GPU, weights or network
against this server: it answers ``POST /v1/chat/completions`` (and lists itself at ``GET
/v1/models``) with a legal move of whatever game asks --

- an instance of the request's JSON schema when the request constrains the reply
  (``response_format`` ``json_schema``, or ``json_object`` with a schema; ``structured_outputs`` /
  ``guided_json``): the first choice of every list, so an ``openai:`` policy's constrained
  decoding gets a legal action;
- otherwise the first move of the last ``Legal moves: a; b; ...`` (or ``Legal actions:``) line
  of the last user message, as the verifiers environment and the game prompts list them; else
  ``pass``.

It learns nothing and decides nothing: a route's plumbing (requests, traces, rewards, logs) runs,
its numbers mean nothing. Run it with::

    python -m socialgym_agents.serve.offline_model --port 8001      # http://127.0.0.1:8001/v1

and give ``http://127.0.0.1:8001/v1`` as the base URL (any model name, any API key). The tests
use the same server (:class:`OfflineModel`, on a free port).
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

LEGAL = re.compile(r"Legal (?:moves|actions): *(.*)")


def schema_instance(schema: dict, pick: int = 0, reasoning: str = "thinking"):
    """A value valid under the (small subset of) JSON schema the action schemas use: constants,
    enums (entry ``pick``), anyOf/oneOf (branch ``pick``), objects, integers (their minimum),
    arrays, strings (``reasoning`` for a ``reasoning`` field)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return schema_instance(branches[pick % len(branches)], pick, reasoning)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: reasoning if k == "reasoning" else schema_instance(v, pick, reasoning)
                for k, v in (schema.get("properties") or {}).items()}
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "array":
        return [schema_instance(item, pick, reasoning) for item in schema.get("items") or []]
    if schema.get("maxLength") == 0:
        return ""
    return "x" * max(1, schema.get("minLength", 1))


def request_schema(body: dict) -> Optional[dict]:
    """The JSON schema a chat request constrains its reply to (None: free text)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if isinstance(fmt, dict) and fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):
        return fmt["schema"]
    for field in ("structured_outputs", "guided_json"):
        value = body.get(field)
        value = value.get("json") if isinstance(value, dict) and "json" in value else value
        if isinstance(value, dict):
            return value
    return None


def legal_move(body: dict) -> str:
    """The offline model's reply to a chat request (see the module docstring)."""
    schema = request_schema(body)
    if schema is not None:
        return json.dumps(schema_instance(schema))
    users = [m.get("content") for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "user"]
    text = users[-1] if users and isinstance(users[-1], str) else ""
    listed = LEGAL.findall(text)
    moves = re.split(r";\s*|,\s*", listed[-1].strip()) if listed else []
    return moves[0] if moves and moves[0] else "pass"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256        # the listen backlog: a 64-wide burst of new connections fits


class LocalServer:
    """A threaded HTTP server (127.0.0.1 and a free port unless given), started and stopped by
    ``with``; ``handler`` is its BaseHTTPRequestHandler class."""

    def serve(self, handler, port: int = 0, host: str = "127.0.0.1") -> None:
        self.httpd = _Server((host, port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))

    def send(self, status: int, data: bytes = b"", headers=None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class OfflineModel(LocalServer):
    """The offline model on ``host:port`` (0: a free port); ``replies``: a list each answer is
    appended to as (model asked for, the request's first user message, the reply)."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", replies: Optional[list] = None):
        server = self

        class Handler(QuietHandler):
            def do_GET(self):
                if self.path.rstrip("/") != "/v1/models":
                    return self.send(404, b'{"error": {"message": "not found"}}')
                self.send(200, json.dumps({"object": "list", "data": [{"id": "offline", "object": "model"}]}).encode())

            def do_POST(self):
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self.send(404, b'{"error": {"message": "only /v1/chat/completions"}}')
                try:
                    body = json.loads(self.body() or b"{}")
                except ValueError:
                    return self.send(400, b'{"error": {"message": "the body is not JSON"}}')
                self.send(200, json.dumps(server.answer(body)).encode())

        self.replies = replies
        self.count = 0
        self.lock = threading.Lock()
        self.serve(Handler, port, host)

    def answer(self, body: dict) -> dict:
        reply = legal_move(body)
        with self.lock:
            self.count += 1
            number = self.count
            if self.replies is not None:
                users = [m.get("content") for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "user"]
                self.replies.append((body.get("model"), users[0] if users else None, reply))
        return {"id": f"offline-{number}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model") or "offline",
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}]}


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m socialgym_agents.serve.offline_model",
                                     description="An OpenAI-compatible server that plays a legal move of any "
                                                 "game, for trying a route offline (it learns nothing).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="TCP port (default 8001; 0: a free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, got {args.port}")
    try:
        server = OfflineModel(args.port, args.host)
    except OSError as err:
        parser.error(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}")
    print(f"offline model on {server.url} (any model name, any API key; Ctrl-C stops it)", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
