"""Heuristic chess player: a one-ply material-greedy mover.

Plays a mate in one when there is one; else the capture of the most valuable piece (ties: the
least valuable capturing piece, then promotion); else a promotion; else a random legal move.
Reads the position from ``info["game_state"]["fen"]`` (public in chess).
"""
from __future__ import annotations

import chess

from ..base import BasePolicy, Decision
from ..scripted import sample_from_info

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


def greedy_move(board: chess.Board, rng) -> chess.Move:
    moves = list(board.legal_moves)
    for move in moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return move
    best, best_key = [], None
    for move in moves:
        captured = board.piece_at(move.to_square)
        gain = VALUES[captured.piece_type] if captured else (1 if board.is_en_passant(move) else 0)
        gain += VALUES[move.promotion] - 1 if move.promotion else 0
        if gain <= 0:
            continue
        mover = board.piece_at(move.from_square)
        key = (gain, -VALUES.get(mover.piece_type, 0) if mover else 0)
        if best_key is None or key > best_key:
            best, best_key = [move], key
        elif key == best_key:
            best.append(move)
    return rng.choice(best) if best else rng.choice(moves)


class GreedyChess(BasePolicy):
    policy_id = "scripted:heuristic:chess"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        fen = (info.get("game_state") or {}).get("fen")
        if info.get("phase") != "move" or not fen:
            return Decision(sample_from_info(info, rng))
        board = chess.Board(fen)
        return Decision(f"move {greedy_move(board, rng).uci()}")


POLICY = GreedyChess
