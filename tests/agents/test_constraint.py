"""The grammar of legal replies (no model): every reply it accepts is a legal action in the env."""
import json
import random

import pytest

import socialgym_env
from socialgym_agents.llm.constraint import reply_grammar
from socialgym_agents.llm.parsing import parse_reply

ALPHABET = [chr(c) for c in range(32, 127)] + ["ö", "é", "\n", "\\"]


def _random_reply(grammar, rng):
    """Walk the automaton: random allowed characters, sometimes its shortest completion."""
    state, text = grammar.start(), ""
    while not grammar.finished(state):
        allowed = [c for c in ALPHABET if grammar.step(state, c)]
        assert allowed, f"dead end after {text!r}"
        ch = grammar.completion(state)[0] if rng.random() < 0.3 else rng.choice(allowed)
        text, state = text + ch, grammar.step(state, ch)
    return text


@pytest.mark.parametrize("game", socialgym_env.game_ids())
def test_every_accepted_reply_is_legal(game):
    env = socialgym_env.make(game, invalid_action="raise")
    env.reset(seed=3)
    rng = random.Random(game)
    decisions = 0
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if decisions == 60:
            break
        grammar = reply_grammar(info, max_text_chars=40)
        reply = _random_reply(grammar, rng)
        assert grammar.accepts(reply)
        parse_reply(reply, info)          # the policy's own check passes too
        env.step(reply)                   # invalid_action="raise": an illegal reply fails here
        decisions += 1
    assert decisions > 0


def test_finite_phases_are_exactly_the_legal_list():
    env = socialgym_env.make("rock_paper_scissors")
    env.reset(seed=0)
    info = env.infos[env.agent_selection]
    grammar = reply_grammar(info)
    assert sorted(json.loads(r)["action_type"] for r in grammar.finite) == sorted(info["legal_action_list"])
    assert grammar.accepts(grammar.finite[0])
    assert not grammar.accepts('{"action_type": "lizard", "argument": ""}')
    assert not grammar.accepts(grammar.finite[0][:-1])
    assert len(grammar.json_schema(info)["anyOf"]) == len(info["legal_action_list"])


def test_free_text_is_bounded_and_a_split_must_sum_to_100():
    info = {"action_schema": {"oneOf": [
        {"properties": {"action_type": {"const": "say"}, "argument": {"type": "string", "maxLength": 5}},
         "required": ["action_type", "argument"]},
        {"properties": {"action_type": {"const": "offer"}, "argument": {
            "type": "array", "x-sum": 100, "items": [{"type": "integer", "minimum": 0, "maximum": 100}] * 3}},
         "required": ["action_type", "argument"]}]}}
    grammar = reply_grammar(info)
    assert grammar.accepts('{"action_type": "say", "argument": "hi yo"}')
    assert not grammar.accepts('{"action_type": "say", "argument": "hi you"}')     # 6 > 5 characters
    assert not grammar.accepts('{"action_type": "say", "argument": ""}')           # needs text
    assert not grammar.accepts('{"action_type": "say", "argument": "a"b"}')
    assert grammar.accepts('{"action_type": "offer", "argument": [50, 25, 25]}')
    assert not grammar.accepts('{"action_type": "offer", "argument": [50, 25, 24]}')
    assert not grammar.accepts('{"action_type": "offer", "argument": [07, 43, 50]}')
    assert grammar.forced_prefix() == '{"action_type": "'


class _ToyTokenizer:
    """Single characters plus a few merged tokens, like a small BPE vocabulary."""

    all_special_ids = [0]

    def __init__(self):
        merged = ['{"', 'action', '_type', '":', ' "', '",', '"}', '"]', ']}', 'say', 'pass', ' hello', 'world',
                  ', ', '10', '00', ' we', ' co', 'operate', '\ufffd']
        self.vocab = ["<eos>"] + [chr(c) for c in range(32, 127)] + merged

    def __len__(self):
        return len(self.vocab)

    def decode(self, ids, clean_up_tokenization_spaces=False):
        return "".join(self.vocab[i] for i in ids)


@pytest.mark.parametrize("game,seed", [("battle_of_the_sexes", 0), ("dead_last", 1), ("chameleon", 2),
                                       ("liars_dice", 0)])
def test_token_guide_only_allows_tokens_that_keep_the_reply_legal(game, seed):
    from socialgym_agents.llm.guided import Guide, Vocab, forced_prefix
    tokenizer = _ToyTokenizer()
    vocab = Vocab(tokenizer, len(tokenizer) + 3)          # logits may be wider than the tokenizer
    rng = random.Random(seed)
    env = socialgym_env.make(game, invalid_action="raise")
    env.reset(seed=seed)
    phases, decisions = set(), 0
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if decisions == 12:
            break
        grammar = reply_grammar(info)
        guide = Guide(grammar, vocab, forced_prefix(grammar))
        steps = 0
        while not guide.finished:
            mask = guide.allowed(len(tokenizer) + 3, close=steps > 12)
            allowed = mask.nonzero().flatten().tolist()
            assert allowed and all(vocab.texts[i] for i in allowed), guide.text
            guide.advance(rng.choice(allowed))
            steps += 1
            assert steps < 200
        assert grammar.accepts(guide.text)
        phases.add(info["phase"])
        env.step(guide.text)              # invalid_action="raise": an illegal reply fails here
        decisions += 1
    assert decisions == 12


def _grammar_of(game, seed=0, **config):
    env = socialgym_env.make(game, **config)
    env.reset(seed=seed)
    return reply_grammar(env.decision_view(env.agent_selection))


def test_determined_rest_is_the_one_way_left_to_finish():
    pd = _grammar_of("prisoners_dilemma")
    at = lambda grammar, text: grammar.determined_rest(grammar.advance(grammar.start(), text))
    assert at(pd, '{"action_type": "coop') == 'erate", "argument": ""}'
    assert at(pd, '{"action_type": "d') == 'efect", "argument": ""}'
    assert at(pd, '{"action_type": "') is None                     # cooperate or defect
    assert at(pd, '{"action_type": "defect", "argument": ""}') == ""
    bargaining = _grammar_of("bargaining")                          # propose N, N from 0 to 10
    assert at(bargaining, '{"action_type": "propose", "argument": 5') == "}"
    assert at(bargaining, '{"action_type": "propose", "argument": 1') is None   # 1 or 10
    talk = _grammar_of("battle_of_the_sexes")
    state = talk.advance(talk.start(), '{"action_type": "say", "argument": "')
    assert talk.free_text(state) is not None and talk.determined_rest(state) is None


@pytest.mark.parametrize("game", ["prisoners_dilemma", "bargaining", "liars_dice", "public_goods"])
def test_a_determined_rest_is_what_the_grammar_accepts(game):
    grammar, rng = _grammar_of(game), random.Random(1)
    for _ in range(30):
        reply = _random_reply(grammar, rng)
        for cut in range(len(reply) + 1):
            rest = grammar.determined_rest(grammar.advance(grammar.start(), reply[:cut]))
            if rest is not None:
                assert reply[:cut] + rest == reply            # the only way on is the reply itself
