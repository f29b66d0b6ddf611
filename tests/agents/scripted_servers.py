"""Scripted OpenAI-compatible servers on 127.0.0.1 that behave like real ones towards the
structured-output fields (each one's documented behaviour), a redirecting server, and a
header-capturing one. A "model" here answers legally when a constraint it enforces is in the
request (an instance of the JSON schema, or the shortest string of the GBNF grammar), and like a
weak free model otherwise: prose first, the re-ask's example when re-asked."""
import json
import re
import threading
import time

from socialgym_agents.serve import offline_model
from socialgym_agents.serve.offline_model import LocalServer, QuietHandler  # noqa: F401  (tests import them from here)

# Per server: the levels it enforces; what it does with the others ("ignore": 200 and free
# generation; or a (status, message) rejection); and how it treats unknown top-level fields.
UNRECOGNIZED = (400, "Unrecognized request argument supplied: {field}")
BEHAVIOURS = {
    # OpenAI: json_schema enforced; unknown request fields are 400 invalid_request_error.
    "openai": {"enforces": {"json_schema"}, "unknown": UNRECOGNIZED},
    # An OpenAI model without structured outputs (gpt-3.5-turbo class): json_schema refused with
    # 400, no schema inside json_object, unknown fields 400 -> free text with re-asks.
    "openai-legacy": {"enforces": set(), "unknown": UNRECOGNIZED, "reject": {
        "json_schema": (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
                             "with this model."),
        "json_object": (400, "Additional properties are not allowed ('schema' was unexpected) - 'response_format'")}},
    # vLLM: json_schema / structured_outputs / guided_json enforced; unknown fields (and a schema
    # inside json_object) ignored with a warning "fields present in the request but ignored".
    "vllm": {"enforces": {"json_schema", "structured_outputs", "guided_json"}, "unknown": "ignore"},
    # SGLang: response_format json_schema enforced, unknown fields ignored.
    "sglang": {"enforces": {"json_schema"}, "unknown": "ignore"},
    # Ollama (OpenAI compatibility, >= 0.5): json_schema enforced as `format`, unknown fields ignored.
    "ollama": {"enforces": {"json_schema"}, "unknown": "ignore"},
    # llama-cpp-python's server: json_schema is HTTP 500; json_object with a schema enforced.
    "llama-cpp-python": {"enforces": {"json_object", "grammar"}, "unknown": "ignore", "reject": {
        "json_schema": (500, "response_format type must be one of \"text\" or \"json_object\", "
                             "but got: json_schema")}},
    # A llama.cpp server that accepts response_format without enforcing it (llama.cpp issues
    # 24096 / 24097) but applies `grammar`: only the replies tell the ladder.
    "llama.cpp-ignoring": {"enforces": {"grammar"}, "unknown": "ignore"},
}


def _level_of(body: dict):
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return fmt["type"], "response_format"
    for field in ("structured_outputs", "guided_json", "grammar"):
        if field in body:
            return field, field
    return None, None


REASONING = "my private plan 42"     # what the scripted model "thinks" (found in no public text)


def schema_instance(schema: dict, pick: int = 0):
    """A value valid under the (small subset of) JSON schema our action schemas use (the offline
    model's, with REASONING in a ``reasoning`` field)."""
    return offline_model.schema_instance(schema, pick, REASONING)


_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z0-9_-]+|\(|\)|\||\{\d+,\d+\}|[*+?])')


def gbnf_shortest(grammar: str) -> str:
    """A string the GBNF grammar derives: first alternatives, fewest repetitions, 'x' for a
    character class (the classes our grammars use all allow it)."""
    rules = {}
    for line in grammar.strip().splitlines():
        name, _, body = line.partition("::=")
        rules[name.strip()] = _TOKEN.findall(body)

    def sequence(tokens, i):
        out = ""
        while i < len(tokens) and tokens[i] not in ("|", ")"):
            text, i = item(tokens, i)
            if i < len(tokens) and tokens[i].startswith("{"):
                low = int(tokens[i][1:].split(",")[0])
                text, i = text * low, i + 1
            elif i < len(tokens) and tokens[i] in "*?":
                text, i = "", i + 1
            elif i < len(tokens) and tokens[i] == "+":
                i += 1
            out += text
        return out, i

    def alternatives(tokens, i):
        first, i = sequence(tokens, i)
        while i < len(tokens) and tokens[i] == "|":
            _, i = sequence(tokens, i + 1)
        return first, i

    def item(tokens, i):
        token = tokens[i]
        if token == "(":
            text, i = alternatives(tokens, i + 1)
            return text, i + 1
        if token.startswith('"'):
            return re.sub(r"\\x([0-9a-f]{2})|\\(.)", lambda m: chr(int(m[1], 16)) if m[1] else m[2], token[1:-1]), i + 1
        if token.startswith("["):
            return "x", i + 1
        return alternatives(rules[token], 0)[0], i + 1

    return alternatives(rules["root"], 0)[0]


