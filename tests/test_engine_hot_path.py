"""The engine's hot-path shortcuts (issue 32) behave like the plain code they replace: the
hand-written constructors of the frozen dataclasses, the inlined enumeration and its renderer,
infos issued again when nobody read them, and Text spaces that share their character tables."""
import dataclasses
import random
import re

import pytest

import socialgym_env
from socialgym_env.actions import Action, ActionError, ActionSpec, Choice, Grammar, Int, Player
from socialgym_env.game import Phase
from socialgym_env.state import Message


def test_hand_written_constructors_keep_the_dataclass_contract():
    spec = ActionSpec("vote", (Choice(("a", "b")),), help="x")
    assert spec == ActionSpec("vote", (Choice(("a", "b")),), "x") and hash(spec) == hash(ActionSpec("vote", (Choice(("a", "b")),), "x"))
    assert spec != ActionSpec("vote", (Choice(("a", "b")),), help="y")
    assert ActionSpec("pass").schema_extra == {} and ActionSpec("pass").schema_extra is not ActionSpec("pass").schema_extra
    assert [f.name for f in dataclasses.fields(ActionSpec)] == list(vars(spec))    # no hidden fields
    assert Action("vote", ("a",), "vote a") == Action("vote", ("a",), "vote a") and Action("pass").values == ()
    message = Message(0, 1, 2, "day", None, "hi", "public", ("player_0",))
    assert message.to_dict()["receivers"] == ["player_0"] and message == dataclasses.replace(message)
    phase = Phase("p", list, list, print)
    assert (phase.simultaneous, phase.on_action, phase.fallback, phase.instructions, phase.allow_eliminated) == \
        (False, None, "random", "", False)
    for frozen in (spec, Action("pass"), message, phase):
        with pytest.raises(dataclasses.FrozenInstanceError):
            frozen.type = "changed"


def _plain_enumeration(spec):
    """What ``ActionSpec.enumerate`` did before it was inlined: validate every combination."""
    import itertools
    options = [slot.options() for slot in spec.slots]
    combos = itertools.combinations(options[0], spec.repeat) if spec.repeat > 1 and spec.unordered \
        else itertools.product(*options)
    legal = []
    for values in combos:
        try:
            legal.append(spec.validate(tuple(values)))
        except ActionError:
            continue
    return legal


def _raises_on_twos(values):
    if 2 in values:
        raise ActionError("no twos")
    return "odd sum" if sum(values) % 2 else None


PLAYERS = Player((("player_0", "Ana"), ("player_1", "Bo"), ("player_2", "Cy"), ("player_3", "Di")))


@pytest.mark.parametrize("spec", [
    ActionSpec("bid", (Int(1, 6), Int(1, 6)), check=_raises_on_twos),
    ActionSpec("pick", (Int(1, 3), Int(1, 3)), distinct=True),
    ActionSpec("propose", (PLAYERS,), repeat=3, distinct=True, unordered=True),
    ActionSpec("order", (PLAYERS,), repeat=2, distinct=True),
    ActionSpec("vote", (PLAYERS,)),
    ActionSpec("pass"),
])
def test_enumeration_and_its_texts_equal_the_plain_loop(spec):
    legal = spec.enumerate()
    assert legal == _plain_enumeration(spec) and legal
    assert spec.render_all(legal) == [spec.render(values) for values in legal]


def _plain_sample(specs, rng):
    """What ``Grammar.sample`` did before it returned listed Actions: shuffle the specs, draw
    from the first one's enumeration, render the text."""
    order = list(range(len(specs)))
    rng.shuffle(order)
    spec = specs[order[0]]
    values = rng.choice(spec.enumerate())
    return Action(spec.type, values, spec.render(values))


@pytest.mark.parametrize("listed", [False, True])
def test_a_grammar_samples_what_the_plain_draw_gives(listed):
    for seed in range(30):
        # a help text of its own: a list of specs no other test has listed (its facts are new)
        specs = [ActionSpec("vote", (PLAYERS,), help=f"{listed} {seed}"), ActionSpec("pass")]
        grammar = Grammar(specs)
        if listed:
            grammar.actions()      # the shared facts now hold the Actions: sample returns one
        assert grammar.sample(random.Random(seed)) == _plain_sample(specs, random.Random(seed))


def test_an_unread_info_is_issued_again_and_reads_the_state_when_read():
    env = socialgym_env.make("werewolves")
    env.reset(seed=4)
    watcher = next(a for a in env.agents if a != env.agent_selection)
    info_id = id(env.infos[watcher])
    env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    assert id(env.infos[watcher]) == info_id and not env.infos[watcher].built     # nobody read or held it
    fresh = env._basic_info(watcher) if watcher != env.agent_selection else env.decision_view(watcher)
    assert env.infos[watcher] == fresh
    held = env.infos[watcher]                  # read now: the next state gets a new object
    env.step(env.grammar(env.agent_selection).sample(env.state.rng).text)
    assert env.infos[watcher] is not held and held == fresh


