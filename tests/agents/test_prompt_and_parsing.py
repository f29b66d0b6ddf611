"""Appendix-E prompt rendering, context trimming, and reply parsing."""
import json
import re

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


# ----------------------------------------------------------------------------- a logged chat trimmed as the policy trims
def _late_chat(game: str, seed: int, think: int = 0, restart_chars: int = 0):
    """A turns-layout policy's chat at the last decision of the seat that decided most in a scripted game, and that
    decision's parts and info (``restart_chars``: the policy's own budget, in characters, so
    its conversation restarts on the way; 0: never)."""
    from socialgym_agents.base import Request
    from socialgym_agents.llm.config import LLMConfig
    from socialgym_agents.llm.policy import LLMPolicy
    from socialgym_agents.scripted import RandomPolicy

    class Measure:
        kind, model_name = "replay", "measure"

        def fits(self, messages, share=1.0):
            return not restart_chars or sum(len(m["content"]) for m in messages) <= restart_chars * share

    policy = LLMPolicy(Measure(), LLMConfig(think=think), "smollm2")
    env = socialgym_env.make(game)
    env.reset(seed=seed)
    player = RandomPolicy(seed)
    last = {}
    while env.agents:
        agent = env.agent_selection
        if env.terminations.get(agent) or env.truncations.get(agent):
            env.step(None)
            continue
        info = env.infos[agent]
        key = ("episode", agent)
        action = player.act(None, info, key).action
        request = Request(key, None, info, env.prompt_parts(agent))
        messages = policy.replay_turn(request, json.dumps({"action": action}))
        last[agent] = (messages, env.prompt_parts(agent), info)
        env.step(action)
    return max(last.values(), key=lambda chat: len(chat[0]))          # the seat that decided most


@pytest.mark.parametrize("game, seed, think, restart", [("resistance", 2, 0, 0), ("resistance", 2, 64, 0),
                                                         ("undercover", 1, 0, 0), ("coup", 1, 0, 6000)])
def test_a_logged_chat_is_trimmed_exactly_as_the_policy_fits_its_prompt(game, seed, think, restart):
    from socialgym_agents.llm.policy import THINK_NOTE
    from socialgym_agents.llm.prompt import THINK_NOTE_PREFIX, trim_chat
    assert THINK_NOTE.startswith(THINK_NOTE_PREFIX)
    messages, parts, info = _late_chat(game, seed, think, restart)
    assert len(messages) > 3                              # a conversation of several turns
    # the policy fits the prompt, then appends the think note: the row must hold both
    note = "\n" + messages[-1]["content"].split("\n")[-1] if think else ""
    # lines the policy already dropped at a restart stay dropped: the fit can only omit more
    gone = re.search(r"\[\.\.\. (\d+) earlier messages omitted \.\.\.\]", messages[0]["content"])
    gone = int(gone.group(1)) if gone else 0
    assert (gone > 0) == bool(restart)

    def omits(prompt):
        found = re.search(r"\[\.\.\. (\d+) earlier messages omitted \.\.\.\]", prompt)
        return int(found.group(1)) if found else 0
    whole = len(render_prompt(parts, info))               # the decision's prompt with every line
    for budget in (whole - 300, whole * 2 // 3):
        expected, omitted = fit_prompt(parts, info, None, lambda p: len(p) <= budget and omits(p) >= gone)
        trimmed = trim_chat(messages, lambda chat: sum(len(m["content"]) for m in chat) <= budget + len(note))
        assert omitted > 0 and trimmed == [{"role": "user", "content": expected + note}]
    # a re-asked decision: its failed reply and the re-ask stay after the fitted prompt
    reask = [{"role": "assistant", "content": "not json"}, {"role": "user", "content": "Reply with one JSON object."}]
    extra = sum(len(m["content"]) for m in reask)
    trimmed = trim_chat(messages + reask, lambda chat: sum(len(m["content"]) for m in chat) <= budget + len(note) + extra)
    assert trimmed == [{"role": "user", "content": expected + note}] + reask
    # a chat of another layout is not the policy's to trim
    assert trim_chat([{"role": "user", "content": "hello"}], lambda chat: True) is None
