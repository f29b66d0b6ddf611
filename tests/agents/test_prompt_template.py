"""The compact prompt template (``template=compact``): what it keeps (role, private info, history,
status, the legal actions), what it drops (the paper's reply-format boilerplate), both layouts,
the logged chat's reading back (training's trim), determinism, and its identity in ratings."""
import json
import random

import pytest

import socialgym_env
from socialgym_agents.base import Request
from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.prompt import COMPACT, PAPER, parse_chat, render_prompt, trim_chat
from socialgym_agents.specs import short_names
from socialgym_benchmarks import ratings as bt

from helpers import FakeBackend, fake_policy

BOILERPLATE = ("Please only generate a JSON string", "Your action should follow the given format:",
               "Imagine you are playing the game as", "Here is the context of the interaction:")


def _first_request(game, seed=3, **config):
    env = socialgym_env.make(game, **config)
    env.reset(seed=seed)
    agent = env.agent_selection
    return env, Request(("ep", agent), env.observe(agent), env.infos[agent], env.prompt_parts(agent))


def _legal_reply(item, requests):
    """A fake model: a legal action of the request the chat belongs to, from its sampling seed."""
    info = requests[item.key].info
    legal = info.get("legal_action_list") or ["pass"]
    action_type, _, argument = random.Random(item.sample_seed).choice(legal).partition(" ")
    return Reply(json.dumps({"action_type": action_type, "argument": argument}), {"new_tokens": 1})


def _play(game, template, seed=5, **config):
    """Every seat an LLM policy (fake backend) of ``template``; the chats it sent, in order."""
    env = socialgym_env.make(game, **config)
    env.reset(seed=seed)
    requests = {}
    policy = fake_policy(fn=lambda item: _legal_reply(item, requests), template=template)
    for agent in env.possible_agents:
        policy.reset(("ep", agent), seed)
    chats = []
    while env.agents:
        agent = env.agent_selection
        request = Request(("ep", agent), env.observe(agent), env.infos[agent], env.prompt_parts(agent))
        requests[request.key] = request
        decision = policy.act_batch([request])[0]
        chats.append([dict(m) for m in policy.backend.calls[-1][0].messages])
        env.step(decision.action)
        env.skip_dead()
    return chats


def test_compact_keeps_role_private_info_history_status_and_legal_actions():
    env, request = _first_request("undercover", rounds=1)
    parts, info = request.prompt_parts, request.info
    text = render_prompt(parts, info, template=COMPACT)
    lines = text.split("\n")
    agent = parts["agent"]
    assert lines[0] == f"Game: {parts['description']}"
    assert lines[1] == f"You are {agent}. Your goal: {parts['goal']}"
    for secret in parts["secret"]:                 # the seat's word and role
        assert secret in lines
    assert "History:" in lines and all(line in lines for line in parts["history"])
    assert "Status: " + " ".join(parts["status"]) in lines
    for legal in info["legal_actions"]:
        assert f"- {legal}" in lines
    assert lines[lines.index("Status: " + " ".join(parts["status"])) + 1] == \
        f"Actions: {info['instructions'].strip()}"
    assert not any(phrase in text for phrase in BOILERPLATE)
    # the free-text argument's format stays (its length bound); pass takes none: no line for it
    assert '{"action_type": "say", "argument": "<text, at most 600 characters>"}' in lines
    assert not any(line.startswith('{"action_type": "pass"') for line in lines)
    paper = render_prompt(parts, info)
    assert f"Imagine you are playing the game as {agent}." in paper and paper.count("\n") > text.count("\n")


def test_compact_shows_how_arguments_are_written_and_types_without_a_list():
    _, request = _first_request("bargaining", rounds=2)
    lines = render_prompt(request.prompt_parts, request.info, template=COMPACT).split("\n")
    assert '{"action_type": "propose", "argument": <integer from 0 to 10>}' in lines
    info = dict(request.info, legal_actions=[])            # a game that lists no legal actions
    lines = render_prompt(request.prompt_parts, info, template=COMPACT).split("\n")
    assert "- one of: " + ", ".join(info["action_types"]) in lines


def test_the_default_template_is_the_papers_and_a_bad_one_is_refused():
    assert parse_options("").template == "paper"
    assert parse_options("template=compact").template == "compact"
    with pytest.raises(ValueError, match="template='short': expected one of paper, compact"):
        parse_options("template=short")
    _, request = _first_request("prisoners_dilemma", rounds=2)
    policy = fake_policy(['{"action_type": "defect", "argument": ""}'])
    policy.act_batch([request])
    assert policy.backend.calls[0][0].messages[0]["content"] == render_prompt(request.prompt_parts, request.info)


def test_turn_layout_in_compact_words_refers_back_to_actions_already_shown():
    chats = _play("resistance", "compact")
    later = [chat[-1]["content"] for chat in chats if len(chat) > 1]
    assert later and all(text.startswith(COMPACT.turn_line + "\n") for text in later)
    assert any(COMPACT.same_actions in text.split("\n") for text in later)
    assert not any(PAPER.turn_line in text or PAPER.same_actions in text for text in later)


def test_a_compact_chat_reads_back_and_trims_as_the_policy_lays_it_out():
    chats = _play("werewolves", "compact")
    chat = max(chats, key=len)
    parsed = parse_chat(chat)
    assert parsed["template"] is COMPACT and parsed["history"]
    whole = trim_chat(chat, lambda messages: True)
    assert len(whole) == 1 and whole[0]["content"].split("\n")[0].startswith("Game: ")
    assert COMPACT.context_line in whole[0]["content"].split("\n")
    # shortened to a budget: the oldest history lines go, the compact wording stays
    budget = len(whole[0]["content"]) - 200
    trimmed = trim_chat(chat, lambda messages: sum(len(m["content"]) for m in messages) <= budget)
    assert trimmed and "earlier messages omitted" in trimmed[0]["content"] and "Status: " in trimmed[0]["content"]


def test_compact_chats_are_deterministic():
    assert _play("chameleon", "compact", seed=7) == _play("chameleon", "compact", seed=7)


def test_two_templates_rate_as_two_policies():
    paper = "smollm2?temperature=0.7"
    compact = "smollm2?temperature=0.7&template=compact"

    def record(i, winner, loser):
        return {"episode_id": f"e{i}", "game": "prisoners_dilemma", "rewards": {"a": 1.0, "b": -1.0},
                "roster": [{"agent": "a", "policy": winner}, {"agent": "b", "policy": loser}]}
    records = [record(0, paper, "scripted:random"), record(1, "scripted:random", compact),
               record(2, compact, paper)]
    ratings = bt.rate_records(records, n_boot=0)
    assert sorted(ratings.players) == sorted([paper, compact, "scripted:random"])
    names = short_names([paper, compact])        # the leaderboard's console names tell them apart too
    assert names[paper] != names[compact] and "template=compact" in names[compact]


def test_a_policy_of_the_compact_template_logs_its_spec():
    backend = FakeBackend(['{"action_type": "defect", "argument": ""}'])
    from socialgym_agents.llm.policy import LLMPolicy
    policy = LLMPolicy(backend, parse_options("template=compact"), "smollm2?template=compact")
    _, request = _first_request("prisoners_dilemma", rounds=2)
    decision = policy.act_batch([request])[0]
    assert decision.meta["policy"] == "smollm2?template=compact"
    assert decision.meta["attempts"][0]["prompt"].startswith("Game: ")
