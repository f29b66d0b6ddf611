"""The action grammar: strict parsing, JSON and plain forms, validation reasons, sampling."""
import random

import pytest

from socialgym_env.actions import ActionError, ActionSpec, Choice, Grammar, Int, Player, Text, Word

NAMES = (("player_0", "Alice"), ("player_1", "Zoë"), ("player_2", "Bram"))


def grammar():
    return Grammar([
        ActionSpec("yes"), ActionSpec("no"),
        ActionSpec("vote", (Player(NAMES),)),
        ActionSpec("contribute", (Int(0, 10),)),
        ActionSpec("say", (Text(20),)),
        ActionSpec("propose", (Player(NAMES),), repeat=2, distinct=True, unordered=True),
        ActionSpec("bid", (Int(1, 5, "Q"), Int(1, 6, "F")),
                   check=lambda v: None if v[0] * v[1] > 2 else "bid too low"),
    ])


@pytest.mark.parametrize("raw,expected", [
    ("yes", "yes"), ("  YES. ", "yes"), ('{"action_type": "yes"}', "yes"),
    ("vote alice", "vote Alice"), ("vote Zoë", "vote Zoë"), ("vote player_2", "vote Bram"),
    ('{"action_type": "vote", "argument": "Bram"}', "vote Bram"),
    ("contribute 7", "contribute 7"), ('{"action_type": "contribute", "argument": 3}', "contribute 3"),
    ("say Hello, it's me!", "say Hello, it's me!"),
    ("propose Alice, Bram", "propose Alice Bram"),
    ('{"action_type": "propose", "argument": ["Alice", "Zoë"]}', "propose Alice Zoë"),
    ("bid 2 6", "bid 2 6"),
])
def test_valid_actions_parse_to_canonical_text(raw, expected):
    assert grammar().parse(raw).text == expected


@pytest.mark.parametrize("raw,reason", [
    ("eyes", "unknown action type 'eyes'"),
    ("yess", "unknown action type 'yess'"),
    ("", "empty action"),
    ("   ", "empty action"),
    ("vote Alicia", "NAME must be one of: Alice, Zoë, Bram (got 'Alicia')"),
    ("vote", "'vote' needs 'vote NAME'"),
    ("contribute 11", "N must be from 0 to 10 (got 11)"),
    ("contribute 2.5", "N must be a whole number from 0 to 10 (got '2.5')"),
    ("yes please", "unexpected text after 'yes': 'please'"),
    ("say " + "x" * 21, "TEXT is longer than 20 characters (21)"),
    ("propose Alice Alice", "'propose' needs 2 different values"),
    ("bid 1 2", "bid too low"),
    ('{"action_type": 5}', '"action_type" must be a string'),
    ('{"argument": "x"}', 'JSON action needs an "action_type" key'),
    ('{"action_type": "vote", "argument": {"a": 1}}', '"argument" must be a string, a number or a list'),
    ("{not json", "invalid JSON"),
])
def test_invalid_actions_give_the_reason(raw, reason):
    with pytest.raises(ActionError) as err:
        grammar().parse(raw)
    assert reason in str(err.value)


def test_non_string_action_is_an_action_error():
    with pytest.raises(ActionError, match="must be a string, not int"):
        grammar().parse(3)


def test_player_values_are_agent_ids():
    action = grammar().parse("vote zoë")
    assert action.values == ("player_1",)


def test_enumeration_respects_checks_and_unordered_repeats():
    specs = grammar()
    legal_bids = [v for v in specs.by_type["bid"].enumerate()]
    assert (1, 2) not in legal_bids and (1, 3) in legal_bids
    assert len(legal_bids) == 5 * 6 - 3  # (1,1), (1,2) and (2,1) fail the check
    assert specs.by_type["propose"].enumerate() == [("player_0", "player_1"), ("player_0", "player_2"),
                                                    ("player_1", "player_2")]
    assert specs.enumerate() is None  # free text makes the set unbounded


def test_sampling_is_legal_and_seeded():
    g = grammar()
    a = [g.sample(random.Random(5)).text for _ in range(3)]
    b = [g.sample(random.Random(5)).text for _ in range(3)]
    assert a == b
    rng = random.Random(1)
    for _ in range(200):
        assert g.parse(g.sample(rng).text).text  # every sample parses back


def test_json_schema_lists_each_action_type():
    schema = grammar().json_schema()
    types = [branch["properties"]["action_type"]["const"] for branch in schema["oneOf"]]
    assert types == ["yes", "no", "vote", "contribute", "say", "propose", "bid"]
    vote = schema["oneOf"][2]["properties"]["argument"]
    assert vote == {"type": "string", "enum": ["Alice", "Zoë", "Bram"]}


def test_word_and_choice_args():
    g = Grammar([ActionSpec("clue", (Word(),)), ActionSpec("pick", (Choice(("red", "blue")),))])
    assert g.parse("clue apple.").text == "clue apple"
    with pytest.raises(ActionError, match="OPTION must be one of: red, blue"):
        g.parse("pick green")


def test_names_match_after_nfc_normalisation_and_case_folding():
    import unicodedata

    spec = Grammar([ActionSpec("vote", (Player((("player_0", "Björn"), ("player_1", "Bea"))),))])
    decomposed = unicodedata.normalize("NFD", "BJÖRN")
    assert decomposed != "BJÖRN" and len(decomposed) == 6     # O + combining diaeresis
    action = spec.parse(f"vote {decomposed}")
    assert action.values == ("player_0",) and action.text == "vote Björn"
    assert spec.parse(unicodedata.normalize("NFD", "VOTE björn")).values == ("player_0",)