def test_text_spaces_share_their_tables_but_not_their_rng():
    a, b = socialgym_env.make("prisoners_dilemma"), socialgym_env.make("prisoners_dilemma")
    space_a, space_b = a.action_space("player_0"), b.action_space("player_0")
    assert space_a is a.action_space("player_0") and space_a is not space_b
    assert a.observation_space("player_0") is not b.observation_space("player_0")
    assert space_a.character_set is space_b.character_set
    space_a.seed(7)
    first = space_a.sample()
    space_b.seed(8)
    space_b.sample()                           # moving b's RNG leaves a's where it was
    space_a.seed(7)
    assert space_a.sample() == first and space_a.contains(first)


def _no_raise_of(standing):
    return lambda values: None if values > standing else f"must raise {standing}"


def test_a_cached_spec_is_built_once_per_key_and_enumerates_as_the_plain_spec():
    from socialgym_env.actions import cached_spec
    built = []

    def build(standing):
        built.append(standing)
        return ActionSpec("bid", (Int(1, 4), Int(1, 3)), check=_no_raise_of(standing))

    low = cached_spec(("test", "bid", (2, 1)), lambda: build((2, 1)))
    assert cached_spec(("test", "bid", (2, 1)), lambda: build((2, 1))) is low and built == [(2, 1)]
    high = cached_spec(("test", "bid", (3, 2)), lambda: build((3, 2)))
    assert high is not low and high == low          # equal fields; only the key tells their checks apart
    for spec, standing in ((low, (2, 1)), (high, (3, 2))):
        plain = ActionSpec("bid", (Int(1, 4), Int(1, 3)), check=_no_raise_of(standing))
        for _ in range(2):                          # the memoised second look as the first
            grammar, reference = Grammar([spec]), Grammar([plain])
            assert grammar.enumerate() == reference.enumerate() == [spec.render(v) for v in _plain_enumeration(plain)]
            assert grammar.actions() == reference.actions()
            assert grammar.sample(random.Random(5)) == reference.sample(random.Random(5))
        with pytest.raises(ActionError, match=re.escape(f"must raise {standing}")):
            Grammar([spec]).parse("bid 1 1")


def test_matrix_status_lines_follow_the_scores_within_a_round():
    env = socialgym_env.make("prisoners_dilemma")
    env.reset(seed=0)
    state, agent = env.state, env.agents[0]
    before = env.game.status(state, agent)
    before.append("changed by the caller")
    state.scores[agent] += 5                       # the same round, other scores: new lines
    after = env.game.status(state, agent)
    assert after != before[:2] and f"{state.name(agent)} 5" in after[1] and len(after) == 2


def test_history_lines_are_sanitised_for_every_seat_that_sees_them():
    env = socialgym_env.make("werewolves", invalid_action="raise")
    env.reset(seed=5)
    while env.state.phase != "day_talk":
        env.skip_dead()
        agent = env.agent_selection
        # one night's kill and nothing else: six seats, nobody wins yet
        env.step("pass" if env.state.phase in ("night_talk", "witch") else env.grammar(agent).sample(env.state.rng).text)
    for text in ("plain words", "odd \u4e2d\x07 text", "plain again"):
        env.skip_dead()
        env.step(f"say {text}")
    assert env.state.phase == "day_talk"
    for agent in env.agents:
        observation = env.observation_text(agent)
        assert "odd ?? text" in observation and "\u4e2d" not in observation and "\x07" not in observation
        assert "plain words" in observation and "plain again" in observation
        assert observation.index("plain words") < observation.index("odd ?? text") < observation.index("plain again")


def test_a_flat_config_passes_through_encodable_data_as_itself_unless_it_holds_a_surrogate():
    from socialgym_env.actions import encodable_data
    plain = {"rounds": 5, "invalid_action": "raise", "ratio": 0.5, "flag": True, "none": None, "name": "Björn"}
    assert encodable_data(plain) is plain
    for bad in ({"name": "a\ud800"}, {"k\udc00": 1}, {"nested": ["\udcff"]}):
        cleaned = encodable_data(bad)
        assert cleaned is not bad and "\ufffd" in repr(cleaned) and "\\ud" not in repr(cleaned)


def test_matrix_move_specs_are_shared_only_between_games_with_the_same_choices():
    from socialgym_env.games.prisoners_dilemma import PrisonersDilemma
    first, second = (socialgym_env.make("prisoners_dilemma") for _ in range(2))
    specs = first.game.move_specs(None, "player_0")
    assert all(a is b for a, b in zip(specs, second.game.move_specs(None, "player_0")))
    specs.append(ActionSpec("pass"))                     # the caller's list only
    assert len(first.game.move_specs(None, "player_0")) == 2

    class Wider(PrisonersDilemma):                        # a variant whose choices its config sets
        def __init__(self, config):
            self.choices = tuple(config.get("choices", self.choices))
            super().__init__(config)

    wide = Wider({"rounds": 1, "choices": ("cooperate", "defect", "abstain")})
    assert [s.type for s in wide.move_specs(None, "player_0")] == ["cooperate", "defect", "abstain"]
    assert [s.type for s in Wider({"rounds": 1}).move_specs(None, "player_0")] == ["cooperate", "defect"]
