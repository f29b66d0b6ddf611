"""Any reply is a re-ask or an action, never an exception: 10,000 generated replies (seeded)
through parse_reply, and a sample of them through the policy, which must not fail a decision."""
import json
import random

import pytest

from socialgym_agents.base import Request
from helpers import decision_infos
from socialgym_agents.llm.parsing import ReplyError, action_string, parse_reply, reply_reasoning

GAMES = ("prisoners_dilemma", "bargaining", "liars_dice", "chameleon", "werewolves")


def _infos():
    """Decision infos of a few games in several phases (numbers, words, free text, lists)."""
    infos = []
    for game in GAMES:
        rng = random.Random(0)
        infos += [info for _, _, info in decision_infos(game) if rng.random() < 0.5][:6]
    return infos


def _value(rng, depth=0):
    """A JSON-or-Python-literal fragment of any type, some of it hostile."""
    kind = rng.randrange(14 if depth < 3 else 8)
    if kind == 0:
        return repr(rng.choice(["defect", "cooperate", "bid", "say", "vote", "", " ", "\x00", "\ud800", "é"]))
    if kind == 1:
        return json.dumps(rng.choice(["defect", "cooperate", "call", "hello there", "Alice", "\ud800x", "a\u0000b"]))
    if kind == 2:
        return str(rng.randint(-10**6, 10**6))
    if kind == 3:
        return rng.choice(["9" * rng.choice([50, 4301, 6000]), "1e999", "-1e999", "NaN", "Infinity", "0.5", "3.0"])
    if kind == 4:
        return rng.choice(["true", "false", "null", "None", "True"])
    if kind == 5:
        return rng.choice(["[" * 5000 + "]" * 5000, "{" * 3000 + "}" * 3000, "[[[[1]]]]", "(1, 2)", "b'bytes'"])
    if kind == 6:
        return json.dumps("x" * rng.choice([1, 700, 5000]))
    if kind == 7:
        return rng.choice(["{2, 3}", "set()", "frozenset()", "...", "1j", "__import__('os')", "lambda: 1"])
    if kind in (8, 9):
        items = [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
        return "[" + ", ".join(items) + "]"
    keys = rng.sample(['"action_type"', "'action_type'", '"argument"', "'argument'", '"reasoning"', '"action"',
                       "1", "(1, 2)", '"x"', "None"], rng.randrange(1, 4))
    return "{" + ", ".join(f"{k}: {_value(rng, depth + 1)}" for k in keys) + "}"


def _reply(rng, info):
    legal = (info.get("legal_action_list") or ["defect"])
    action_type, _, argument = rng.choice(legal).partition(" ")
    good = json.dumps({"action_type": action_type, "argument": argument})
    kind = rng.randrange(10)
    if kind == 0:
        return good
    if kind == 1:
        return "```json\n" + good[:-1] + ", " + _value(rng) + ": 1}\n```"
    if kind == 2:
        return f'{{"action_type": {json.dumps(action_type)}, "argument": {_value(rng)}}}'
    if kind == 3:
        return f'{{"reasoning": {_value(rng)}, "action": {rng.choice([good, _value(rng)])}}}'
    if kind == 4:
        return _value(rng).encode("utf-8", "surrogatepass")          # bytes, maybe not UTF-8
    if kind == 5:
        return rng.choice([None, 42, 1.5, ["defect"], {"action_type": "defect"}, {2, 3}, object()])
    if kind == 6:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(60)))
    if kind == 7:
        return "Sure! " + good[: rng.randrange(len(good))] + rng.choice(["", "}", "}}", "\"}"])
    return "text " + _value(rng) + " and " + _value(rng)


def test_ten_thousand_generated_replies_parse_or_raise_reply_error_only():
    rng = random.Random(2026)
    infos = _infos()
    outcomes = {"action": 0, "reply_error": 0}
    for i in range(10_000):
        info = infos[i % len(infos)]
        reply = _reply(rng, info)
        try:
            action = parse_reply(reply, info)
        except ReplyError:
            outcomes["reply_error"] += 1
            continue
        outcomes["action"] += 1
        # what the policy hands the env must be plain JSON text
        text = action_string(action)
        assert isinstance(text, str) and json.loads(text)["action_type"] == action["action_type"]
        assert isinstance(reply_reasoning(reply), str)
    for reply in ["x" * (1 << 20), "{" * (1 << 20), '{"action_type": "' + "a" * (1 << 20) + '"}']:   # 1 MB
        with pytest.raises(ReplyError):
            parse_reply(reply, infos[0])
    # both outcomes occur in numbers: the generator is not all junk nor all legal
    assert outcomes["action"] > 1000 and outcomes["reply_error"] > 3000, outcomes


def test_the_issue_replies_are_reasks():
    info = _infos()[0]
    for reply in ["{'action_type': 'defect', 'argument': {2, 3}}",
                  '{"action_type": "defect", "argument": ' + "[" * 5000 + "]" * 5000 + "}",
                  '{"action_type": "defect", "argument": ' + "9" * 5000 + "}",
                  b'{"action_type": "defect", "argument": [b"x"]}']:
        with pytest.raises(ReplyError):
            parse_reply(reply, info)


@pytest.mark.parametrize("literal", ["0x" + "f" * 4400, "0o" + "7" * 6000, "0b" + "1" * 20000, "-0x" + "f" * 4400,
                                     "[1, 0x" + "f" * 4400 + "]", "2 ** 20000"],
                         ids=["hex", "octal", "binary", "negative-hex", "hex-in-a-list", "power"])
def test_a_huge_integer_literal_is_a_reply_error_in_every_phase(literal):
    """Python parses a hex literal of any length, but str() of an int past 4,300 digits raises
    ValueError; the reply parser answers such an argument with ReplyError (a re-ask)."""
    for info in _infos():
        for action in {a.partition(" ")[0] for a in info.get("legal_action_list") or []} | {"say"}:
            reply = "{'action_type': %r, 'argument': %s}" % (action, literal)
            try:
                action_string(parse_reply(reply, info))
            except ReplyError:
                pass


def test_the_policy_never_fails_a_decision_on_junk(make_fake_policy):
    rng = random.Random(7)
    infos = _infos()
    replies = [_reply(rng, infos[i % len(infos)]) for i in range(600)]
    replies = [r if isinstance(r, str) else repr(r) for r in replies]   # a backend returns text
    policy = make_fake_policy(replies=replies, max_retries=2)
    decisions = []
    for i in range(200):
        policy.reset(("ep", f"s{i}"), 0)
        request = Request(("ep", f"s{i}"), {"text": "history"}, infos[i % len(infos)], None)
        decisions += policy.act_batch([request])
    assert all(d.error is None and isinstance(d.action, str) for d in decisions)
    assert any(d.meta["valid"] for d in decisions) and any(not d.meta["valid"] for d in decisions)
