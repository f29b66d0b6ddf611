"""Engine behaviour through a tiny purpose-built game: visibility, eligibility, invalid-action
modes, forfeits, turn cap, bad input, and the registry's errors."""
import json

import pytest

import socialgym_env
from socialgym_env import registry
from socialgym_env.actions import ActionSpec
from socialgym_env.errors import (ConfigError, GameOverError, InvalidActionError, NotYourTurnError,
                                  UnknownGameError)
from socialgym_env.game import TEAM, Game, GameInfo, Phase, median_split, outcome_rewards
from socialgym_env.patterns import everyone, player_arg, plurality, strict_majority, vote_specs, vote_values
from socialgym_env.state import PRIVATE, TARGETED


class Probe(Game):
    """3 seats: wolf (team w) and two villagers (team v). Night: the wolf whispers to its team
    and names a target (private result to the wolf); Day: everyone votes; plurality exiles;
    wolf exiled -> village wins, else the game loops until the cap."""

    info = GameInfo(id="probe", name="Probe", category="hidden_role", num_players=3,
                    information="hidden_roles", communication="free_form", horizon="open_ended",
                    iteration="until elimination", skills=("deception",), outcome=TEAM, max_steps=12,
                    roles=(("wolf", 1, "w"), ("villager", 2, "v")), main_role="villager", alt_role="wolf")

    def setup(self, state):
        state.round = 1
        for agent in state.agents:
            state.tell(agent, f"Your role is {state.role(agent)}.")
        state.goto("night")

    def phases(self):
        return [
            Phase("night", actors=lambda s: s.with_role("wolf"),
                  grammar=lambda s, a: [ActionSpec("kill", (player_arg(s, s.others(a)),))],
                  resolve=self.night, fallback="random"),
            Phase("day", actors=everyone, simultaneous=True,
                  grammar=lambda s, a: vote_specs(s, a, s.others(a), allow_abstain=True),
                  resolve=self.day, fallback="abstain"),
        ]

    def night(self, state, actions):
        (wolf, action), = actions.items()
        state.tell_team("w", f"The wolves chose {state.name(action.arg)}.")
        state.post(f"{state.name(action.arg)} had a bad dream.", visibility=TARGETED, to=[action.arg, wolf])
        state.goto("day")

    def day(self, state, actions):
        exiled = plurality(state, vote_values(actions), tie="none")
        if exiled and state.role(exiled) == "wolf":
            state.finish("the wolf was exiled", winners=state.on_team("v", alive_only=False))
            return
        if exiled:
            state.eliminate(exiled)
            state.announce(f"{state.name(exiled)} leaves.")
        if len(state.alive()) <= 2 and state.with_role("wolf"):
            state.finish("the wolf reached parity", winners=state.with_role("wolf"))
            return
        state.round += 1
        state.goto("night")


@pytest.fixture
def probe():
    registry.register_game(Probe)
    yield
    registry.unregister_game("probe")


def start(seed=0, **config):
    env = socialgym_env.make("probe", **config)
    env.reset(seed=seed)
    wolf = env.state.with_role("wolf")[0]
    villagers = env.state.with_role("villager")
    return env, wolf, villagers


def visible_texts(env, agent):
    return [m.text for m in env.state.visible_to(agent)]


def test_private_team_and_targeted_messages_reach_only_their_receivers(probe):
    env, wolf, (v1, v2) = start()
    assert env.agent_selection == wolf
    env.step(f"kill {env.state.name(v1)}")
    chosen = f"The wolves chose {env.state.name(v1)}."
    dream = f"{env.state.name(v1)} had a bad dream."
    assert chosen in visible_texts(env, wolf)
    assert chosen not in visible_texts(env, v1) and chosen not in visible_texts(env, v2)
    assert dream in visible_texts(env, v1) and dream in visible_texts(env, wolf)
    assert dream not in visible_texts(env, v2)
    assert env.infos[wolf]["agent"] == wolf and env.infos[v1]["agent"] == v1   # each seat knows its id
    assert "Your role is wolf." not in env.observe(v2)["text"]
    assert "Your role is wolf." in env.observe(wolf)["text"]
    assert all(m.visibility != PRIVATE or len(m.receivers) == 1 for m in env.state.messages)


