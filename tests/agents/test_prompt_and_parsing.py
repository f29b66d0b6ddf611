"""Appendix-E prompt rendering, context trimming, and reply parsing."""
import json

import pytest

import socialgym_env
from socialgym_agents.llm.parsing import ReplyError, action_string, extract_json_object, json_object_complete, parse_reply
from socialgym_agents.llm.prompt import OMIT_CHUNK, fit_prompt, format_instructions, render_prompt


def _seat(game="bargaining", **config):
    env = socialgym_env.make(game, **config)
    env.reset(seed=3)
    agent = env.agent_selection
    return env, agent, env.prompt_parts(agent), env.infos[agent]


def test_prompt_has_every_appendix_e_slot():
    env, agent, parts, info = _seat()
    parts = dict(parts, secret=["Your secret card: the ace."], history=["[R1] Moderator: hello there"])
    prompt = render_prompt(parts, info, playbook="PLAYBOOK: be patient.")
    name = parts["agent"]
    assert prompt.startswith("PLAYBOOK: be patient.")
    assert f"Imagine you are playing the game as {name}." in prompt
    assert f"Here is the description of the game: {parts['description']}" in prompt
    assert f"Your ({name}'s) goal: {parts['goal']}" in prompt
    assert "Your secret card: the ace." in prompt
    assert "Here is the context of the interaction:\n[R1] Moderator: hello there" in prompt
    assert f"Your available action type(s): [{', '.join(info['action_types'])}]." in prompt
    assert info["instructions"] in prompt
    for legal in info["legal_actions"]:
        assert legal in prompt
    assert "Please only generate a JSON string including the action type and the argument." in prompt
    assert '{"action_type": "propose", "argument": <integer from 0 to 10>}' in prompt
    # Static parts first, the history after them, the per-turn parts last.
    assert prompt.index("goal") < prompt.index("Here is the context") < prompt.index("available action")


def test_prompt_without_playbook_or_history():
    env, agent, parts, info = _seat("prisoners_dilemma")
    prompt = render_prompt(dict(parts, history=[]), info)
    # the description (the same for every seat) comes first, then the role-play line
    assert prompt.startswith("Here is the description of the game: ")
    assert prompt.index("Here is the description") < prompt.index("Imagine you are playing") < prompt.index("goal")
    assert "(nothing yet)" in prompt
    assert format_instructions(info).splitlines() == ['{"action_type": "cooperate", "argument": ""}',
                                                      '{"action_type": "defect", "argument": ""}']


def test_fit_prompt_drops_oldest_history_with_marker():
    env, agent, parts, info = _seat()
    history = [f"[R{i}] Moderator: message number {i}" for i in range(100)]
    parts = dict(parts, history=history)
    full = render_prompt(parts, info)
    prompt, omitted = fit_prompt(parts, info, None, lambda p: len(p) <= len(full) - 500)
    assert omitted % OMIT_CHUNK == 0 and omitted > 0
    assert f"[... {omitted} earlier messages omitted ...]" in prompt
    assert "message number 99" in prompt and "message number 0\n" not in prompt
    assert len(prompt) <= len(full) - 500
    # Nothing fits: everything is omitted, still a prompt (never a crash).
    prompt, omitted = fit_prompt(parts, info, None, lambda p: False)
    assert omitted == 100 and "[... 100 earlier messages omitted ...]" in prompt


INFO = {"action_types": ["propose", "accept", "reject"],
        "action_schema": {"oneOf": [
            {"properties": {"action_type": {"const": "propose"},
                            "argument": {"type": "integer", "minimum": 0, "maximum": 10}},
             "required": ["action_type", "argument"]},
            {"properties": {"action_type": {"const": "accept"}, "argument": {"type": "string", "maxLength": 0}},
             "required": ["action_type"]},
            {"properties": {"action_type": {"const": "reject"}, "argument": {"type": "string", "maxLength": 0}},
             "required": ["action_type"]}]}}


@pytest.mark.parametrize("reply", [
    '{"action_type": "propose", "argument": 6}',
    '```json\n{"action_type": "propose", "argument": 6}\n```',
    '```\n{"action_type": "propose", "argument": "6"}\n```\nThat is my offer.',
    'I think a fair split is best. {"action_type": "PROPOSE", "argument": 6} Let\'s see.',
    "{'action_type': 'propose', 'argument': 6}",
])
def test_parse_reply_variants(reply):
    action = parse_reply(reply, INFO)
    assert action["action_type"] == "propose" and str(action["argument"]) == "6"
    assert json.loads(action_string(action)) == {"action_type": "propose", "argument": action["argument"]}


@pytest.mark.parametrize("reply, message", [
    ("", "empty"),
    ("I accept", "no JSON object"),
    ('{"action_type": "propose", "argument": 6', "not closed"),
    ('{"action_type": "fold"}', "unknown action type"),
    ('{"action_type": "propose"}', "needs an argument"),
    ('{"action_type": "propose", "argument": 11}', "from 0 to 10"),
    ('{"action_type": "propose", "argument": "lots"}', "whole number"),
    ('{"argument": 3}', '"action_type"'),
])
def test_parse_reply_errors_say_what_is_wrong(reply, message):
    with pytest.raises(ReplyError, match=message):
        parse_reply(reply, INFO)


def test_json_stop_detection():
    assert not json_object_complete('```json\n{"action_type": "defect", "argument": "}')
    assert json_object_complete('```json\n{"action_type": "defect", "argument": "a } b"}')
    assert extract_json_object('x {"a": {"b": 1}} y') == {"a": {"b": 1}}
