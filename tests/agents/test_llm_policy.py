"""The LLM policy's re-ask loop, meta recording, playbook injection and failure handling,
with a scripted fake backend (no model needed)."""
import json

import pytest

from socialgym_agents.base import Request
from socialgym_agents.llm.backend import Reply
from socialgym_agents.registry import register_kind
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs
from socialgym_env.actions import MAX_ACTION_CHARS as LONGEST_ACTION, MAX_LOG_TEXT_CHARS as LOG_TEXT_LIMIT
from socialgym_env.logs import read_episodes

from helpers import FakeBackend, fake_policy

GOOD = '{"action_type": "defect", "argument": ""}'


def _pd_request(env_game="prisoners_dilemma"):
    import socialgym_env
    env = socialgym_env.make(env_game, rounds=1)
    env.reset(seed=0)
    agent = env.agent_selection
    return Request(("ep", agent), env.observe(agent), env.infos[agent], env.prompt_parts(agent))


def test_valid_reply_is_accepted_and_recorded():
    policy = fake_policy([GOOD])
    decision = policy.act_batch([_pd_request()])[0]
    assert json.loads(decision.action) == {"action_type": "defect", "argument": ""}
    meta = decision.meta
    assert meta["valid"] and len(meta["attempts"]) == 1
    attempt = meta["attempts"][0]
    assert attempt["reply"] == GOOD and attempt["action"]["action_type"] == "defect"
    assert "Imagine you are playing the game as" in attempt["prompt"]
    assert meta["sampling"]["temperature"] == 0.0 and meta["model"] == "fake-model"


def test_malformed_reply_is_reasked_with_the_error():
    policy = fake_policy(["I will defect!", '```json\n{"action_type": "defect"}\n```'])
    decision = policy.act_batch([_pd_request()])[0]
    assert json.loads(decision.action)["action_type"] == "defect"
    first, second = decision.meta["attempts"]
    assert "no JSON object" in first["error"]
    assert "could not be used: no JSON object" in second["reask"]
    messages = policy.backend.calls[1][0].messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "I will defect!"


def test_unknown_action_type_is_reasked():
    policy = fake_policy(['{"action_type": "betray"}', GOOD])
    decision = policy.act_batch([_pd_request()])[0]
    assert "unknown action type" in decision.meta["attempts"][0]["error"]
    assert decision.meta["valid"]


def test_retries_are_bounded_and_last_attempt_goes_to_the_env():
    policy = fake_policy(["nope 1", "nope 2", "nope 3", "never asked"], max_retries=2)
    decision = policy.act_batch([_pd_request()])[0]
    assert len(decision.meta["attempts"]) == 3 and not decision.meta["valid"]
    assert decision.action == "nope 3"
    assert policy.backend.replies == ["never asked"]
    # The env's invalid-action mode decides: fallback makes the turn invalid but the game goes on.
    pool = PolicyPool(prebuilt={"fake": fake_policy(fn=lambda item: __import__("socialgym_agents.llm.backend", fromlist=["Reply"]).Reply("no idea"), max_retries=1)})
    record = play_episode(EpisodeJob("prisoners_dilemma", 1, ["fake", "fake"], config={"rounds": 1}), pool)
    assert record["finished"] and all(not t["valid"] and t.get("fallback") for t in record["turns"])
    assert all(len(t["agent_meta"]["attempts"]) == 2 for t in record["turns"])


def test_batch_reasks_only_the_failed_requests():
    replies = iter([GOOD, "bad", GOOD])
    from socialgym_agents.llm.backend import Reply
    policy = fake_policy(fn=lambda item: Reply(next(replies)))
    import socialgym_env
    env = socialgym_env.make("prisoners_dilemma", rounds=1)
    env.reset(seed=0)
    requests = [Request(("ep", a), env.observe(a), env.decision_view(a), env.prompt_parts(a))
                for a in env.pending_actors()]
    decisions = policy.act_batch(requests)
    assert [len(c) for c in policy.backend.calls] == [2, 1]
    assert all(d.meta["valid"] for d in decisions)


