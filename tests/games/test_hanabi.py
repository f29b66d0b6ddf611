"""Rule tests for Hanabi: the deal, hints, plays, discards, tokens, fuses, the last round and the
score; a seat never sees its own cards; and seeded games replayed move for move in OpenSpiel's
``hanabi`` (the Hanabi Learning Environment) with the same deck."""
import random
import re

import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError
from socialgym_env.games.hanabi import COLOURS, LETTERS, full_deck, hand_size, hint_matches
from socialgym_env.testing import check_game

from helpers import play

P0, P1, P2 = "player_0", "player_1", "player_2"


def deck_text(cards) -> str:
    return " ".join(f"{LETTERS[c]}{r}" for c, r in cards)


def arranged(*first) -> str:
    """A full deck whose draw order starts with ``first`` (e.g. "R1", "Y5"), the rest after."""
    rest = full_deck()
    wanted = []
    for token in first:
        card = (next(c for c in COLOURS if LETTERS[c] == token[0]), int(token[1]))
        rest.remove(card)
        wanted.append(card)
    return deck_text(wanted + rest)


def hand(env, agent):
    return [(card["colour"], card["rank"]) for card in env.state.g.hands[agent]]


# player_0: R1 R2 Y1 Y5 B1, player_1: G1 G2 W1 W3 R1; then the deck starts R3 B2
DECK = arranged("R1", "R2", "Y1", "Y5", "B1", "G1", "G2", "W1", "W3", "R1", "R3", "B2")


def test_the_deal_and_hand_sizes():
    env = play("hanabi", [], deck=DECK)
    assert hand(env, P0) == [("red", 1), ("red", 2), ("yellow", 1), ("yellow", 5), ("blue", 1)]
    assert hand(env, P1)[0] == ("green", 1) and len(env.state.g.deck) == 40
    assert [hand_size(n) for n in (2, 3, 4, 5)] == [5, 5, 4, 4]
    for n in (2, 3, 4, 5):
        env = play("hanabi", [], num_players=n)
        assert all(len(env.state.g.hands[a]) == hand_size(n) for a in env.agents)
        assert len(env.state.g.deck) == 50 - n * hand_size(n)


def test_a_hint_points_at_every_matching_card_and_costs_a_token():
    env = play("hanabi", ["hint player_1 green"], deck=DECK)
    g = env.state.g
    assert g.tokens == 7
    told = [(c["known_colour"], c["not_colours"]) for c in g.hands[P1]]
    assert told == [("green", []), ("green", []), (None, ["green"]), (None, ["green"]), (None, ["green"])]
    assert "colour green is in slot(s) 1, 2" in env.observe(P1)["text"]
    env.step("hint player_0 1")
    assert [c["known_rank"] for c in env.state.g.hands[P0]] == [1, None, 1, None, 1]


def test_a_hint_must_match_a_card_and_needs_a_token():
    env = play("hanabi", [], deck=DECK)
    legal = env.infos[P0]["legal_action_list"]
    name = env.state.name(P1)
    assert f"hint {name} blue" not in legal and f"hint {name} yellow" not in legal and f"hint {name} 5" not in legal
    assert f"hint {name} white" in legal and f"hint {name} 3" in legal
    with pytest.raises(InvalidActionError):
        env.step("hint player_1 blue")
    with pytest.raises(InvalidActionError):
        env.step("hint player_0 red")                          # never yourself
    env = play("hanabi", ["hint player_1 green", "hint player_0 red"], deck=DECK, information_tokens=2)
    assert env.state.g.tokens == 0
    assert not any(a.startswith("hint") for a in env.infos[P0]["legal_action_list"])


def test_discard_regains_a_token_and_is_illegal_with_every_token():
    env = play("hanabi", [], deck=DECK)
    assert not any(a.startswith("discard") for a in env.infos[P0]["legal_action_list"])
    with pytest.raises(InvalidActionError):
        env.step("discard 1")
    env.step("hint player_1 green")
    env.step("discard 2")                                       # player_1 discards G2 and draws R3
    g = env.state.g
    assert g.tokens == 8 and g.discards == [("green", 2)]
    assert hand(env, P1) == [("green", 1), ("white", 1), ("white", 3), ("red", 1), ("red", 3)]