def test_simultaneous_votes_are_hidden_until_resolved_and_ties_exile_nobody(probe):
    env, wolf, (v1, v2) = start()
    env.step(f"kill {env.state.name(v1)}")
    assert env.pending_actors() == env.possible_agents
    env.step(f"vote {env.state.name(env.state.others('player_0')[0])}")
    assert not any("Votes:" in m.text for m in env.state.messages)  # nothing revealed mid-vote
    # Everybody votes a different person -> three-way tie.
    env.state.seat  # the remaining two vote so that each seat has one vote
    order = env.possible_agents
    targets = {order[0]: order[1], order[1]: order[2], order[2]: order[0]}
    env.reset(seed=0)
    env.step(f"kill {env.state.name(v1)}")
    for agent in order:
        env.step(f"vote {env.state.name(targets[agent])}")
    tie_line = [m.text for m in env.state.messages if m.text.startswith("Tie between")]
    assert tie_line == [f"Tie between {env.state.names(order)}: nobody is chosen."]
    assert all(s.alive for s in env.state.seats)


def test_eliminated_players_never_act(probe):
    env, wolf, (v1, v2) = start(seed=3)
    env.step(f"kill {env.state.name(v1)}")
    for agent in env.possible_agents:  # everybody votes v1 out
        env.step(f"vote {env.state.name(v1 if agent != v1 else v2)}")
    assert not env.state.seat[v1].alive
    # Only 2 alive with the wolf -> parity ends the game, the eliminated never acted again.
    assert env.state.result is not None
    assert env.state.result.reason == "the wolf reached parity"
    assert env.rewards[wolf] == 1.0 and env.rewards[v1] == -1.0 and env.rewards[v2] == -1.0
    assert env.infos[wolf]["outcome"] == "win" and env.infos[v1]["outcome"] == "loss"


def test_invalid_action_fallback_is_recorded_and_never_raises(probe):
    env, wolf, _ = start()
    env.step("eyes")
    assert env.turns[-1]["valid"] is False and env.turns[-1]["fallback"] is True
    assert env.turns[-1]["reason"] == "unknown action type 'eyes'; legal: kill"
    assert env.infos[wolf]["invalid_action"]["reason"] == "unknown action type 'eyes'; legal: kill"
    assert env.turns[-1]["action"].startswith("kill ")
    # day phase fallback is "abstain"
    env.step("vote Nobody")
    assert env.turns[-1]["action"] == "abstain"
    assert sum(env.invalid_counts.values()) == 2


def test_raise_mode_raises_with_the_reason(probe):
    env, _, _ = start(invalid_action="raise")
    with pytest.raises(InvalidActionError, match="unknown action type 'hello'"):
        env.step("hello")


def test_forfeit_mode_ends_the_game_against_the_offender_team(probe):
    env, wolf, villagers = start(invalid_action="forfeit")
    env.step("")
    assert env.state.result.reason.endswith("forfeited by an invalid action (empty action)")
    assert env.rewards[wolf] == -1.0 and all(env.rewards[v] == 1.0 for v in villagers)


def test_turn_cap_truncates_and_default_rule_is_a_draw(probe):
    env, wolf, villagers = start(max_steps=2)
    env.step(f"kill {env.state.name(villagers[0])}")
    env.step(f"vote {env.state.name(villagers[0])}")
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert set(env.rewards.values()) == {0.0}
    assert env.state.result.reason == "turn cap reached: draw"


def test_step_after_the_end_and_acting_out_of_turn(probe):
    env, wolf, villagers = start(invalid_action="forfeit")
    with pytest.raises(NotYourTurnError, match=f"it is {wolf}'s turn, not {villagers[0]}'s"):
        env.act(villagers[0], "kill x")
    env.step("junk")
    for agent in env.agent_iter():
        env.step(None)
    with pytest.raises(GameOverError, match="the episode is over; call reset"):
        env.step("kill Alice")


def test_same_seed_same_actions_same_transcript_bytes(probe):
    def run(seed):
        env, wolf, villagers = start(seed=seed)
        env.step("junk")
        for agent in env.possible_agents:
            env.step("abstain")
        return json.dumps(env.episode_record(), ensure_ascii=False, sort_keys=True)

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_registry_errors_name_what_is_valid():
    with pytest.raises(UnknownGameError, match="unknown game 'prisoner'. Did you mean prisoners_dilemma"):
        socialgym_env.make("prisoner")
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['roundz'\]; valid keys:"):
        socialgym_env.make("prisoners_dilemma", roundz=3)
    with pytest.raises(ConfigError, match="config 'rounds' must be int, got 'five'"):
        socialgym_env.make("prisoners_dilemma", rounds="five")
    with pytest.raises(ConfigError, match="rounds must be at least 1, got 0"):
        socialgym_env.make("prisoners_dilemma", rounds=0)
    with pytest.raises(ConfigError, match="dice must be from 1 to 20, got 21"):
        socialgym_env.make("liars_dice", dice=21)
    with pytest.raises(ConfigError, match="suspicion_alpha must be from 0.0 to 1.0, got 1.5"):
        socialgym_env.make("triadic_werewolf", suspicion_alpha=1.5)
    with pytest.raises(ConfigError, match="prisoners_dilemma is played by 2 players, got 3"):
        socialgym_env.make("prisoners_dilemma", num_players=3)
    with pytest.raises(ConfigError, match="invalid_action must be one of"):
        socialgym_env.make("chicken", invalid_action="ignore")
    with pytest.raises(ConfigError, match="render_mode must be one of"):
        socialgym_env.make("chicken", render_mode="rgb_array")
    assert socialgym_env.make("socialgym/chicken-v0").game_info.id == "chicken"