class ScriptedServer(LocalServer):
    """``kind`` from BEHAVIOURS. ``latency``: seconds before each answer; ``reasoning_channel``:
    also send ``message.reasoning_content``; ``max_in_flight``: 429 past that many at once."""

    def __init__(self, kind="openai", latency=0.0, reasoning_channel=False, max_in_flight=0, port=0):
        self.behaviour = BEHAVIOURS[kind]
        self.latency = latency
        self.reasoning_channel = reasoning_channel
        self.max_in_flight = max_in_flight
        self.requests, self.levels = [], []
        self.in_flight = self.peak = self.throttled = 0
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.body())
                with server.lock:
                    server.requests.append(body)
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                    busy = server.max_in_flight and server.in_flight > server.max_in_flight
                try:
                    if busy:
                        with server.lock:
                            server.throttled += 1
                        return self.send(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": "0.05"})
                    if server.latency:
                        time.sleep(server.latency)
                    status, payload = server.answer(body)
                    self.send(status, json.dumps(payload).encode())
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.serve(Handler, port)

    def answer(self, body: dict):
        behaviour = self.behaviour
        level, field = _level_of(body)
        with self.lock:
            self.levels.append(level)
        rejection = (behaviour.get("reject") or {}).get(level)
        if rejection is None and level and level not in behaviour["enforces"] and field != "response_format" \
                and behaviour["unknown"] != "ignore":
            rejection = behaviour["unknown"]
        if rejection is not None:
            status, message = rejection
            return status, {"error": {"message": message.format(field=field), "type": "invalid_request_error",
                                      "param": field, "code": None}}
        messages = body["messages"]
        pick = len(messages) + len(str(messages[-1]["content"]))
        if level in behaviour["enforces"]:
            if level == "grammar":
                text = gbnf_shortest(body["grammar"])
            else:
                schema = {"json_schema": lambda: body["response_format"]["json_schema"]["schema"],
                          "json_object": lambda: body["response_format"]["schema"],
                          "structured_outputs": lambda: body["structured_outputs"]["json"],
                          "guided_json": lambda: body["guided_json"]}[level]()
                text = json.dumps(schema_instance(schema, pick))
        else:
            text = self.free_text(messages)
        message = {"role": "assistant", "content": text}
        if self.reasoning_channel:
            message["reasoning_content"] = "I weigh my options privately."
        return 200, {"choices": [{"message": message, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 20, "completion_tokens": 9,
                               "completion_tokens_details": {"reasoning_tokens": 6 if self.reasoning_channel else 0}}}

    @staticmethod
    def free_text(messages) -> str:
        """A weak free model: prose at first, the example of the re-ask when re-asked."""
        last = messages[-1]["content"]
        if "could not be used" in last and "for example: " in last:
            return last.split("for example: ", 1)[1].strip()
        return "I think I will play it safe this time."



class CaptureServer(LocalServer):
    """Answers every request (any method) with a chat completion and keeps its headers."""

    def __init__(self):
        self.headers = []
        server = self

        class Handler(QuietHandler):
            def _any(self):
                server.headers.append(dict(self.headers))
                self.body()
                self.send(200, json.dumps({"choices": [{"message": {"content": '{"action_type": "defect"}'}}]}).encode())

            do_POST = do_GET = _any

        self.serve(Handler)


class RedirectServer(LocalServer):
    """Answers every POST with ``status`` and ``Location: <target>``; keeps the headers."""

    def __init__(self, target: str, status: int = 302):
        self.headers = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self):
                server.headers.append(dict(self.headers))
                self.body()
                self.send(status, headers={"Location": target})

        self.serve(Handler)
