"""The server backend against scripted vLLM / SGLang / llama.cpp / Ollama / OpenAI servers: the
structured-output ladder, think-then-act, concurrency, 429 back-pressure, redirects."""
import json

import pytest

import socialgym_env
from socialgym_agents.llm.backend import Completion
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.constraint import reply_grammar, thinking_grammar, to_gbnf
from socialgym_agents.llm.openai_backend import BackendError, OpenAIBackend
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs

from helpers import decision_infos
from scripted_servers import REASONING, CaptureServer, RedirectServer, ScriptedServer, gbnf_shortest

FAST = "timeout=2&backoff=0.001&attempts=3"

EXPECTED_LEVEL = {"openai": "json_schema", "vllm": "json_schema", "sglang": "json_schema", "ollama": "json_schema",
                  "llama-cpp-python": "json_object", "llama.cpp-ignoring": "grammar", "openai-legacy": "none"}


def _play(spec, game, seeds, **config):
    jobs = [EpisodeJob(game, s, [spec] * len(socialgym_env.make(game).possible_agents), config=config)
            for s in seeds]
    return run_jobs(jobs, PolicyPool())


def _llm_turns(records):
    return [t for r in records for t in r["turns"] if t.get("agent_meta")]


@pytest.mark.parametrize("kind", sorted(EXPECTED_LEVEL))
def test_each_server_lands_on_a_level_it_enforces_and_every_decision_is_legal(kind):
    with ScriptedServer(kind) as server:
        spec = f"openai:m@{server.url}?{FAST}"
        # a silent server costs a tick per rung (up to five rungs to descend); ten rounds leave room for
        # replies still in flight when a rung is dropped
        learning = _play(spec, "prisoners_dilemma", range(3), rounds=10)
        backend = PolicyPool().get(spec).backend
        settled = len(server.requests)
        played = _play(spec, "prisoners_dilemma", range(3, 6), rounds=3) + \
            _play(spec, "battle_of_the_sexes", range(2), rounds=2)
    assert backend.ladder.level == EXPECTED_LEVEL[kind], backend.ladder.events
    assert all(r["finished"] and not r.get("failed") for r in learning + played)
    assert all(t["valid"] and not t.get("fallback") for t in _llm_turns(learning + played)
               if t["phase"] != "talk" or kind != "openai-legacy")
    after = [level for level in server.levels[settled:] if level]
    expected_field = None if EXPECTED_LEVEL[kind] == "none" else EXPECTED_LEVEL[kind]
    assert set(after) <= {expected_field}
    if kind != "openai-legacy":       # once settled, the first reply is legal: no re-ask at all
        assert all(len(t["agent_meta"]["attempts"]) == 1 for t in _llm_turns(played))


def test_the_probe_goes_alone_once_and_a_500_naming_the_field_is_a_rejection():
    with ScriptedServer("llama-cpp-python") as server:
        backend = OpenAIBackend(f"m@{server.url}", parse_options(FAST))
        info = _info("prisoners_dilemma")
        grammar = reply_grammar(info)
        items = [Completion(("ep", f"p{i}"), [{"role": "user", "content": f"hi {i}"}], i, grammar,
                            grammar.json_schema(info)) for i in range(8)]
        replies = backend.complete(items) + backend.complete(items)
    assert all(not isinstance(r, BaseException) and grammar.accepts(r.text) for r in replies)
    # one json_schema request (refused with 500, not retried), then json_object for all 16
    assert server.levels == ["json_schema"] + ["json_object"] * 16
    assert backend.stats["rejections"] == 1 and backend.stats["retries"] == 0
    assert backend.ladder.events[0][0] == "json_schema" and "500" in backend.ladder.events[0][1]