def test_playbook_goes_into_the_prompt_and_the_roster(tmp_path):
    seen = []
    from socialgym_agents.llm.backend import Reply

    def answer(item):
        seen.append((item.key[1], item.messages[0]["content"]))
        return Reply(GOOD)

    policy = fake_policy(fn=answer, policy_id="fakepb")
    job = EpisodeJob("prisoners_dilemma", 4, ["fakepb", "fakepb"], config={"rounds": 2},
                     playbooks={"player_1": "MY PLAYBOOK: defect at the end."})
    log = tmp_path / "log.jsonl"
    record = run_jobs([job], PolicyPool(prebuilt={"fakepb": policy}), log_path=log)[0]
    for agent, prompt in seen:
        assert prompt.startswith("MY PLAYBOOK") == (agent == "player_1")
    roster = {r["agent"]: r for r in next(read_episodes(log))["roster"]}
    assert roster["player_1"]["playbook"] == "MY PLAYBOOK: defect at the end."
    assert roster["player_0"]["playbook"] is None
    assert [t["agent_meta"]["playbook"] for t in record["turns"]] == [False, True, False, True]
    # Finished seats are released (caches freed) and the playbook forgotten.
    assert ("prisoners_dilemma-4-fakepb+fakepb", "player_1") in policy.backend.released
    assert not policy.playbooks


def test_backend_error_fails_only_that_episode(tmp_path):
    from socialgym_agents.llm.backend import Reply

    def answer(item):
        if item.key[0].startswith("bargaining"):
            return RuntimeError("server on fire")
        return Reply(GOOD)

    policy = fake_policy(fn=answer, policy_id="flaky")
    jobs = [EpisodeJob("prisoners_dilemma", 0, ["flaky", "flaky"], config={"rounds": 2}),
            EpisodeJob("bargaining", 0, ["flaky", "scripted:random"], config={"rounds": 2})]
    log = tmp_path / "log.jsonl"
    records = run_jobs(jobs, PolicyPool(prebuilt={"flaky": policy}), log_path=log)
    assert records[0]["finished"] and not records[0].get("failed")
    assert records[1]["failed"] and "server on fire" in records[1]["error"]
    assert "server on fire" in records[1]["traceback"]
    assert {r["episode_id"] for r in read_episodes(log)} == {j.episode_id for j in jobs}


def test_registered_kind_and_spec_options():
    from socialgym_agents import make_policy
    register_kind("fakekind", lambda spec, seed=0: fake_policy([GOOD], policy_id=str(spec)))
    assert make_policy("fakekind?x=1").policy_id == "fakekind?x=1"
    with pytest.raises(ValueError, match="unknown LLM option"):
        make_policy("openai:m@http://127.0.0.1:1/v1?temprature=1")
    policy = make_policy("openai:m@http://127.0.0.1:1/v1?temperature=0.5&max_new_tokens=7&timeout=0.5")
    assert policy.config.temperature == 0.5 and policy.config.max_new_tokens == 7
    assert policy.policy_id == "openai:m@http://127.0.0.1:1/v1?temperature=0.5&max_new_tokens=7&timeout=0.5"


def test_turn_layout_extends_the_previous_turn(make_fake_policy):
    """prompt=turns: a seat's later decision is its earlier chat + its reply + only the new lines."""
    policy = make_fake_policy(fn=lambda item: Reply(GOOD, {}))
    play_episode(EpisodeJob("prisoners_dilemma", 1, ["llm", "llm"], config={"rounds": 3}),
                 PolicyPool(prebuilt={"llm": policy}))
    seat = [c[0] for c in policy.backend.calls if c[0].key[1] == "player_0"]
    assert [len(c.messages) for c in seat] == [1, 3, 5]
    first, second = seat[0].messages, seat[1].messages
    assert second[:1] == first and second[1] == {"role": "assistant", "content": GOOD}
    assert "Imagine you are playing" in first[0]["content"]
    new = second[2]["content"]
    assert new.startswith("Here is what happened since your last action:")
    assert "Imagine you are playing" not in new and "Your available action type(s)" in new
    single = make_fake_policy(fn=lambda item: Reply(GOOD, {}), prompt="single")
    play_episode(EpisodeJob("prisoners_dilemma", 1, ["llm", "llm"], config={"rounds": 3}),
                 PolicyPool(prebuilt={"llm": single}))
    assert all(len(c[0].messages) == 1 for c in single.backend.calls)


