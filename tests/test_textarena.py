"""socialgym_env.textarena: every game behind TextArena's interface, through TextArena's own
``ta.make``, its registry and its default wrappers (textarena 0.7.x, the textarena extra)."""
import random

import pytest
import textarena as ta
from textarena.envs.registration import ENV_REGISTRY
from textarena.wrappers import ActionFormattingWrapper, LLMObservationWrapper

import socialgym_env
from socialgym_env import textarena as sg_ta

Type = ta.ObservationType


def core(env):
    """The unwrapped env under TextArena's wrappers."""
    while isinstance(env, ta.Wrapper):
        env = env.env
    return env


def random_move(env, rng) -> str:
    """A uniformly drawn legal move of the acting seat, as the grammar writes it (no brackets:
    ActionFormattingWrapper adds them where it wraps)."""
    game_env = core(env).game_env
    return game_env.grammar(game_env.agent_selection).sample(rng).text


def play(env_id: str, seed: int, num_players=None, moves=None):
    """One episode to its end with random legal moves drawn from ``seed``: the observations
    (player, observation) and close()'s answer."""
    env = ta.make(env_id)
    game = core(env).game_id
    env.reset(num_players=num_players or socialgym_env.game_class(game).info.num_players, seed=seed)
    rng, seen, done = random.Random(seed), [], False
    while not done:
        player, observation = env.get_observation()
        seen.append((player, observation))
        done, _ = env.step(moves.pop(0) if moves else random_move(env, rng))
    return seen, env.close()


def test_every_game_is_registered_with_textarenas_three_variants():
    for game in socialgym_env.game_ids():
        ta_id = sg_ta.textarena_id(game)
        assert ta_id.startswith("SocialGym-") and {ta_id, ta_id + "-raw", ta_id + "-train"} <= set(ENV_REGISTRY)
        plain, raw = ta.make(ta_id), ta.make(ta_id + "-raw")
        assert plain.is_wrapped_with(LLMObservationWrapper) and plain.is_wrapped_with(ActionFormattingWrapper)
        assert isinstance(raw, sg_ta.SocialGymTextArenaEnv) and raw.game_id == game
    assert sg_ta.textarena_id("werewolves") == "SocialGym-Werewolves-v0"
    assert sg_ta.register_games() == []          # idempotent: nothing registered twice


def test_a_game_registered_later_is_added_by_register_games():
    import dataclasses

    from socialgym_env.games.prisoners_dilemma import PrisonersDilemma

    class Copy(PrisonersDilemma):
        info = dataclasses.replace(PrisonersDilemma.info, id="pd_copy_for_ta")
    socialgym_env.register_game(Copy)
    try:
        assert sg_ta.register_games() == ["SocialGym-PdCopyForTa-v0"]
        _, (rewards, _) = play("SocialGym-PdCopyForTa-v0", seed=1)
        assert set(rewards) == {0, 1}
    finally:
        socialgym_env.unregister_game("pd_copy_for_ta")


@pytest.mark.parametrize("game", socialgym_env.game_ids())
def test_every_game_plays_to_its_end_through_ta_make_and_the_default_wrappers(game):
    """TextArena's default wrappers on every game: string observations, bracketed actions,
    close() with a rule-decided reward and game_info for every seat."""
    seen, (rewards, game_info) = play(sg_ta.textarena_id(game), seed=7)
    players = socialgym_env.game_class(game).info.num_players
    assert all(isinstance(observation, str) and observation for _, observation in seen)
    assert "[GAME] === " in seen[0][1]            # the PROMPT, rendered by LLMObservationWrapper
    assert set(rewards) == set(range(players)) and all(r in (-1.0, 0.0, 1.0) for r in rewards.values())
    assert set(game_info) == set(range(players))
    for info in game_info.values():
        assert {"role", "invalid_move", "turn_count", "reason"} <= set(info) and info["reason"]
        assert info["invalid_move"] is False        # every move was legal
    assert sum(info["turn_count"] for info in game_info.values()) == len(seen)


@pytest.mark.parametrize("game", socialgym_env.game_ids())
def test_the_train_variant_shows_prompt_board_lines_and_the_latest_board(game):
    seen, (rewards, _) = play(sg_ta.textarena_id(game) + "-train", seed=3)
    assert rewards and all(isinstance(observation, str) for _, observation in seen)
    late = seen[-1][1]
    assert late.count("--- Now ---") == 1           # only the latest board, history not repeated
    assert "=== " in late


def test_same_seed_same_transcript_and_another_seed_another():
    first = play("SocialGym-Werewolves-v0", seed=11)
    again = play("SocialGym-Werewolves-v0", seed=11)
    other = play("SocialGym-Werewolves-v0", seed=12)
    assert first == again
    assert first[0] != other[0]


