"""The hidden-role games' package data (socialgym_env/data/*.json): loadable with
importlib.resources, big enough, well-formed and consistent with the rules that read it."""
import json
from importlib import resources

import pytest

from socialgym_env.games.chameleon import topic_cards
from socialgym_env.games.insider import YES, NO, oracle_answer, word_table
from socialgym_env.games.spyfall import locations, match_location
from socialgym_env.games.undercover import word_pairs
from socialgym_env.patterns import normalize_word

DATA_FILES = ["chameleon_cards.json", "spyfall_locations.json", "undercover_pairs.json", "insider_words.json"]


@pytest.mark.parametrize("name", DATA_FILES)
def test_data_file_is_package_data_json(name):
    text = resources.files("socialgym_env").joinpath("data", name).read_text("utf-8")
    data = json.loads(text)
    assert data["version"] == 1 and data["description"]


def test_chameleon_cards():
    cards = topic_cards()
    assert len(cards) >= 10
    assert len({c["category"] for c in cards}) == len(cards)
    for card in cards:
        words = [w["word"] for w in card["words"]]
        assert len(words) >= 16, card["category"]
        assert len({normalize_word(w) for w in words}) == len(words), card["category"]
        keys = {normalize_word(w) for w in words}
        for w in card["words"]:
            assert w["word"].strip() and w["hints"], w
            for hint in w["hints"]:
                assert hint.isalpha() and normalize_word(hint) not in keys, (card["category"], hint)


def test_spyfall_locations():
    bank = locations()
    assert len(bank) >= 30
    assert len({normalize_word(loc["name"]) for loc in bank}) == len(bank)
    for loc in bank:
        assert len(set(loc["roles"])) >= 3, loc["name"]       # one flavour role per Non-Spy
        assert loc["keywords"] and all(k.isalpha() and k == k.lower() for k in loc["keywords"])
        assert match_location(loc["name"].upper()) == loc["name"]


def test_undercover_pairs():
    pairs = word_pairs()
    assert len(pairs) >= 40
    seen = set()
    for a, b in pairs:
        assert a["word"] != b["word"] and a["word"].isalpha() and b["word"].isalpha()
        assert a["hints"] and b["hints"] and not set(a["hints"]) & set(b["hints"]), (a, b)
        assert a["word"] not in a["hints"] and b["word"] not in b["hints"]
        key = frozenset((a["word"], b["word"]))
        assert key not in seen
        seen.add(key)


def test_insider_word_attribute_table():
    table = word_table()
    attributes, categories = table["attributes"], table["categories"]
    assert len(attributes) >= 8 and {"living", "edible", "bigger_than_a_breadbox", "man_made"} <= set(attributes)
    words = [e["word"] for e in table["words"]]
    assert len(words) == len(set(words)) >= 50
    for e in table["words"]:
        assert e["word"].isalpha() and e["word"] == e["word"].lower()
        assert e["category"] in categories
        assert set(e["attributes"]) == set(attributes)
        assert all(isinstance(v, bool) for v in e["attributes"].values())
    for category in categories:
        assert sum(e["category"] == category for e in table["words"]) >= 8


def test_insider_oracle_understands_every_listed_phrasing():
    table = word_table()
    for e in table["words"][::7]:
        for name, attr in table["attributes"].items():
            assert attr["meaning"]
            for question in attr["questions"]:
                assert oracle_answer(question + "?", e) == (YES if e["attributes"][name] else NO), (question, e["word"])
        for category, spec in table["categories"].items():
            for alias in spec["aliases"]:
                article = "an" if alias[0] in "aeiou" else "a"
                expected = YES if category == e["category"] else NO
                assert oracle_answer(f"Is it {article} {alias}?", e) == expected, (alias, e["word"])