def test_a_conversation_that_outgrows_the_context_restarts_at_a_share_of_the_budget(make_fake_policy):
    """prompt=turns with a small budget: an overflowing conversation starts over with the oldest
    history dropped to RESTART_SHARE of the budget, and the next turns extend it again (not a restart at
    the brim on every turn, which would re-encode the whole prompt each time)."""
    from socialgym_agents.llm.policy import RESTART_SHARE
    budget = 5000
    policy = make_fake_policy(fn=lambda item: Reply(GOOD, {}))
    policy.backend.budget_chars = budget
    play_episode(EpisodeJob("prisoners_dilemma", 1, ["llm", "llm"], config={"rounds": 100}),
                 PolicyPool(prebuilt={"llm": policy}))
    seat = [c[0].messages for c in policy.backend.calls if c[0].key[1] == "player_0"]
    size = [sum(len(m["content"]) for m in messages) for messages in seat]
    restarts = [i for i in range(1, len(seat)) if len(seat[i]) == 1]
    assert restarts and all(s <= budget for s in size)
    for i in restarts:
        assert size[i] <= budget * RESTART_SHARE
        assert i + 1 == len(seat) or len(seat[i + 1]) == 3      # the next turn extends it
    assert len(restarts) <= len(seat) // 3
    assert "earlier messages omitted" in seat[-1][0]["content"]      # the history did outgrow it


def test_a_turn_with_the_same_actions_refers_to_them_in_one_line(make_fake_policy):
    """Turn layout: when a seat's actions and format are ones its conversation already showed
    (the talk phase of each proposal), the turn gives the status and one line instead of the
    whole block; a block not shown yet (each vote names its team) is shown in full."""
    from socialgym_agents.llm.prompt import SAME_ACTIONS
    policy = make_fake_policy(fn=lambda item: Reply('{"action_type": "pass", "argument": ""}', {}))
    play_episode(EpisodeJob("resistance", 2, ["llm"] * 5), PolicyPool(prebuilt={"llm": policy}))
    turns = [c[0].messages[-1]["content"] for c in policy.backend.calls
             if c[0].key[1] == "player_0" and len(c[0].messages) > 1]
    same = [t for t in turns if SAME_ACTIONS in t]
    assert same and all("Current status:" in t and "Your available action type(s)" not in t for t in same)
    assert any("Your available action type(s): [approve, reject]" in t for t in turns)


# Bounded logs (issue 11, item 16): replies and error texts are clipped in the meta and the log.
def test_a_huge_model_reply_and_its_parse_error_are_clipped_in_the_meta():
    policy = fake_policy(["{" * 100 + "z" * 20000, '{"action_type": "defect", "argument": ""}'])
    decision = policy.act_batch([_pd_request()])[0]
    first = decision.meta["attempts"][0]
    assert len(first["reply"]) == LONGEST_ACTION and first["reply"].endswith("more characters cut]")
    assert len(first["error"]) <= LOG_TEXT_LIMIT
    assert decision.meta["valid"]


def test_a_failed_episode_reason_is_clipped():
    from socialgym_agents.jobs import failed_record
    job = EpisodeJob("prisoners_dilemma", 0, ["scripted:random", "scripted:random"], episode_id="ep")
    record = failed_record(job, RuntimeError("boom " * 10000))
    assert record["failed"] and record["error"].startswith("RuntimeError: boom boom")
    assert len(record["error"]) == LOG_TEXT_LIMIT
    assert len(record["traceback"]) <= 4 * LOG_TEXT_LIMIT


