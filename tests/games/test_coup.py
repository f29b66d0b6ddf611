"""Rule tests for Coup, played through the env.

Hidden cards are set right after reset (``deal``) so each rule is played out exactly; the
deck stays a valid 15-card court deck."""
import json
from collections import Counter

import pytest

import socialgym_env
from socialgym_env.errors import InvalidActionError
from socialgym_env.game import WINNER_TAKE_ALL
from socialgym_env.games.coup import CARDS, can_challenge, first_after, fits, may_block

from helpers import assert_random_play_pays_winner_take_all

P0, P1, P2, P3 = "player_0", "player_1", "player_2", "player_3"


def new_env(seed=1, **config):
    config.setdefault("invalid_action", "raise")
    env = socialgym_env.make("coup", **config)
    env.reset(seed=seed)
    return env


def deal(env, hands, deck_top=(), coins=None):
    """Give each seat its cards; ``deck_top`` are the next cards drawn (the end of the list)."""
    g = env.state.g
    rest = Counter({c: 3 for c in CARDS})
    for cards in hands.values():
        rest.subtract(cards)
    rest.subtract(deck_top)
    assert min(rest.values()) >= 0
    g.hands = {a: list(cards) for a, cards in hands.items()}
    g.deck = sorted(rest.elements()) + list(reversed(deck_top))
    if coins:
        g.coins.update(coins)


STANDARD = {P0: ["Duke", "Captain"], P1: ["Assassin", "Contessa"], P2: ["Ambassador", "Captain"],
            P3: ["Duke", "Contessa"]}


def act(env, agent, action):
    assert env.agent_selection == agent, f"expected {agent} to act, not {env.agent_selection}"
    env.step(action)


def respond(env, **answers):
    """Answer a response window; unnamed responders pass (players given as p0=..., p1=...)."""
    assert env.state.phase == "respond"
    while env.state.phase == "respond" and env.state.result is None:
        agent = env.agent_selection
        env.step(answers.get("p" + agent[-1], "pass"))


def lines(env):
    return env.episode_record()["transcript"]


def N(env, agent):
    return env.state.name(agent)


def test_metadata():
    info = socialgym_env.game_class("coup").info
    assert (info.category, info.information, info.communication) == ("bluffing", "hidden_state", "structured")
    assert info.skills == ("deception", "tom") and info.outcome == WINNER_TAKE_ALL
    assert info.horizon == "open_ended" and info.num_players == 4 and info.max_steps == 300


def test_setup_deck_cards_and_coins():
    env = new_env()
    g = env.state.g
    assert all(len(h) == 2 for h in g.hands.values()) and len(g.deck) == 7
    assert Counter(g.deck + sum(g.hands.values(), [])) == Counter({c: 3 for c in CARDS})
    assert g.coins == {a: 2 for a in env.agents}
    for a in env.agents:
        mine = [m for m in env.state.messages if m.visibility == "private" and a in m.receivers]
        assert [m.text for m in mine] == [f"Your cards: {', '.join(g.hands[a])}."] and mine[0].receivers == (a,)


def test_pure_rules():
    assert [can_challenge(a) for a in ("tax", "steal", "assassinate", "exchange")] == [True] * 4
    assert not any(can_challenge(a) for a in ("income", "foreign_aid", "coup"))
    assert may_block("foreign_aid", P0, None, P2) and not may_block("foreign_aid", P0, None, P0)
    assert may_block("steal", P0, P2, P2) and not may_block("steal", P0, P2, P1)
    assert may_block("assassinate", P0, P3, P3) and not may_block("assassinate", P0, P3, P1)
    assert not may_block("tax", P0, None, P1) and not may_block("exchange", P0, None, P1)
    assert first_after([P2, P3, P0], [P0, P3]) == P3
    assert fits(["Duke", "Duke"], ["Duke", "Captain", "Duke"]) and not fits(["Duke", "Duke"], ["Duke", "Captain"])


def test_income_plus_one_no_response_window():
    env = new_env()
    deal(env, STANDARD)
    act(env, P0, "income")
    assert env.state.g.coins[P0] == 3 and env.state.phase == "turn" and env.agent_selection == P1
    assert lines(env)[-1] == f"[R1 turn] Moderator: {N(env, P0)} takes income (+1, now 3 coins)."