def test_play_places_the_next_rank_and_a_misplay_burns_a_fuse():
    env = play("hanabi", ["play 1", "play 1", "play 1"], deck=DECK)
    g = env.state.g                                              # R1, G1 placed; then R2 placed
    assert g.fireworks == {"red": 2, "yellow": 0, "green": 1, "white": 0, "blue": 0} and g.fuses == 3
    env.step("play 4")                                           # player_1's R1 on red 2: misplay
    assert g.fuses == 2 and g.discards == [("red", 1)] and env.state.g.fireworks["red"] == 2


def test_completing_a_firework_returns_a_token():
    deck = arranged("R1", "R2", "R3", "R4", "R5", "G1", "G2", "G3", "G4", "W1")
    env = play("hanabi", ["play 1", "hint player_0 red"] + ["play 1"] * 7, deck=deck)
    assert env.state.g.fireworks["red"] == 5 and env.state.g.fireworks["green"] == 3
    assert env.state.g.tokens == 8                               # the hint's token came back with the 5
    assert "one information token comes back" in env.episode_record()["transcript"][-1]


def test_the_last_fuse_ends_the_game_with_score_zero():
    # R1, G1 placed; then Y5, W3 and R3 misplayed: the third fuse burns with 2 on the fireworks
    env = play("hanabi", ["play 1", "play 1", "play 3", "play 3", "play 4"], deck=DECK)
    g, result = env.state.g, env.state.result
    assert g.fuses == 0 and g.fireworks["red"] == 1 and g.fireworks["green"] == 1
    assert result.scores == {P0: 0, P1: 0} and result.rewards == {P0: -1.0, P1: -1.0}
    assert "explode" in result.reason and result.reason.endswith("the score is 0 of 25")


def _harmless(env, agent):
    """A move that neither plays nor needs the deck: a hint when a token is left, else a discard."""
    g = env.state.g
    if g.tokens:
        other = env.state.others(agent)[0]
        return f"hint {other} {g.hands[other][0]['colour']}"
    return "discard 1"


def test_the_last_round_gives_everyone_one_more_turn():
    env = play("hanabi", ["hint player_1 green"], deck=DECK, num_players=3)
    g = env.state.g
    while g.deck:
        drawer = env.agent_selection
        env.step("discard 1" if g.tokens < 8 else _harmless(env, drawer))
    assert g.final_turns == 3 and "one more turn" in env.episode_record()["transcript"][-1]
    order = []
    while not env.state.finished:
        order.append(env.agent_selection)
        env.step(_harmless(env, env.agent_selection))
    assert len(order) == 3 and order[-1] == drawer and len(set(order)) == 3
    assert "last turn" in env.state.result.reason and env.state.result.rewards == {P0: 0.0, P1: 0.0, P2: 0.0}


def test_a_perfect_game_scores_25_and_wins():
    deck = arranged(*[f"{LETTERS[c]}{r}" for r in range(1, 6) for c in COLOURS])
    moves = []
    env = play("hanabi", [], deck=deck)
    while not env.state.finished:
        agent = env.agent_selection
        g = env.state.g
        slot = next(i for i, c in enumerate(g.hands[agent], 1) if g.fireworks[c["colour"]] == c["rank"] - 1)
        env.step(f"play {slot}")
        moves.append(slot)
    result = env.state.result
    assert result.scores == {P0: 25, P1: 25} and result.rewards == {P0: 1.0, P1: 1.0} and len(moves) == 25
    assert env.episode_record()["metrics"]["coordination"] == 1.0


def test_a_seat_never_sees_its_own_cards():
    """Replacing every card of a seat's hand by other cards changes nothing that seat is shown
    (observation text and structured view) at any decision of seeded games, while another
    seat's view does change."""
    for seed in range(4):
        env = socialgym_env.make("hanabi", num_players=3)
        env.reset(seed=seed)
        rng = random.Random(seed)
        for _ in range(30):
            if env.state.finished:
                break
            for agent in env.agents:
                twin = env.clone()
                for card in twin.state.g.hands[agent]:
                    card["colour"], card["rank"] = ("white", 5) if card["colour"] != "white" else ("red", 4)
                assert twin.observe(agent)["text"] == env.observe(agent)["text"], (seed, agent)
                assert twin.decision_view(agent)["game_state"] == env.decision_view(agent)["game_state"]
                other = env.state.others(agent)[0]
                assert twin.observe(other)["text"] != env.observe(other)["text"]
            env.step(env.grammar(env.agent_selection).sample(rng).text)