def test_a_thinking_seat_keeps_its_reasoning_out_of_the_env_even_when_the_reply_is_unusable(make_fake_policy):
    from socialgym_agents.base import Request
    info = {"action_types": ["defect", "cooperate"], "legal_action_list": ["defect", "cooperate"]}
    replies = ['{"reasoning": "secret scheme", "action": {"action_type": "fly"}}',
               '{"reasoning": "secret scheme", "action": "nope"}', "secret scheme in prose"]
    for reply in replies:
        policy = make_fake_policy(replies=[reply], max_retries=0, think=16)
        policy.reset(("ep", "a"), 0)
        decision = policy.act_batch([Request(("ep", "a"), {"text": "h"}, info, None)])[0]
        assert not decision.meta["valid"] and "secret" not in decision.action
    policy = make_fake_policy(replies=['{"reasoning": "weigh it", "action": {"action_type": "defect"}}'], think=16)
    policy.reset(("ep", "a"), 0)
    decision = policy.act_batch([Request(("ep", "a"), {"text": "h"}, info, None)])[0]
    assert decision.meta["valid"] and decision.meta["reasoning"] == "weigh it" and "weigh" not in decision.action
    assert "reasoning" in decision.meta["attempts"][0]["prompt"]      # the prompt asked for it


def test_silent_talk_turns_stay_out_of_the_chat_when_played_resumed_or_rebuilt(make_fake_policy):
    """talk=pass: talk turns are passed without a backend call; replaying the logged episode (what
    resuming a journal and the transcript rebuild do) keeps them out of the chat too, so every
    rebuilt conversation is the one sent, and talk turns have none."""
    from socialgym_agents.llm.transcript import rebuild_conversations
    from socialgym_env.patterns import is_talk_turn

    def first_legal(item):
        assert item.grammar is not None and item.grammar.finite      # never asked to talk
        return Reply(item.grammar.finite[0], {"new_tokens": 1})
    spec = "smollm2?talk=pass"
    policy = make_fake_policy(fn=first_legal, policy_id=spec, talk="pass")
    record = play_episode(EpisodeJob("resistance", 4, [spec] * 5), PolicyPool(prebuilt={spec: policy}))
    sent = [item.messages for call in policy.backend.calls for item in call]
    talk = [i for i, t in enumerate(record["turns"]) if t["phase"] == "discussion"]
    assert talk and all(record["turns"][i]["action"] == "pass" for i in talk)
    assert len(sent) == len(record["turns"]) - len(talk)
    rebuilt = rebuild_conversations(record)
    assert sorted(rebuilt) == [i for i in range(len(record["turns"])) if i not in talk]
    by_seat = {}
    for index in sorted(rebuilt):
        by_seat.setdefault(record["turns"][index]["agent"], []).append(rebuilt[index][0])
    sent_by_seat = {}
    for call in policy.backend.calls:
        for item in call:
            sent_by_seat.setdefault(item.key[1], []).append(item.messages)
    assert by_seat == sent_by_seat
    from socialgym_training.export import decision_rows
    report = {}
    rows = decision_rows([record], report=report)
    assert sorted(r["turn_index"] for r in rows) == sorted(rebuilt) and report["silent_turns"] == len(talk)
    request = Request(("e", "player_0"), None, {"action_types": ["say", "pass"]}, None)
    assert is_talk_turn(request.info) and policy.replay_turn(request, "pass") == []


def test_a_local_models_tick_limit_is_its_batch_size_and_a_servers_is_none():
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.policy import LLMPolicy

    class Local:
        kind = "hf"

    class Server:
        kind = "openai"
    assert LLMPolicy(Local(), parse_options("batch_size=8"), "local").tick_limit == 8
    assert LLMPolicy(Server(), parse_options("batch_size=8"), "server").tick_limit is None