def test_pettingzoo_registry_makes_every_game_and_a_registered_one(probe):
    import pettingzoo
    for game_id in socialgym_env.game_ids():
        env = pettingzoo.make("aec", socialgym_env.env_id(game_id))
        assert env.game_info.id == game_id
    assert "probe" in socialgym_env.game_ids()
    assert pettingzoo.make("aec", "socialgym/probe-v0").game_info.name == "Probe"


def test_outcome_rules_have_no_seat_order_tie_breaks():
    assert median_split({"a": 5, "b": 5, "c": 5, "d": 5}) == {"a": 0, "b": 0, "c": 0, "d": 0}
    assert median_split({"a": 1, "b": 5, "c": 5, "d": 9}) == {"a": -1, "b": 0, "c": 0, "d": 1}
    assert outcome_rewards("two_player", ["a", "b"], {"a": 3, "b": 3}, ()) == {"a": 0, "b": 0}
    assert outcome_rewards("team", ["a", "b", "c"], {}, ("b",)) == {"a": -1, "b": 1, "c": -1}
    assert outcome_rewards("winner_take_all", ["a", "b"], {}, ()) == {"a": 0, "b": 0}


def test_strict_majority():
    assert strict_majority({"a": "x", "b": "x", "c": "y"}, 3) == "x"
    assert strict_majority({"a": "x", "b": "y", "c": None, "d": "x"}, 4) is None


def test_default_turn_cap_reason_says_what_the_rewards_say():
    # The shared rules, "Turn cap": no cap rule of its own -> the outcome rule on the scores so far,
    # and never "draw" when the rewards are not a draw.
    env = socialgym_env.make("prisoners_dilemma", max_steps=2)
    env.reset(seed=0)
    env.step("cooperate")
    env.step("defect")
    record = env.episode_record()
    assert record["truncated"] is True
    assert record["rewards"] == {"player_0": -1.0, "player_1": 1.0}
    assert record["outcomes"] == {"player_0": "loss", "player_1": "win"}
    assert record["reason"] == "turn cap reached: scored on the points so far (Yusuf 0, Björn 5); ahead: Björn"
    assert record["transcript"][-1].endswith("Game over: turn cap reached: scored on the points so far "
                                             "(Yusuf 0, Björn 5); ahead: Björn.")


def test_actors_public_only_hides_a_hidden_role_phase_some_seats_play():
    import random as _random
    pd = socialgym_env.make("prisoners_dilemma")
    pd.reset(seed=0)
    assert pd.actors_public()
    env = socialgym_env.make("werewolves")
    env.reset(seed=4)
    rng, seen = _random.Random(0), {}
    while env.agents and not env.state.finished:
        env.skip_dead()
        if not env.agents:
            break
        seen.setdefault(env.state.phase, set()).add(env.actors_public())
        env.step(env.grammar(env.agent_selection).sample(rng).text)
    # the village's phases are everyone's; the night's belong to roles
    assert seen == {"day_talk": {True}, "day_vote": {True}, "night_talk": {False}, "seer": {False},
                    "witch": {False}, "wolf_kill": {False}}


def test_reset_with_given_names_keeps_the_rest_of_the_seeds_episode():
    """``options["names"]`` (branching's determinisation) replaces only the drawn names: roles,
    deal and every later draw are the seed's own."""
    import socialgym_env
    plain, named = socialgym_env.make("werewolves"), socialgym_env.make("werewolves")
    plain.reset(seed=11)
    names = [f"Seat{i}" for i in range(len(plain.possible_agents))]
    named.reset(seed=11, options={"names": names})
    assert [named.state.seat[a].name for a in named.possible_agents] == names
    assert [plain.state.seat[a].role for a in plain.possible_agents] == \
        [named.state.seat[a].role for a in named.possible_agents]
    assert plain.state.rng.getstate() == named.state.rng.getstate()
    with pytest.raises(Exception, match="names for"):
        named.reset(seed=11, options={"names": names[:2]})