def test_foreign_aid_plus_two_cannot_be_challenged_anyone_may_block():
    env = new_env()
    deal(env, STANDARD)
    act(env, P0, "foreign_aid")
    for a in (P1, P2, P3):
        assert env.agent_selection == a and env.infos[a]["action_types"] == ["block", "pass"]
        env.step("pass")
    assert env.state.g.coins[P0] == 4
    act(env, P1, "foreign_aid")
    with pytest.raises(InvalidActionError):
        env.step("challenge")
    respond(env, p3="block")                  # P3 claims Duke (blocks are not challengeable)
    assert env.state.g.coins[P1] == 2
    assert lines(env)[-2:] == [f"[R2 respond] Moderator: Responses: {N(env, P2)} passes, {N(env, P3)} blocks, "
                               f"{N(env, P0)} passes.",
                               f"[R2 respond] Moderator: {N(env, P3)} blocks claiming Duke: the foreign aid fails."]
    assert env.agent_selection == P2


def test_tax_plus_three_and_only_claims_are_challengeable():
    env = new_env()
    deal(env, STANDARD)
    act(env, P0, "tax")
    assert env.infos[P1]["action_types"] == ["challenge", "pass"]
    respond(env)
    assert env.state.g.coins[P0] == 5
    act(env, P1, "steal " + N(env, P0))
    assert env.infos[P2]["action_types"] == ["challenge", "pass"]       # not the target: no block
    env.step("pass")
    assert env.infos[P3]["action_types"] == ["challenge", "pass"]
    env.step("pass")
    assert env.infos[P0]["action_types"] == ["challenge", "block", "pass"]
    env.step("pass")
    assert env.state.g.coins == {P0: 3, P1: 4, P2: 2, P3: 2}
    assert lines(env)[-1] == f"[R2 respond] Moderator: {N(env, P1)} steals 2 coins from {N(env, P0)}."


def test_steal_takes_up_to_two_and_target_blocks_with_captain_or_ambassador():
    env = new_env()
    deal(env, STANDARD, coins={P1: 1})
    act(env, P0, "steal " + N(env, P1))
    respond(env)
    assert env.state.g.coins[P0] == 3 and env.state.g.coins[P1] == 0
    act(env, P1, "steal " + N(env, P2))
    respond(env, p2="block Ambassador")
    assert env.state.g.coins[P1] == 0 and env.state.g.coins[P2] == 2
    assert lines(env)[-1] == f"[R2 respond] Moderator: {N(env, P2)} blocks claiming Ambassador: the steal fails."
    act(env, P2, "steal " + N(env, P3))
    with pytest.raises(InvalidActionError):
        respond(env, p3="block Duke")


def test_assassinate_pays_three_target_loses_influence_or_blocks_with_contessa():
    env = new_env()
    deal(env, STANDARD, coins={P0: 3, P1: 3})
    assert "assassinate" in env.decision_view(P0)["action_types"]
    act(env, P0, "assassinate " + N(env, P1))
    assert env.state.g.coins[P0] == 0
    assert env.decision_view(P2)["action_types"] == ["challenge", "pass"]
    respond(env, p1="block")                     # P1 claims Contessa: coins stay spent
    assert env.state.g.coins[P0] == 0 and len(env.state.g.hands[P1]) == 2
    assert lines(env)[-1] == f"[R1 respond] Moderator: {N(env, P1)} blocks claiming Contessa: the assassinate fails."
    act(env, P1, "assassinate " + N(env, P2))
    respond(env)
    assert env.state.g.coins[P1] == 0 and env.state.phase == "lose" and env.agent_selection == P2
    assert env.infos[P2]["action_types"] == ["reveal"]
    with pytest.raises(InvalidActionError):
        env.step("reveal Duke")                  # not one of its cards
    env.step("reveal Captain")
    assert env.state.g.hands[P2] == ["Ambassador"] and env.state.g.revealed[P2] == ["Captain"]
    assert lines(env)[-1] == f"[R2 lose] Moderator: {N(env, P2)} loses an influence (assassinated) and reveals Captain."
    assert env.agent_selection == P2 and env.state.phase == "turn"


