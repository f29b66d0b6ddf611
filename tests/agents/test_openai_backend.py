"""The OpenAI-compatible backend against a real HTTP server on 127.0.0.1 that injects faults."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from socialgym_agents.llm.backend import Completion
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.openai_backend import BackendError, OpenAIBackend
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_env.logs import read_episodes

from scripted_servers import LocalServer

GOOD = '{"action_type": "defect", "argument": ""}'


class FaultServer(LocalServer):
    """Serves /v1/chat/completions; ``plan`` is a list of faults consumed one per request
    ("500", "429", "slow", "badjson", "nochoices", "400", "ok"); then every request is "ok"."""

    def __init__(self, plan=(), slow_s=0.5):
        self.plan = list(plan)
        self.slow_s = slow_s
        self.requests = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server.lock:
                    server.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                    fault = server.plan.pop(0) if server.plan else "ok"
                if fault == "slow":
                    time.sleep(server.slow_s)
                if fault == "400schema":
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(b'{"error": "response_format json_schema is not supported"}')
                    return
                if fault in ("500", "429", "400"):
                    self.send_response(int(fault))
                    if fault == "429":
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "injected"}')
                    return
                if fault == "keyecho":
                    self.send_response(401)
                    self.end_headers()
                    self.wfile.write(("Incorrect API key provided: " + (self.headers.get("Authorization") or "")
                                      + " (also sk-proj-abcdefgh1234)").encode())
                    return
                if fault == "trickle":         # one byte every 0.05 s, for ever (well, 20 s)
                    self.send_response(200)
                    self.send_header("Content-Length", "400")
                    self.end_headers()
                    try:
                        for _ in range(400):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.05)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                if fault == "cutshort":        # promises 500 bytes, sends 20, hangs up
                    self.send_response(200)
                    self.send_header("Content-Length", "500")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"mess')
                    return
                if fault == "badjson":
                    payload = b'{"choices": [ {"message": '
                elif fault == "hugeint":
                    payload = b'{"choices": [], "usage": ' + b"9" * 5000 + b"}"
                elif fault == "deepjson":
                    payload = b'{"choices": ' + b"[" * 5000 + b"]" * 5000 + b"}"
                elif fault == "wrongtypes":
                    payload = json.dumps({"choices": ["not a dict"], "usage": "lots"}).encode()
                elif fault == "nestedcontent":
                    payload = json.dumps({"choices": [{"message": {"content": {"action_type": "defect"}}}],
                                          "usage": [1]}).encode()
                elif fault == "messagelist":
                    payload = json.dumps({"choices": [{"message": [1, 2]}]}).encode()
                elif fault == "reasoningonly":
                    payload = json.dumps({"choices": [{"message": {"content": None, "reasoning_content": "hmm"},
                                                       "finish_reason": "length"}]}).encode()
                elif fault == "toolcall":
                    payload = json.dumps({"choices": [{"message": {"content": None, "tool_calls": [
                        {"type": "function", "function": {"name": "act", "arguments": "{}"}}]},
                        "finish_reason": "tool_calls"}]}).encode()
                elif fault == "keyecho200":       # a normal reply that quotes the Authorization header
                    echo = (self.headers.get("Authorization") or "").split()[-1]
                    payload = json.dumps({"choices": [{"message": {
                        "content": f'{{"action_type": "defect", "argument": ""}} key {echo}',
                        "reasoning_content": f"the key is {echo}"}, "finish_reason": f"stop {echo}"}]}).encode()
                elif fault == "nochoices":
                    payload = json.dumps({"choices": []}).encode()
                else:
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": GOOD},
                                                       "finish_reason": "stop"}],
                                          "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.serve(Handler)


FAST = "timeout=0.2&backoff=0.001&attempts=4&concurrency=4"


def _backend(server, options=FAST):
    return OpenAIBackend(f"test-model@{server.url}", parse_options(options))


def _item(i=0):
    return Completion(("ep", f"p{i}"), [{"role": "user", "content": "hi"}], sample_seed=i)


@pytest.mark.parametrize("fault", ["500", "429", "slow", "badjson", "nochoices", "hugeint", "deepjson",
                                   "wrongtypes", "nestedcontent", "cutshort", "messagelist", "reasoningonly",
                                   "toolcall"])
def test_transient_faults_are_retried(fault):
    # "slow" times out twice: its margins (1 s timeout, 2 s delay) are wide enough that a good
    # reply on a loaded machine still beats the timeout (0.2 s did not, once in a full run)
    slow = fault == "slow"
    with FaultServer([fault, fault], slow_s=2.0 if slow else 0.5) as server:
        reply = _backend(server, FAST.replace("timeout=0.2", "timeout=1") if slow else FAST).complete([_item()])[0]
    assert reply.text == GOOD and reply.usage["http_attempts"] == 3
    assert len(server.requests) == 3


def test_gives_up_after_bounded_attempts_with_the_reason():
    with FaultServer(["500"] * 10) as server:
        started = time.monotonic()
        reply = _backend(server).complete([_item()])[0]
    assert isinstance(reply, BackendError) and "4 attempts" in str(reply) and "HTTP 500" in str(reply)
    assert len(server.requests) == 4 and time.monotonic() - started < 5


def test_client_errors_are_not_retried():
    with FaultServer(["400"]) as server:
        reply = _backend(server).complete([_item()])[0]
    assert isinstance(reply, BackendError) and "HTTP 400" in str(reply) and len(server.requests) == 1


def test_connection_refused_is_an_error_not_a_hang():
    backend = OpenAIBackend("m@http://127.0.0.1:9/v1", parse_options("timeout=0.2&backoff=0.001&attempts=2"))
    reply = backend.complete([_item()])[0]
    assert isinstance(reply, BackendError) and "connection error" in str(reply)


def test_batch_is_concurrent_and_the_key_is_sent_never_logged(monkeypatch):
    monkeypatch.setenv("SG_TEST_KEY", "sk-secret-123")
    with FaultServer(["slow"] * 4, slow_s=0.15) as server:
        backend = _backend(server, "timeout=2&backoff=0.001&concurrency=4&api_key_env=SG_TEST_KEY")
        started = time.monotonic()
        replies = backend.complete([_item(i) for i in range(4)])
        elapsed = time.monotonic() - started
    assert all(r.text == GOOD for r in replies)
    assert elapsed < 0.5          # 4 x 0.15 s sequentially would be >= 0.6 s
    assert {r["auth"] for r in server.requests} == {"Bearer sk-secret-123"}
    body = server.requests[0]["body"]
    assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["messages"][0]["content"] == "hi"


def test_episodes_complete_through_faults_or_are_recorded_failed(tmp_path):
    spec_ok = None
    with FaultServer(["500", "slow", "badjson", "nochoices", "429"]) as server:
        # the first constrained request probes the server alone, so it may meet all 5 faults
        spec_ok = f"openai:test-model@{server.url}?{FAST}".replace("attempts=4", "attempts=6")
        jobs = [EpisodeJob("prisoners_dilemma", s, [spec_ok, spec_ok], config={"rounds": 2}) for s in range(3)]
        log = tmp_path / "log.jsonl"
        records = run_jobs(jobs, PolicyPool(), log_path=log)
    assert all(r["finished"] and not r.get("failed") for r in records)
    assert all(t["valid"] and t["agent_meta"]["backend"] == "openai" for r in records for t in r["turns"])
    assert len(list(read_episodes(log))) == 3
    assert "sk-" not in log.read_text()
    # A server that stays down: every episode is logged as failed with the reason.
    with FaultServer(["500"] * 1000) as server:
        spec_down = f"openai:test-model@{server.url}?timeout=0.2&backoff=0.001&attempts=2"
        jobs = [EpisodeJob("prisoners_dilemma", s, [spec_down, "scripted:random"], config={"rounds": 2})
                for s in range(2)]
        log = tmp_path / "down.jsonl"
        records = run_jobs(jobs, PolicyPool(), log_path=log)
    assert all(r["failed"] and "HTTP 500" in r["error"] for r in records)
    assert {r["episode_id"] for r in read_episodes(log)} == {j.episode_id for j in jobs}


def test_constrained_requests_carry_the_schema_and_step_down_when_the_server_rejects_it():
    schema = {"oneOf": [{"properties": {"action_type": {"const": "defect"}}}]}
    item = Completion(("ep", "p0"), [{"role": "user", "content": "hi"}], schema=schema)
    with FaultServer(["400schema"]) as server:
        backend = _backend(server)
        first = backend.complete([item])[0]
        second = backend.complete([item])[0]
    assert first.text == GOOD and second.text == GOOD
    sent = [r["body"] for r in server.requests]
    assert sent[0]["response_format"]["json_schema"]["schema"] == schema
    # rejected once: asked again one rung lower, and that rung is kept for this endpoint
    assert [b["response_format"]["type"] for b in sent[1:]] == ["json_object", "json_object"]
    assert sent[1]["response_format"]["schema"] == schema and len(sent) == 3
    assert backend.ladder.level == "json_object" and first.usage["structured"] == "json_object"


def test_the_timeout_bounds_the_whole_request_not_each_read():
    with FaultServer(["trickle"]) as server:
        backend = _backend(server, "timeout=0.5&backoff=0.001&attempts=1")
        started = time.monotonic()
        reply = backend.complete([_item()])[0]
        elapsed = time.monotonic() - started
    assert isinstance(reply, BackendError) and "timed out" in str(reply)
    assert elapsed < 1.5                      # the trickle would take 20 s


def test_an_error_body_echoing_the_key_is_redacted(monkeypatch, tmp_path):
    monkeypatch.setenv("SG_TEST_KEY", "sk-secret-key-9876")
    with FaultServer(["keyecho"]) as server:
        spec = f"openai:test-model@{server.url}?timeout=1&backoff=0.001&attempts=1&api_key_env=SG_TEST_KEY"
        log = tmp_path / "log.jsonl"
        records = run_jobs([EpisodeJob("prisoners_dilemma", 0, [spec, "scripted:random"])], PolicyPool(),
                           log_path=log)
    assert records[0]["failed"] and "HTTP 401" in records[0]["error"] and "[redacted]" in records[0]["error"]
    text = log.read_text()
    assert "sk-secret-key-9876" not in text and "abcdefgh1234" not in text


def test_a_normal_reply_echoing_the_key_is_stored_redacted(monkeypatch, tmp_path):
    """The key appears nowhere in the log (the attempts' replies, reasoning, finish reasons) when a
    server quotes it inside a normal 200 reply."""
    key = "not-key-shaped-secret-5555"       # the key itself, not only what looks like one
    monkeypatch.setenv("SG_TEST_KEY", key)
    with FaultServer(["keyecho200"] * 50) as server:
        spec = f"openai:test-model@{server.url}?timeout=1&backoff=0.001&attempts=1&api_key_env=SG_TEST_KEY"
        log = tmp_path / "log.jsonl"
        records = run_jobs([EpisodeJob("prisoners_dilemma", 0, [spec, "scripted:random"], config={"rounds": 2})],
                           PolicyPool(), log_path=log)
    assert records[0]["finished"] and all(r["auth"] == f"Bearer {key}" for r in server.requests)
    text = log.read_text()
    assert "[redacted]" in text and key not in text     # exports and replays are made from this log


def test_one_malformed_reply_fails_only_its_own_episode(tmp_path):
    with FaultServer(["wrongtypes"] * 2) as server:
        spec = f"openai:test-model@{server.url}?timeout=1&backoff=0.001&attempts=2&concurrency=1"
        jobs = [EpisodeJob("prisoners_dilemma", s, [spec, "scripted:random"], config={"rounds": 2}) for s in range(3)]
        records = run_jobs(jobs, PolicyPool(), log_path=tmp_path / "log.jsonl")
    failed = [r for r in records if r.get("failed")]
    assert len(failed) == 1 and "reply has no choices" in failed[0]["error"]
    assert sum(1 for r in records if r.get("finished")) == 2