def test_the_rules_text_states_the_configured_numbers():
    env = play("hanabi", [], num_players=4, information_tokens=5, fuses=2)
    text = env.observe(P0)["text"]
    for phrase in ("4 players", "5 information tokens", "2 fuses", "holds 4 cards", "all 5 are available"):
        assert phrase in text


def test_fallback_hints_and_never_loses_a_card():
    env = socialgym_env.make("hanabi", deck=DECK)
    env.reset(seed=0)
    env.step("shout")
    assert env.turns[0]["fallback"] and env.state.g.tokens == 7 and len(env.state.g.deck) == 40


@pytest.mark.parametrize("config", [{"num_players": 6}, {"num_players": 1}, {"fuses": 0},
                                    {"information_tokens": 0}, {"deck": "R1 R1"}, {"deck": arranged()[:-3] + " R1"}])
def test_bad_configs_are_refused(config):
    with pytest.raises(ConfigError):
        socialgym_env.make("hanabi", **config)


def test_conformance_with_four_players():
    check_game("hanabi", num_players=4, episodes=3)


def test_hint_matches_is_by_colour_or_rank():
    cards = [{"colour": "red", "rank": 1}, {"colour": "blue", "rank": 1}, {"colour": "red", "rank": 4}]
    assert hint_matches(cards, "red") == [1, 3] and hint_matches(cards, "1") == [1, 2] and hint_matches(cards, "5") == []


# ------------------------------------------------------------------ OpenSpiel's hanabi
def _to_ours(move: str, env, agent) -> str:
    kind, rest = move.strip("()").split(" ", 1)
    if kind in ("Play", "Discard"):
        return f"{kind.lower()} {int(rest) + 1}"
    offset, clue_kind, clue = re.match(r"player \+(\d+) (color|rank) (\w)", rest).groups()
    agents = env.state.agents
    target = agents[(agents.index(agent) + int(offset)) % len(agents)]
    value = next(c for c in COLOURS if LETTERS[c] == clue) if clue_kind == "color" else clue
    return f"hint {env.state.name(target)} {value}"


def _their_view(state) -> dict:
    text = str(state)
    hands_text = text.split("Hands:")[1].split("Deck size:")[0]
    hands = []
    for block in hands_text.split("-----"):
        cards = []
        for line in block.strip().splitlines():
            line = line.strip()
            if not line or line == "Cur player":
                continue
            card, knowledge = line.split(" || ")
            plausible = knowledge.split("|")[1]
            cards.append((card, "".join(ch for ch in plausible if ch.isalpha()), "".join(ch for ch in plausible if ch.isdigit())))
        hands.append(cards)
    return {"lives": int(re.search(r"Life tokens: (\d+)", text).group(1)),
            "info": int(re.search(r"Info tokens: (\d+)", text).group(1)),
            "fireworks": re.search(r"Fireworks: (.*)", text).group(1).split(),
            "deck": int(re.search(r"Deck size: (\d+)", text).group(1)),
            "discards": re.search(r"Discards:(.*)", text).group(1).split(), "hands": hands}


def _our_view(env) -> dict:
    g = env.state.g

    def plausible(card):
        colours = [card["known_colour"]] if card["known_colour"] else [c for c in COLOURS if c not in card["not_colours"]]
        ranks = [card["known_rank"]] if card["known_rank"] else [r for r in range(1, 6) if r not in card["not_ranks"]]
        return ("".join(LETTERS[c] for c in COLOURS if c in colours), "".join(str(r) for r in sorted(ranks)))
    return {"lives": g.fuses, "info": g.tokens, "fireworks": [f"{LETTERS[c]}{g.fireworks[c]}" for c in COLOURS],
            "deck": len(g.deck), "discards": [f"{LETTERS[c]}{r}" for c, r in g.discards],
            "hands": [[(f"{LETTERS[c['colour']]}{c['rank']}", *plausible(c)) for c in g.hands[a]] for a in env.state.agents]}