def test_observations_are_typed_as_textarena_types_them():
    env = ta.make("SocialGym-Werewolves-v0-raw")
    env.reset(num_players=6, seed=5)
    roles = {pid: info["role"] for pid, info in env.state.game_info.items()}
    player, messages = env.get_observation()
    kinds = [kind for _, _, kind in messages]
    assert kinds[0] == Type.PROMPT and kinds[-1] == Type.GAME_BOARD and Type.GAME_MESSAGE in kinds
    assert all(sender == ta.GAME_ID for sender, _, _ in messages)
    assert roles[player] == "Werewolf"              # the night talk opens with a Werewolf
    env.step("[say we take the quiet one]")
    talk = [(pid, text) for pid in range(6) for _, text, kind in env.state.observations[pid]
            if kind == Type.GAME_ACTION_DESCRIPTION]
    # team-only talk reaches the other Werewolf (and the speaker), nobody else
    assert {pid for pid, _ in talk} == {pid for pid, role in roles.items() if role == "Werewolf"}
    assert all("we take the quiet one" in text for _, text in talk)


def test_rewards_and_roles_in_close_are_the_engines():
    env = ta.make("SocialGym-Werewolves-v0-raw")
    env.reset(num_players=6, seed=2)
    game_env = env.game_env
    engine_roles = {pid: game_env.state.role(agent) for pid, agent in enumerate(game_env.possible_agents)}
    rng, done = random.Random(2), False
    while not done:
        env.get_observation()
        done, _ = env.step(random_move(env, rng))
    rewards, game_info = env.close()
    assert rewards == {pid: game_env.state.result.rewards[agent] for pid, agent in enumerate(game_env.possible_agents)}
    assert {pid: info["role"] for pid, info in game_info.items()} == engine_roles
    assert {info["reason"] for info in game_info.values()} == {game_env.state.result.reason}


def test_an_invalid_move_uses_the_error_allowance_then_the_engines_fallback():
    env = ta.make("SocialGym-KuhnPoker-v0-raw")
    env.reset(num_players=2, seed=0)
    player, _ = env.get_observation()
    done, _ = env.step("[fold the table]")          # 1st: within the allowance (1)
    again, messages = env.get_observation()
    assert not done and again == player and messages[-1][2] == Type.GAME_ADMIN
    assert "invalid move" in messages[-1][1] and env.game_env.turns == []     # nothing played
    env.step("[fold the table]")                    # 2nd: the allowance is spent: the fallback
    turn = env.game_env.turns[-1]
    assert turn["valid"] is False and turn["fallback"] is True and turn["raw"] == "[fold the table]"
    assert env.state.current_player_id != player or env.state.done
    assert env.state.game_info[player]["invalid_move"] is True and env.state.error_count == 0


def test_with_no_error_allowance_the_first_invalid_move_is_the_fallback():
    env = ta.make("SocialGym-LiarsDice-v0")
    env.reset(num_players=3, seed=4)
    env.state.error_allowance = 0                   # what UnstableBaselines and SPIRAL set
    player, _ = env.get_observation()
    env.step("nonsense")
    assert core(env).game_env.turns[-1]["fallback"] is True
    assert env.state.game_info[player]["invalid_move"] is True


def test_bracketed_unbracketed_and_embedded_actions_are_one_move():
    assert sg_ta.action_candidates("[vote Ines]") == ["vote Ines", "[vote Ines]"]
    assert sg_ta.action_candidates("I vote [vote Ines] now")[-1] == "vote Ines"
    for action in ("bet", "[bet]", "I will [bet]"):
        env = ta.make("SocialGym-KuhnPoker-v0-raw")
        env.reset(num_players=2, seed=0)
        env.step(action)
        assert env.game_env.turns[-1]["action"] == "bet" and env.game_env.turns[-1]["valid"]


def test_bad_player_counts_are_one_clear_error():
    env = ta.make("SocialGym-KuhnPoker-v0")
    with pytest.raises(ValueError, match="kuhn_poker is played by 2 players, got 3"):
        env.reset(num_players=3, seed=0)
    env = ta.make("SocialGym-LiarsDice-v0")
    env.reset(num_players=4, seed=0)                # a game with several seat counts takes them
    assert env.state.num_players == 4 and isinstance(core(env).state, ta.FFAMultiPlayerState)


def test_state_classes_fit_the_game():
    assert sg_ta.state_class("kuhn_poker", 2) is ta.TwoPlayerState
    assert sg_ta.state_class("werewolves", 6) is ta.TeamMultiPlayerState
    assert sg_ta.state_class("coup", 4) is ta.FFAMultiPlayerState
    assert sg_ta.state_class("coup", 2) is ta.TwoPlayerState


def test_game_options_pass_through_ta_make():
    env = ta.make("SocialGym-PrisonersDilemma-v0-raw", rounds=2)
    env.reset(num_players=2, seed=0)
    assert env.game_env.config["rounds"] == 2


def test_a_step_before_reset_or_after_the_end_is_one_clear_error():
    env = ta.make("SocialGym-KuhnPoker-v0-raw")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("[bet]")
    env.reset(num_players=2, seed=0)
    env.step("[bet]")
    done, _ = env.step("[fold]")
    assert done
    with pytest.raises(RuntimeError, match="the game is over"):
        env.step("[bet]")
