"""Chess: UCI/SAN moves, illegal moves, the library's end rules, the cap, PGN."""
import io

import chess
import chess.pgn
import pytest

import socialgym_env
from socialgym_env.errors import ConfigError, InvalidActionError

from helpers import finish_dead, play, public_lines, random_junk_episode

GAME = "chess"
# Seed 0: Yusuf (player_0) is Black, Björn (player_1) is White.
WHITE, BLACK = "player_1", "player_0"
FOOLS_MATE = ["move f3", "move e7e5", "move g2g4", "move Qh4#"]


def replay_pgn(pgn_text):
    game = chess.pgn.read_game(io.StringIO(pgn_text))
    board = game.board()
    for move in game.mainline_moves():
        board.push(move)
    return game, board


def test_colours_are_roles_and_white_moves_first():
    env = play(GAME, [])
    assert env.state.role(WHITE) == "white" and env.state.role(BLACK) == "black"
    assert env.agent_selection == WHITE
    assert public_lines(env) == ["[R1] Moderator: The game starts: Björn plays White, Yusuf plays Black."]
    info = env.infos[WHITE]
    data = info["game_state"]
    assert data["fen"] == chess.STARTING_FEN and data["turn"] == "white" and data["my_color"] == "white"
    assert len(data["legal_moves_uci"]) == 20 and "g1f3" in data["legal_moves_uci"]
    assert data["legal_moves_san"][data["legal_moves_uci"].index("g1f3")] == "Nf3"
    assert "move e2e4" in info["legal_action_list"] and len(info["legal_action_list"]) == 20
    # one compact line in the legal-action text
    assert len(info["legal_actions"]) == 1
    assert info["legal_actions"][0].startswith("move MOVE — play a move; MOVE in UCI or SAN; legal now (SAN): ")
    assert " Nf3 " in info["legal_actions"][0]
    assert "Position (FEN): " + chess.STARTING_FEN in env.observe(WHITE)["text"]


def test_uci_and_san_both_accepted_and_logged_as_uci():
    env = play(GAME, ["move e2e4", "move e5", "move Nf3", "move b8c6", "move Bb5",
                      '{"action_type": "move", "argument": "a7a6"}'])
    assert env.state.g.san == ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"]
    assert [t["action"] for t in env.turns] == ["move e2e4", "move e7e5", "move g1f3", "move b8c6",
                                                "move f1b5", "move a7a6"]
    assert public_lines(env)[1:3] == ["[R1 move] Moderator: 1. Björn plays e4 (e2e4).",
                                      "[R1 move] Moderator: 1... Yusuf plays e5 (e7e5)."]


def test_illegal_and_unreadable_moves_are_invalid_with_reason():
    env = play(GAME, [])
    with pytest.raises(InvalidActionError, match="illegal move 'e2e5' in this position"):
        env.step("move e2e5")
    with pytest.raises(InvalidActionError, match="illegal move 'e5' in this position"):
        env.step("move e5")
    with pytest.raises(InvalidActionError, match="cannot read 'zz' as a UCI or SAN move"):
        env.step("move zz")
    with pytest.raises(InvalidActionError, match="unknown action type"):
        env.step("e4")                     # the bare move is not accepted: use `move e4`
    fallback = socialgym_env.make(GAME)
    fallback.reset(seed=0)
    fallback.step("move Ke2")
    assert fallback.infos[WHITE]["invalid_action"]["reason"] == "illegal move 'Ke2' in this position"
    assert len(fallback.state.g.san) == 1  # a random legal move was played instead
    assert fallback.agent_selection == BLACK


def test_fools_mate_black_wins_and_pgn_round_trips():
    env = play(GAME, FOOLS_MATE)
    s = env.state
    assert s.result.reason == "Yusuf wins by checkmate"
    assert s.result.rewards == {BLACK: 1.0, WHITE: -1.0}
    assert s.result.scores == {BLACK: 1.0, WHITE: 0.0}
    assert s.result.winners == (BLACK,) and not s.result.truncated
    assert env.terminations[WHITE] and env.infos[BLACK]["outcome"] == "win"
    metrics = env.episode_record()["metrics"]
    assert metrics["plies"] == 4 and metrics["termination"] == "checkmate"
    game, board = replay_pgn(metrics["pgn"])
    assert game.headers["White"] == "Björn" and game.headers["Black"] == "Yusuf"
    assert game.headers["Result"] == "0-1"
    assert board.fen() == s.g.board.fen() and board.is_checkmate()
    assert "1. f3 e5 2. g4 Qh4#" in metrics["pgn"]
    assert env.game.pgn(s) == metrics["pgn"]
    finish_dead(env)