def test_a_pinned_level_is_sent_as_is_and_its_refusal_is_an_error():
    with ScriptedServer("openai") as server:
        backend = OpenAIBackend(f"m@{server.url}", parse_options(FAST + "&structured=grammar"))
        info = _info("prisoners_dilemma")
        grammar = reply_grammar(info)
        reply = backend.complete([Completion(("ep", "p"), [{"role": "user", "content": "x"}], 0, grammar,
                                             grammar.json_schema(info))])[0]
    assert isinstance(reply, BackendError) and "structured=grammar refused" in str(reply)
    assert "grammar" in server.requests[0] and len(server.requests) == 1


def _info(game, seed=0, phase=None):
    for _, _, info in decision_infos(game, seed):
        if phase is None or info.get("phase") == phase:
            return info
    raise AssertionError(f"no {phase} phase in {game}")


@pytest.mark.parametrize("game, phase", [("prisoners_dilemma", None), ("battle_of_the_sexes", "talk"),
                                         ("chameleon", "clue"), ("chameleon", "vote"), ("liars_dice", None),
                                         ("bargaining", "propose")])
@pytest.mark.parametrize("think", [0, 12])
def test_the_gbnf_grammar_derives_legal_replies(game, phase, think):
    info = _info(game, phase=phase)
    grammar = reply_grammar(info)
    grammar = thinking_grammar(grammar, think) if think else grammar
    text = gbnf_shortest(to_gbnf(grammar))
    assert grammar.accepts(text), text
    from socialgym_agents.llm.parsing import parse_reply
    assert parse_reply(text, info)["action_type"] in info["action_types"]


def test_think_on_a_server_asks_for_a_reasoning_field_and_keeps_it_private():
    with ScriptedServer("vllm", reasoning_channel=True) as server:
        spec = f"openai:m@{server.url}?{FAST}&think=24"
        records = _play(spec, "battle_of_the_sexes", [0], rounds=2)
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", "action"] and server.requests[0]["max_tokens"] == 64 + 24
    assert "reasoning" in server.requests[0]["messages"][-1]["content"]
    turns = _llm_turns(records)
    assert turns and all(t["valid"] for t in turns)
    assert all(t["agent_meta"]["reasoning"] == REASONING and t["agent_meta"]["reasoning_tokens"] == 6
               for t in turns)
    assert all(t["agent_meta"]["attempts"][-1]["reasoning"] == "I weigh my options privately." for t in turns)
    # private: no public line, no action played and no other seat's prompt shows it
    public = json.dumps(records[0]["transcript"]) + json.dumps([t["action"] for t in records[0]["turns"]])
    assert REASONING not in public
    assert not any(REASONING in m["content"] for body in server.requests for m in body["messages"]
                   if m["role"] == "user")


def test_all_decisions_of_a_batch_are_in_flight_together():
    # each reply takes 1 s, so all 64 requests overlap in the server even on a loaded 2-core machine
    # (at 0.2 s a loaded run saw only 45 at once)
    with ScriptedServer("vllm", latency=1.0) as server:
        backend = OpenAIBackend(f"m@{server.url}", parse_options(FAST))
        replies = backend.complete([Completion(("ep", f"p{i}"), [{"role": "user", "content": "hi"}], i)
                                    for i in range(64)])
    assert all(not isinstance(r, BaseException) for r in replies)
    assert server.peak >= 60 and backend.peak_in_flight == 64