def test_assassinate_needs_three_coins():
    env = new_env()
    deal(env, STANDARD)
    assert "assassinate" not in env.infos[P0]["action_types"]
    with pytest.raises(InvalidActionError):
        env.step("assassinate " + N(env, P1))


def test_exchange_draws_two_and_keeps_as_many_as_influence():
    env = new_env()
    deal(env, STANDARD, deck_top=["Duke", "Assassin"])
    act(env, P0, "income")
    act(env, P1, "income")
    act(env, P2, "exchange")
    respond(env)
    assert env.state.phase == "exchange" and env.agent_selection == P2
    assert env.state.g.options == ["Ambassador", "Captain", "Duke", "Assassin"]
    drawn = [m for m in env.state.messages if m.visibility == "private" and "You drew" in m.text]
    assert drawn[-1].receivers == (P2,)
    assert drawn[-1].text == "You drew Duke and Assassin. Keep 2 of: Ambassador, Captain, Duke, Assassin."
    for bad in ("keep Duke", "keep Duke Duke", "keep Contessa Duke", "keep Duke Assassin Captain"):
        with pytest.raises(InvalidActionError):
            env.step(bad)
    deck_before = len(env.state.g.deck)
    env.step("keep Assassin Duke")
    assert env.state.g.hands[P2] == ["Assassin", "Duke"]
    assert len(env.state.g.deck) == deck_before + 2 == 7
    assert Counter(env.state.g.deck + sum(env.state.g.hands.values(), [])) == Counter({c: 3 for c in CARDS})
    assert lines(env)[-1] == f"[R3 exchange] Moderator: {N(env, P2)} returns 2 cards to the deck."


def test_exchange_with_one_influence_keeps_one():
    env = new_env()
    deal(env, {P0: ["Ambassador"], P1: ["Assassin", "Contessa"], P2: ["Ambassador", "Captain"],
               P3: ["Duke", "Contessa"]}, deck_top=["Duke", "Captain"])
    act(env, P0, "exchange")
    respond(env)
    with pytest.raises(InvalidActionError):
        env.step("keep Duke Captain")
    env.step("keep Duke")
    assert env.state.g.hands[P0] == ["Duke"]


def test_coup_pays_seven_unblockable_and_forced_at_ten():
    env = new_env()
    deal(env, STANDARD, coins={P0: 7, P1: 10})
    act(env, P0, "coup " + N(env, P3))
    assert env.state.g.coins[P0] == 0 and env.state.phase == "lose" and env.agent_selection == P3
    env.step("reveal Duke")
    assert lines(env)[-1] == f"[R1 lose] Moderator: {N(env, P3)} loses an influence (couped) and reveals Duke."
    assert env.agent_selection == P1 and env.infos[P1]["action_types"] == ["coup"]
    with pytest.raises(InvalidActionError):
        env.step("income")
    env.step("coup " + N(env, P3))             # one card left: revealed automatically
    assert env.state.g.coins[P1] == 3 and not env.state.seat[P3].alive
    assert lines(env)[-3:] == [f"[R2 turn] Moderator: {N(env, P1)} pays 7 coins to coup {N(env, P3)}.",
                               f"[R2 turn] Moderator: {N(env, P3)} loses an influence (couped) and reveals Contessa.",
                               f"[R2 turn] Moderator: {N(env, P3)} has no influence left and is out."]


def test_challenge_against_an_honest_claim_reveal_shuffle_redraw():
    env = new_env()
    deal(env, STANDARD)
    act(env, P0, "tax")
    respond(env, p2="challenge")
    g = env.state.g
    assert len(g.hands[P0]) == 2 and "Captain" in g.hands[P0] and len(g.deck) == 7
    assert Counter(g.deck + sum(g.hands.values(), [])) == Counter({c: 3 for c in CARDS})
    redraw = [m for m in env.state.messages if "shuffled your Duke" in m.text]
    assert len(redraw) == 1 and redraw[0].receivers == (P0,)
    assert redraw[0].text == f"You shuffled your Duke into the deck and drew a {g.hands[P0][1]}."
    assert lines(env)[-1] == (f"[R1 respond] Moderator: {N(env, P2)} challenges {N(env, P0)}'s claim of Duke. "
                              f"{N(env, P0)} reveals a Duke, shuffles it into the deck and draws a replacement; "
                              f"{N(env, P2)} loses an influence.")
    assert env.state.phase == "lose" and env.agent_selection == P2
    env.step("reveal Ambassador")
    assert g.coins[P0] == 5                    # the action goes ahead after the challenger's loss
    assert env.agent_selection == P1