def test_stalemate_is_a_draw_from_a_fen_start_and_pgn_keeps_the_setup():
    fen = "7k/8/6K1/8/8/8/5Q2/8 w - - 0 1"
    env = play(GAME, ["move Qf7"], fen=fen)
    s = env.state
    assert s.result.reason == "draw by stalemate"
    assert s.result.rewards == {WHITE: 0.0, BLACK: 0.0} and s.result.scores == {WHITE: 0.5, BLACK: 0.5}
    game, board = replay_pgn(env.episode_record()["metrics"]["pgn"])
    assert game.headers["FEN"] == fen and game.headers["Result"] == "1/2-1/2"
    assert board.fen() == s.g.board.fen() and board.is_stalemate()


def test_insufficient_material_draw():
    env = play(GAME, ["move Kxg2"], fen="7k/8/8/8/8/8/6r1/6K1 w - - 0 1")
    assert env.state.result.reason == "draw by insufficient material"
    assert env.state.result.rewards == {WHITE: 0.0, BLACK: 0.0}


def test_threefold_repetition_is_the_movers_claim_not_automatic():
    """FIDE 9.2: the game once ended after Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 (python-chess's
    claim_draw=True counts the move that would repeat); the draw is the mover's to claim."""
    shuffle = ["move Nf3", "move Nf6", "move Ng1", "move Ng8"]
    env = play(GAME, shuffle + shuffle[:2] + ["move Ng1"])
    assert env.state.result is None                      # the start position has occurred twice
    assert "claim_draw" not in env.infos[env.agent_selection]["action_types"]
    with pytest.raises(InvalidActionError, match="claim_draw"):      # not claimable yet
        env.step("claim_draw")
    env = play(GAME, shuffle * 2)                        # start position the third time
    assert env.state.result is None
    assert env.infos[env.agent_selection]["action_types"] == ["move", "claim_draw"]
    env.step("claim_draw")
    assert env.state.result.reason.startswith("draw by threefold repetition (claimed by ")
    assert env.state.result.rewards == {WHITE: 0.0, BLACK: 0.0}
    _, board = replay_pgn(env.episode_record()["metrics"]["pgn"])
    assert board.fen() == env.state.g.board.fen()
    assert env.episode_record()["metrics"]["termination"] == "threefold_repetition"


def test_fivefold_repetition_ends_the_game_without_a_claim():
    shuffle = ["move Nf3", "move Nf6", "move Ng1", "move Ng8"]
    env = play(GAME, shuffle * 3 + shuffle[:3])
    assert env.state.result is None
    env.step("move Ng8")                                 # start position the fifth time
    assert env.state.result.reason == "draw by fivefold repetition"


def test_fifty_moves_is_a_claim_and_seventy_five_moves_automatic():
    env = play(GAME, ["move Ra2"], fen="7k/8/8/8/8/8/8/R5K1 w - - 98 80")
    assert env.state.result is None and env.state.g.board.halfmove_clock == 99    # once ended here at 99
    assert "claim_draw" not in env.infos[env.agent_selection]["action_types"]
    env.step("move Kh7")
    assert env.state.result is None and "claim_draw" in env.infos[env.agent_selection]["action_types"]
    env.step("claim_draw")
    assert env.state.result.reason.startswith("draw by fifty moves (claimed by ")
    env = play(GAME, ["move Ra2"], fen="7k/8/8/8/8/8/8/R5K1 w - - 149 80")
    assert env.state.result.reason == "draw by seventyfive moves"


def test_ply_cap_is_a_truncated_draw():
    env = play(GAME, ["move Nf3", "move Nf6", "move Nc3", "move Nc6"], max_plies=4)
    s = env.state
    assert s.result.truncated and s.result.reason == "draw: the ply cap was reached after 4 plies"
    assert s.result.rewards == {WHITE: 0.0, BLACK: 0.0}
    assert env.truncations[WHITE] and env.truncations[BLACK]
    game, board = replay_pgn(env.episode_record()["metrics"]["pgn"])
    assert game.headers["Result"] == "1/2-1/2" and board.fen() == s.g.board.fen()


def test_default_cap_is_300_plies():
    env = socialgym_env.make(GAME)
    assert env.game.config["max_plies"] == 300
    with pytest.raises(ConfigError):
        socialgym_env.make(GAME, fen="not a position")


def test_random_games_end_and_pgn_replays():
    for seed in range(3):
        # uniform over the listed legal moves: quicker than the grammar's sample
        env = random_junk_episode(GAME, seed, ["move ??"], junk_rate=0.05, log_observations=False,
                                  legal=lambda env, agent, info, rng: rng.choice(info["legal_action_list"]))
        record = env.episode_record()
        assert record["finished"] and record["metrics"]["plies"] <= 300
        _, board = replay_pgn(record["metrics"]["pgn"])
        assert board.fen() == env.state.g.board.fen()