def test_429_back_pressure_shrinks_the_window_and_every_request_completes():
    with ScriptedServer("vllm", latency=0.05, max_in_flight=8) as server:
        backend = OpenAIBackend(f"m@{server.url}", parse_options("timeout=5&backoff=0.01&attempts=8"))
        replies = backend.complete([Completion(("ep", f"p{i}"), [{"role": "user", "content": "hi"}], i)
                                    for i in range(48)])
    assert all(not isinstance(r, BaseException) for r in replies)
    assert server.throttled > 0 and backend.stats["throttled"] == server.throttled
    assert backend._lanes.limit < 48          # it learnt to send fewer at once


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_the_key_never_follows_a_redirect_to_another_origin(monkeypatch, status):
    monkeypatch.setenv("SG_TEST_KEY", "sk-redirect-secret-1234")
    with CaptureServer() as capture:
        target = f"http://127.0.0.1:{capture.port}/v1/chat/completions"
        with RedirectServer(target, status) as redirect:
            url = f"http://127.0.0.1:{redirect.port}/v1"
            backend = OpenAIBackend(f"m@{url}", parse_options(FAST + "&api_key_env=SG_TEST_KEY"))
            replies = backend.complete([Completion(("ep", f"p{i}"), [{"role": "user", "content": "hi"}], i)
                                        for i in range(25)])
    assert capture.headers == []                   # 0 of 25 reached the other port
    assert len(redirect.headers) == 25 and {h["Authorization"] for h in redirect.headers} == \
        {"Bearer sk-redirect-secret-1234"}
    assert all(isinstance(r, BackendError) and "not followed" in str(r) and "sk-redirect" not in str(r)
               for r in replies)


def test_a_redirected_episode_is_recorded_failed_with_the_reason(monkeypatch):
    monkeypatch.setenv("SG_TEST_KEY", "sk-redirect-secret-1234")
    with CaptureServer() as capture:
        with RedirectServer(f"http://127.0.0.1:{capture.port}/v1/chat/completions") as redirect:
            spec = f"openai:m@http://127.0.0.1:{redirect.port}/v1?{FAST}&api_key_env=SG_TEST_KEY"
            records = run_jobs([EpisodeJob("prisoners_dilemma", 0, [spec, "scripted:random"])], PolicyPool())
    assert records[0]["failed"] and "redirect" in records[0]["error"] and capture.headers == []


@pytest.mark.parametrize("query, words", [("think=-3", "think"), ("think=30&max_new_tokens=20", "max_new_tokens"),
                                          ("structured=xml", "json_schema"), ("concurrency=0", "concurrency"),
                                          ("think=4&mode=score", "mode=score"), ("timeout=0", "timeout"),
                                          ("think=lots", "think")])
def test_bad_server_options_are_refused_when_the_spec_is_parsed(query, words):
    with pytest.raises(ValueError, match=words):
        parse_options(query)


def test_a_base_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="http"):
        OpenAIBackend("m@notaurl", parse_options(""))


def test_a_forked_child_gets_its_own_event_loop():
    """A process forked after the first request (a worker pool) must not wait for ever on the
    parent's event-loop thread, which the child does not have."""
    import multiprocessing
    with ScriptedServer("vllm") as server:
        backend = OpenAIBackend(f"m@{server.url}", parse_options(FAST))
        hello = [Completion(("ep", "p"), [{"role": "user", "content": "hi"}], 0)]
        assert backend.complete(hello)[0].text
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=lambda: queue.put(backend.complete(hello)[0].text))
        child.start()
        text = queue.get(timeout=20)
        child.join(timeout=20)
    assert text == ScriptedServer.free_text(hello[0].messages) and child.exitcode == 0


@pytest.mark.parametrize("game", ["prisoners_dilemma", "battle_of_the_sexes", "chameleon", "bargaining", "liars_dice"])
def test_every_branch_of_the_schema_requires_both_keys_and_its_instances_are_legal(game):
    """Converters (llama.cpp's) build a union from the branches alone: a branch must itself
    require the keys, or "{}" would be allowed."""
    from socialgym_agents.llm.parsing import parse_reply
    from scripted_servers import schema_instance
    for _, _, info in list(decision_infos(game))[:12]:
        schema = reply_grammar(info).json_schema(info)
        branches = schema.get("anyOf") or schema.get("oneOf")
        assert all(b["required"] == ["action_type", "argument"] and b["additionalProperties"] is False
                   for b in branches)
        for pick in range(len(branches)):
            instance = schema_instance(schema, pick)
            if isinstance(instance.get("argument"), list):
                continue            # integer arrays: the schema cannot say their sum (re-asked)
            assert parse_reply(json.dumps(instance), info)["action_type"] == instance["action_type"]