def test_challenge_against_a_bluff_claimant_loses_and_action_fails():
    env = new_env()
    deal(env, STANDARD, coins={P1: 3})
    act(env, P0, "income")
    act(env, P1, "assassinate " + N(env, P0))    # P1 does hold an Assassin...
    respond(env)
    env.step("reveal Captain")
    act(env, P2, "tax")                           # ...P2 holds no Duke
    respond(env, p3="challenge")
    assert lines(env)[-1] == (f"[R3 respond] Moderator: {N(env, P3)} challenges {N(env, P2)}'s claim of Duke. "
                              f"{N(env, P2)} does not have a Duke: {N(env, P2)} loses an influence and the tax fails.")
    assert env.agent_selection == P2 and env.state.phase == "lose"
    env.step("reveal Captain")
    assert env.state.g.coins[P2] == 2 and env.agent_selection == P3


def test_assassination_caught_by_a_challenge_refunds_the_three_coins():
    env = new_env()
    deal(env, STANDARD, coins={P0: 3})
    act(env, P0, "assassinate " + N(env, P1))   # P0 has no Assassin
    assert env.state.g.coins[P0] == 0
    respond(env, p1="challenge")
    assert f"[R1 respond] Moderator: {N(env, P0)} gets the 3 coins back." in lines(env)
    env.step("reveal Captain")
    assert env.state.g.coins[P0] == 3 and len(env.state.g.hands[P1]) == 2


def test_challenge_beats_block_and_first_in_turn_order_after_actor_counts():
    env = new_env()
    deal(env, STANDARD)
    act(env, P0, "income")
    act(env, P1, "income")
    # actor P2 steals from P1; responders in turn order: P3, P0, P1
    act(env, P2, "steal " + N(env, P1))
    respond(env, p0="challenge", p1="block Captain", p3="challenge")
    assert lines(env)[-2] == (f"[R3 respond] Moderator: Responses: {N(env, P3)} challenges, {N(env, P0)} challenges, "
                              f"{N(env, P1)} blocks.")
    assert f"{N(env, P3)} challenges {N(env, P2)}'s claim of Captain." in lines(env)[-1]
    assert env.agent_selection == P3 and env.state.phase == "lose"   # P2 holds a Captain: P3 pays
    env.step("reveal Duke")
    assert env.state.g.coins[P2] == 4 and env.state.g.coins[P1] == 1   # the block was ignored
    # among blockers the first after the actor counts (foreign aid: P0 acts, P1 and P3 block)
    env2 = new_env()
    deal(env2, STANDARD)
    act(env2, P0, "foreign_aid")
    respond(env2, p1="pass", p2="block", p3="block")
    assert lines(env2)[-1] == f"[R1 respond] Moderator: {N(env2, P2)} blocks claiming Duke: the foreign aid fails."


def test_assassination_target_out_after_failed_challenge_and_double_loss():
    env = new_env()
    deal(env, {P0: ["Assassin", "Duke"], P1: ["Contessa"], P2: ["Ambassador", "Captain"],
               P3: ["Duke", "Captain"]}, coins={P0: 6})
    act(env, P0, "assassinate " + N(env, P1))
    respond(env, p1="challenge")               # P1 loses its only card to the challenge
    assert not env.state.seat[P1].alive
    assert lines(env)[-1] == f"[R1 respond] Moderator: {N(env, P1)} is already out: the assassinate has no further effect."
    assert env.state.g.coins[P0] == 3 and env.agent_selection == P2
    # a two-card target that challenges wrongly loses both: one to the challenge, one to the assassination
    env = new_env()
    deal(env, STANDARD, coins={P1: 3})
    act(env, P0, "income")
    act(env, P1, "assassinate " + N(env, P3))
    respond(env, p3="challenge")
    assert env.agent_selection == P3 and env.state.phase == "lose"
    env.step("reveal Duke")                    # the challenge loss (P3's choice); the last card goes automatically
    assert not env.state.seat[P3].alive and env.state.g.revealed[P3] == ["Duke", "Contessa"]
    assert lines(env)[-3:] == [f"[R2 lose] Moderator: {N(env, P3)} loses an influence (lost a challenge) and reveals Duke.",
                               f"[R2 lose] Moderator: {N(env, P3)} loses an influence (assassinated) and reveals Contessa.",
                               f"[R2 lose] Moderator: {N(env, P3)} has no influence left and is out."]


