"""The engine's fast lane (issue 32): a legal list's canonical text resolved by one look-up, and
integer actions (``env.step_index``), each exactly what the grammar's parser and ``step`` with
the text give."""
import random

import pytest

import socialgym_env
from socialgym_env.actions import ActionSpec, Choice, Grammar, Int, Player

from helpers import random_junk_episode

SEEDS = (0, 1)


@pytest.mark.parametrize("game_id", socialgym_env.game_ids())
def test_a_looked_up_action_is_the_parsed_one(game_id):
    counts = {"hits": 0, "shared": 0}

    def check_then_sample(env, agent, info, rng):
        grammar = env.grammar(agent)
        texts = grammar.enumerate()
        if texts is None:
            assert grammar.actions() is None and grammar.lookup("pass") is None
        else:
            counts["shared"] += grammar._facts.shared
            assert [a.text for a in grammar.actions()] == texts
            for text in texts[:40]:
                for form in (text, f"  {text.upper()} "):
                    found = grammar.lookup(form)
                    if found is not None:
                        counts["hits"] += 1
                        assert found == grammar.parse(form), (game_id, form)
            assert grammar.lookup(texts[0] + " ?!") is None     # another form: the parser's job
        return grammar.sample(rng).text

    for seed in SEEDS:
        random_junk_episode(game_id, seed, [""], junk_rate=0.0, legal=check_then_sample)
    if counts["shared"]:
        assert counts["hits"], f"{game_id}: the fast lane never answered"


def test_lookup_never_answers_for_a_state_dependent_check():
    spec = ActionSpec("bid", (Int(1, 3, name="Q"),), check=lambda values: None)
    assert Grammar([spec]).lookup("bid 2") is None and Grammar([spec]).parse("bid 2").values == (2,)


def _warm(grammar: Grammar) -> Grammar:
    """The table is built at a list's second look-up (a list seen once only parses)."""
    assert grammar.lookup(grammar.enumerate()[0]) is None
    return grammar


def test_lookup_keeps_the_parsers_choice_of_a_repeated_keyword():
    grammar = _warm(Grammar([ActionSpec("go", (Choice(("north",)),)), ActionSpec("go", (Choice(("south",)),))]))
    assert grammar.lookup("go north") is None                  # the parser only knows the last "go"
    assert grammar.lookup("go south") == grammar.parse("go south")


def test_lookup_is_only_for_arguments_read_case_blind():
    class Move(Choice):        # a case-sensitive kind of argument (as chess moves are)
        def parse(self, rest):
            token, _, rest = rest.strip().partition(" ")
            if token not in self.choices:
                raise socialgym_env.ActionError(f"no move {token!r}")
            return token, rest

    grammar = Grammar([ActionSpec("move", (Move(("Nf3", "e4")),))])
    assert grammar.lookup("move Nf3") is None and grammar.lookup("move nf3") is None   # the parser decides
    assert grammar.parse("move Nf3").values == ("Nf3",)
    with pytest.raises(socialgym_env.ActionError):
        grammar.parse("move nf3")
    plain = _warm(Grammar([ActionSpec("move", (Choice(("Nf3", "e4")),))]))
    assert plain.lookup("MOVE nf3") == plain.parse("MOVE nf3") == plain.make("move", "Nf3")


def test_lookup_folds_case_beyond_ascii():
    grammar = _warm(Grammar([ActionSpec("vote", (Player((("player_0", "Björn"), ("player_1", "Ana"))),))]))
    decomposed = "VOTE BJO\u0308RN"
    assert grammar.lookup(decomposed) == grammar.parse(decomposed) == grammar.make("vote", "player_0")


def _play(game_id: str, seed: int, integer: bool):
    """A seeded random episode, the legal list's choices sent as indices or as their texts."""
    env = socialgym_env.make(game_id, log_observations=True)
    env.reset(seed=seed)
    rng = random.Random(seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            (env.step_index(0) if integer else env.step(None))
            continue
        texts = env.infos[agent].get("legal_action_list")
        if texts is None:
            env.step(env.grammar(agent).sample(rng).text)
            continue
        index = rng.randrange(len(texts))
        env.step_index(index) if integer else env.step(texts[index])
    return env.episode_record()


@pytest.mark.parametrize("game_id", ["prisoners_dilemma", "liars_dice", "werewolves", "resistance", "coup"])
def test_step_index_plays_the_listed_text(game_id):
    by_index, by_text = _play(game_id, 3, True), _play(game_id, 3, False)
    assert by_index == by_text and by_index["finished"]
    assert all(turn["valid"] for turn in by_index["turns"])


def test_a_bad_index_raises_and_changes_nothing():
    env = socialgym_env.make("werewolves")
    env.reset(seed=0)
    rng = random.Random(0)
    while "legal_action_list" not in env.infos[env.agent_selection]:      # on to a listed decision
        env.step(env.grammar(env.agent_selection).sample(rng).text)
    agent = env.agent_selection
    size = len(env.infos[agent]["legal_action_list"])
    before = (env.observation_text(agent), env.state.step, len(env.turns))
    for bad in (size, -1):
        with pytest.raises(ValueError, match="outside"):
            env.step_index(bad)
    assert (env.observation_text(agent), env.state.step, len(env.turns)) == before
    while "legal_action_list" in env.infos[env.agent_selection]:     # on to a free-talk decision
        env.step_index(0)
    with pytest.raises(ValueError, match="free text"):
        env.step_index(0)