def _chooser(rng, env, agent, legal, blind):
    """Random legal moves that mostly avoid misplays (the test may peek at the hand), so that
    games also run until the deck is empty, and with probability ``blind`` any legal move, so
    that fuses burn."""
    g = env.state.g
    plays = [m for m in legal if m.startswith("play")]
    good = [m for m in plays if g.fireworks[g.hands[agent][int(m.split()[1]) - 1]["colour"]]
            == g.hands[agent][int(m.split()[1]) - 1]["rank"] - 1]
    if good and rng.random() < 0.8:
        return rng.choice(good)
    safer = [m for m in legal if not m.startswith("play")] or legal
    return rng.choice(legal if rng.random() < blind else safer)


def _replay_in_openspiel(pyspiel, seed, players, tokens, fuses):
    rng = random.Random(seed)
    cards = rng.sample(full_deck(), 50)
    env = socialgym_env.make("hanabi", invalid_action="raise", num_players=players, information_tokens=tokens,
                             fuses=fuses, deck=deck_text(cards), log_observations=False)
    env.reset(seed=seed)
    game = pyspiel.load_game("hanabi", {"players": players, "max_information_tokens": tokens,
                                        "max_life_tokens": fuses})
    state = game.new_initial_state()
    draws = iter(COLOURS.index(c) * 5 + r - 1 for c, r in cards)
    turns = 0
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(next(draws))
            continue
        agent = env.agent_selection
        assert state.current_player() == env.state.agents.index(agent)
        assert _their_view(state) == _our_view(env), (seed, turns)
        theirs = {_to_ours(state.action_to_string(a), env, agent): a for a in state.legal_actions()}
        legal = env.infos[agent]["legal_action_list"]
        assert sorted(theirs) == sorted(legal), (seed, turns)
        move = _chooser(rng, env, agent, legal, blind=0.4 if seed % 3 == 0 else 0.02)
        state.apply_action(theirs[move])
        env.step(move)
        turns += 1
    assert env.state.finished and all(env.terminations.values())
    assert _their_view(state) == _our_view(env)
    assert [env.state.result.scores[a] for a in env.state.agents] == state.returns()
    return env.state.result


@pytest.mark.parametrize("players, tokens, fuses", [(2, 8, 3), (3, 8, 3), (4, 8, 3), (5, 8, 3), (2, 3, 1), (3, 5, 2)])
def test_seeded_games_match_openspiel(players, tokens, fuses):
    pyspiel = pytest.importorskip("pyspiel")
    reasons = set()
    for seed in range(12):
        result = _replay_in_openspiel(pyspiel, seed, players, tokens, fuses)
        reasons.add(result.reason.split(";")[0])
    if (tokens, fuses) == (8, 3):
        # the seeds reach both ends: the deck running out and the fuses burning
        assert any("deck ran out" in r for r in reasons) and any("explode" in r for r in reasons), reasons


def test_the_turn_cap_is_a_draw_that_keeps_the_score():
    env = play("hanabi", ["play 1", "play 1", "hint player_1 green"], deck=DECK, max_steps=3)
    result = env.state.result
    assert result.truncated and result.rewards == {P0: 0.0, P1: 0.0} and result.scores == {P0: 2, P1: 2}
    assert result.reason.startswith("turn cap reached: a draw")


def test_the_quick_tournament_preset_plays_it():
    from socialgym_agents.runner import PolicyPool, run_jobs
    from socialgym_benchmarks.tournament.plan import QUICK_MAX_STEPS, game_configs, plan_tournament
    configs = game_configs(["hanabi", "colonel_blotto"], quick=True)
    assert configs["hanabi"] == {"max_steps": QUICK_MAX_STEPS}
    jobs = plan_tournament(["hanabi", "colonel_blotto"], ["scripted:heuristic", "scripted:random"], 2, seed=0,
                           configs=configs)
    records = run_jobs(jobs, PolicyPool())
    assert {r["game"] for r in records} == {"hanabi", "colonel_blotto"}
    assert all(r["finished"] and not r.get("failed") for r in records)