def test_reveal_choice_fallback_is_one_of_own_cards():
    env = new_env(invalid_action="fallback")
    deal(env, STANDARD, coins={P0: 7})
    env.step("coup " + N(env, P1))
    env.step("reveal Banana")
    assert env.infos[P1]["invalid_action"]["raw"] == "reveal Banana"
    assert len(env.state.g.hands[P1]) == 1 and env.state.g.revealed[P1][0] in ("Assassin", "Contessa")


def test_last_player_with_influence_wins():
    env = new_env()
    deal(env, {P0: ["Duke", "Captain"], P1: ["Assassin"], P2: ["Ambassador"], P3: ["Contessa"]},
         coins={P0: 9, P1: 0, P2: 0, P3: 0})
    g = env.state.g
    for victim in (P1, P2, P3):
        g.coins[P0] = 9
        act(env, P0, "coup " + N(env, victim))
        while env.state.result is None and env.agent_selection != P0:
            env.step("income")
    assert env.state.result.reason == f"{N(env, P0)} is the last player with influence"
    assert env.rewards == {P0: 1.0, P1: -1.0, P2: -1.0, P3: -1.0}
    assert all(env.terminations.values())


def test_cap_most_influence_then_most_coins():
    env = new_env(max_steps=2)
    deal(env, {P0: ["Duke", "Captain"], P1: ["Assassin", "Contessa"], P2: ["Ambassador"], P3: ["Duke", "Contessa"]})
    act(env, P0, "income")
    act(env, P1, "income")                     # P0 3 coins, P1 3 coins, P3 2 coins
    assert env.state.result.truncated
    assert env.rewards == {P0: 1.0, P1: 1.0, P2: -1.0, P3: -1.0}
    env = new_env(max_steps=1)
    deal(env, {P0: ["Duke", "Captain"], P1: ["Assassin", "Contessa"], P2: ["Ambassador", "Duke"],
               P3: ["Captain", "Contessa"]})
    act(env, P0, "income")
    assert env.rewards == {P0: 1.0, P1: -1.0, P2: -1.0, P3: -1.0}
    assert env.state.result.reason == f"turn cap reached: most influence, then most coins - {N(env, P0)}"


def test_no_other_players_cards_visible():
    env = new_env(seed=4)
    g = env.state.g
    act(env, P0, "tax")
    respond(env, p1="challenge")               # a reveal-and-redraw happens or P0 loses a card
    while env.state.phase == "lose":
        env.step("reveal " + env.infos[env.agent_selection]["legal_action_list"][0].split()[1])
    for agent in env.agents:
        view = env.decision_view(agent)
        text = env.observe(agent)["text"]
        assert view["game_state"]["my_cards"] == g.hands[agent]
        assert f"Your face-down cards: {', '.join(g.hands[agent]) or 'none'}." in text
        visible = env.state.visible_to(agent)
        assert all(m.receivers == (agent,) for m in visible if m.visibility == "private")
        for other in env.agents:
            if other == agent or sorted(g.hands[other]) == sorted(g.hands[agent]):
                continue
            assert f"Your face-down cards: {', '.join(g.hands[other])}." not in text
            assert f"Your cards: {', '.join(g.hands[other])}." not in text
        # the structured view holds no one else's face-down cards
        gs = view["game_state"]
        assert set(gs) == {"my_cards", "coins", "influence", "revealed", "deck_size", "pending", "claims",
                           "turn", "exchange_options", "copies"}
        assert all(isinstance(v, int) for v in gs["influence"].values())
        assert json.dumps(env.infos[agent]).count("my_cards") <= 1


# ------------------------------------------------------------------ random play
# PettingZoo's API and seed tests and the generic random-play checks run for every game in
# tests/test_conformance.py; this adds the winner-take-all payout over more seeds.
def test_random_and_junk_play_ends_within_the_cap_and_pays_winner_take_all():
    assert_random_play_pays_winner_take_all("coup", range(40))
