"""The rules text a player reads follows the game's config (issue 65): with ``max_cycles=2`` the
Werewolves prompt once said "After 10 day-night cycles the game is a draw". For every registered
game (the registry is iterated, so a new game is covered) and every numeric config key, a
non-default valid value is set: where the default rules text states the key's default, the
rules text must state the new value instead."""
import re

import pytest

import socialgym_env
from socialgym_env.registry import game_class

WORDS = dict(enumerate("zero one two three four five six seven eight nine ten eleven twelve".split()))

# A default's number that the rules text states for another quantity (each reviewed): the key
# itself is not mentioned, so the text rightly stays as it is when the key changes.
UNRELATED = {
    ("prisoners_dilemma", "rounds"): "5 is the defector's payoff",
    ("public_goods", "rounds"): "10 is each round's endowment of coins",
    ("triadic_werewolf", "max_explanation_turns"): "6 is the Villagers' count (the turns are not stated)",
    ("sheriff_of_nottingham", "rounds"): "4 is the merchants and payoffs; the rounds are 'one round each' "
                                         "(test_sheriff_rules_say_the_configured_rounds)",
}

CANDIDATES = (7, 13, 3, 17, 2, 11, 23, 4, 5, 6, 9)
FLOAT_CANDIDATES = (0.37, 0.83)


def numeric_keys(game_id: str) -> list:
    cls = game_class(game_id)
    keys = [k for k, v in cls.config_defaults.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(getattr(cls, "player_counts", ())) > 1:
        keys.append("num_players")
    return keys


CASES = [(g, k) for g in socialgym_env.game_ids() for k in numeric_keys(g)]


def rules_text(game_id: str, **config) -> str:
    """The game's rules as the model reads them: the head of the first seat's observation."""
    env = socialgym_env.make(game_id, **config)
    env.reset(seed=0)
    return env.game.description(env.state)


def mentions(text: str, value) -> int:
    """How many times ``text`` states ``value`` (digits, or a small whole number's word)."""
    count = len(re.findall(rf"(?<![\d.]){re.escape(str(value))}(?![\d.]|\.\d)", text))
    if isinstance(value, int) and value in WORDS:
        count += len(re.findall(rf"\b{WORDS[value]}\b", text, flags=re.IGNORECASE))
    return count


def other_value(game_id: str, key: str, default, text: str):
    """A valid value other than the default that the default text never states."""
    if key == "num_players":
        choices = [n for n in game_class(game_id).player_counts if n != default]
    else:
        choices = FLOAT_CANDIDATES if isinstance(default, float) else CANDIDATES
    valid = []
    for value in choices:
        if value == default:
            continue
        try:
            socialgym_env.make(game_id, **{key: value})
        except ValueError:
            continue
        valid.append(value)
    if not valid:
        pytest.fail(f"{game_id}: no valid non-default value of {key} to try")
    # a value the default text never states, else one it states for something else (the test then
    # asks for more mentions of it than before)
    return next((v for v in valid if not mentions(text, v)), valid[0])


def test_every_game_with_numeric_config_is_covered():
    assert {"werewolves", "bargaining", "triadic_werewolf", "liars_dice"} <= {g for g, _ in CASES}


@pytest.mark.parametrize("game_id, key", CASES, ids=[f"{g}-{k}" for g, k in CASES])
def test_rules_text_states_the_configured_value_not_the_default(game_id, key):
    cls = game_class(game_id)
    default = cls.info.num_players if key == "num_players" else cls.config_defaults[key]
    before = rules_text(game_id)
    value = other_value(game_id, key, default, before)
    after = rules_text(game_id, **{key: value})
    if not mentions(before, default) or (game_id, key) in UNRELATED:
        # the text does not state the key: it stays as it is, or states the value it now follows
        assert after == before or mentions(after, value) > mentions(before, value), (game_id, key, after)
        return
    assert mentions(after, value) > mentions(before, value), (
        f"{game_id} with {key}={value}: the rules do not say {value}:\n{after}")
    assert mentions(after, default) < mentions(before, default), (
        f"{game_id} with {key}={value}: the rules still state the default {default}:\n{after}")


def test_werewolves_rules_say_the_configured_cycles():
    """The audit's case, word for word."""
    text = rules_text("werewolves", max_cycles=2)
    assert "After 2 day-night cycles the game is a draw." in text and "10" not in text
    assert "After 10 day-night cycles the game is a draw." in rules_text("werewolves")


def test_sheriff_rules_say_the_configured_rounds():
    assert "one round each" in rules_text("sheriff_of_nottingham")
    text = rules_text("sheriff_of_nottingham", rounds=7)
    assert "one round each" not in text and "play 7 rounds" in text
