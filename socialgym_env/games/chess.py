"""Chess — 2 players, complete information, no talk: the strategic control game (python-chess).

Create: ``socialgym_env.make("chess", max_plies=300)`` (``fen="..."`` starts from a position).

Colours are roles (``white`` / ``black``), dealt to the seats by the env's seeded RNG.

| Phase | Who              | Actions                                                      |
|-------|------------------|--------------------------------------------------------------|
| move  | the side to move | ``move MOVE`` — MOVE in UCI (``e2e4``, ``e7e8q``) or SAN (``e4``, ``Nf3``, ``O-O``, ``exd8=Q+``); ``claim_draw`` when a draw may be claimed (below) |

Only the ``move`` form is accepted (a bare ``e4`` is an unknown action type). A move that does
not parse or is illegal in the position is an invalid action whose reason says why
(``illegal move 'e5' in this position`` / ``cannot read 'zz' as a UCI or SAN move``). SAN is
case-sensitive as in the standard (``Bc4`` is a bishop, ``bc4`` a pawn). The canonical text of a
parsed move is UCI (``move e2e4``).

Legal moves: ``infos[agent]["game_state"]["legal_moves_uci"]`` / ``["legal_moves_san"]``
(structured, same order), ``infos[agent]["legal_action_list"]`` (``move <uci>`` strings) and
one compact line in the legal-action text listing the SAN moves.

Observation: the FEN, an ASCII board, the side to move, the moves so far (board messages).

End, under the FIDE Laws (articles 9.2, 9.3 and 9.6) as python-chess implements them:

- automatically, after each ply (``board.outcome(claim_draw=False)``): checkmate, stalemate,
  insufficient material, **fivefold** repetition (``is_fivefold_repetition``) and the
  **75-move** rule (``is_seventyfive_moves``: 150 plies without a capture or a pawn move);
- by the mover's claim: threefold repetition and the 50-move rule are draws only when the
  player to move claims them. The action ``claim_draw`` is offered (and legal) exactly when the
  position on the board has occurred three times (``board.is_repetition(3)``) or the halfmove
  clock is at least 100 (``board.is_fifty_moves()``); the game then ends "draw by threefold
  repetition (claimed by NAME)" or "... fifty moves ...". A player who does not claim plays on.
  (FIDE also lets a player claim with the move that would make the third repetition, written
  but not played; here the player plays it and the opponent may then claim.)

Scores: win 1, loss 0, draw ½ each; reward +1 / −1 / 0.
Cap: ``max_plies`` (300) plies → draw, reported as a truncation.
Invalid-action fallback: a random legal move (env RNG).
``metrics``: ``{"pgn": <standard PGN of the game>, "plies", "termination"}``; ``pgn(state)``
returns the same string (headers: Event, White, Black, Result, Termination; FEN/SetUp when
the game started from a custom position).
Version history: v0 initial (threefold repetition and the 50-move rule ended the game
automatically, one move early: a claim python-chess allowed was taken for the mover); v1 those
draws are the mover's claim (``claim_draw``), automatic only at fivefold / 75 moves.
"""
from __future__ import annotations

import chess
import chess.pgn

from ..actions import ActionError, ActionSpec, Arg, next_token
from ..game import Game, GameInfo, Phase, TWO_PLAYER

WHITE, BLACK = "white", "black"


class ChessMove(Arg):
    """A legal move of ``board`` in UCI or SAN; the parsed value is its UCI string."""

    name = "MOVE"

    def __init__(self, board: chess.Board):
        self.board = board

    def parse(self, rest):
        token, rest = next_token(rest)
        cleaned = token.strip("\"'`.,;:!?()[]{}<>*")
        if not cleaned:
            raise ActionError("MOVE is missing")
        return parse_move(self.board, cleaned).uci(), rest

    def describe(self):
        return f"MOVE in UCI or SAN; legal now (SAN): {' '.join(legal_san(self.board))}"

    def schema(self):
        return {"type": "string", "enum": list(legal_moves(self.board)[0])}

    def options(self):
        return list(legal_moves(self.board)[0])


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """UCI first, then SAN; raises ActionError with the reason."""
    try:
        move = chess.Move.from_uci(text)
    except ValueError:
        move = None
    if move is not None:
        if move in board.legal_moves:
            return move
        raise ActionError(f"illegal move {text!r} in this position")
    try:
        return board.parse_san(text)
    except chess.IllegalMoveError:
        raise ActionError(f"illegal move {text!r} in this position") from None
    except chess.AmbiguousMoveError:
        raise ActionError(f"ambiguous move {text!r}: name the origin square") from None
    except ValueError:
        raise ActionError(f"cannot read {text!r} as a UCI or SAN move") from None


def legal_moves(board: chess.Board) -> tuple[list[str], list[str]]:
    """(UCI list, SAN list) of the legal moves, same order; cached per position on the board
    (the env only ever pushes moves, so the move count and the last move identify it)."""
    key = (len(board.move_stack), board.peek() if board.move_stack else None, board.turn)
    cached = getattr(board, "_socialgym_legal", None)
    if cached is None or cached[0] != key:
        moves = list(board.legal_moves)
        cached = (key, [m.uci() for m in moves], [board.san(m) for m in moves])
        board._socialgym_legal = cached
    return cached[1], cached[2]


def legal_san(board: chess.Board) -> list[str]:
    return legal_moves(board)[1]


def claimable_draw(board: chess.Board):
    """The draw the player to move may claim now (FIDE 9.2 / 9.3): THREEFOLD_REPETITION when
    the position on the board has occurred three times, FIFTY_MOVES when the halfmove clock is
    at least 100, else None."""
    if board.is_fifty_moves():
        return chess.Termination.FIFTY_MOVES
    if board.is_repetition(3):
        return chess.Termination.THREEFOLD_REPETITION
    return None


def outcome_scores(outcome: chess.Outcome | None, white: str, black: str) -> dict:
    """Chess points: win 1, loss 0, draw ½ (also for no outcome: the cap)."""
    if outcome is None or outcome.winner is None:
        return {white: 0.5, black: 0.5}
    return {white: 1.0, black: 0.0} if outcome.winner == chess.WHITE else {white: 0.0, black: 1.0}


def pgn_result(white_reward: float | None) -> str:
    if white_reward is None:
        return "*"
    return "1-0" if white_reward > 0 else "0-1" if white_reward < 0 else "1/2-1/2"


def termination_label(outcome: chess.Outcome | None) -> str:
    return outcome.termination.name.lower() if outcome else "ply cap"


class Chess(Game):
    info = GameInfo(
        id="chess", name="Chess", category="control", num_players=2,
        information="complete", communication="none", horizon="open_ended", iteration="until the game ends",
        skills=("strategic",), outcome=TWO_PLAYER, max_steps=1000, version=1,
        roles=((WHITE, 1, WHITE), (BLACK, 1, BLACK)),
        description=("Standard chess under the FIDE rules as implemented by python-chess. White moves "
                     "first. Give moves as 'move e2e4' (UCI) or 'move e4' (SAN). The game ends by "
                     "checkmate, stalemate, insufficient material, fivefold repetition or the "
                     "75-move rule; when the position has occurred three times or 50 moves passed "
                     "without a capture or pawn move, the player to move may end it with "
                     "'claim_draw'; after {max_plies} plies it is a draw. Win +1, draw 0, loss −1."))
    config_defaults = {"max_plies": 300, "fen": ""}

    config_ranges = {"max_plies": (1, None)}

    @classmethod
    def validate_config(cls, config):
        if config["fen"]:
            try:
                board = chess.Board(config["fen"])
            except ValueError as err:
                raise ValueError(f"fen is not a valid position: {err}") from None
            if not board.is_valid():
                raise ValueError("fen is not a legal position")

    # ------------------------------------------------------------------ helpers
    def color_of(self, state, agent) -> chess.Color:
        return chess.WHITE if state.role(agent) == WHITE else chess.BLACK

    def to_move(self, state) -> str:
        role = WHITE if state.g.board.turn == chess.WHITE else BLACK
        return state.with_role(role)[0]

    def phases(self):
        return [Phase("move", actors=lambda s: [self.to_move(s)], resolve=self._moved, grammar=self._grammar,
                      instructions=self._instructions)]

    def _grammar(self, state, agent):
        specs = [ActionSpec("move", (ChessMove(state.g.board),), help="play a move")]
        if claimable_draw(state.g.board) is not None:
            specs.append(ActionSpec("claim_draw", help="claim the draw (threefold repetition or the 50-move rule)"))
        return specs

    def setup(self, state):
        fen = self.config["fen"]
        state.g.board = chess.Board(fen) if fen else chess.Board()
        state.g.start_fen = state.g.board.fen()
        state.g.san = []
        state.g.outcome = None
        state.round = 1
        white, black = state.with_role(WHITE)[0], state.with_role(BLACK)[0]
        state.announce(f"The game starts: {state.name(white)} plays White, {state.name(black)} plays Black.")
        state.goto("move")

    def _instructions(self, state, agent):
        board = state.g.board
        side = "White" if board.turn == chess.WHITE else "Black"
        check = " You are in check." if board.is_check() else ""
        return f"Move {board.fullmove_number}, {side} to move.{check}"

    def _moved(self, state, actions):
        (agent, action), = actions.items()
        board = state.g.board
        white, black = state.with_role(WHITE)[0], state.with_role(BLACK)[0]
        if action.type == "claim_draw":
            outcome = state.g.outcome = chess.Outcome(claimable_draw(board), None)
            state.announce(f"{state.name(agent)} claims a draw ({termination_label(outcome).replace('_', ' ')}).")
            state.finish(f"draw by {termination_label(outcome).replace('_', ' ')} (claimed by {state.name(agent)})",
                         scores=outcome_scores(outcome, white, black), winners=[])
            return
        move = chess.Move.from_uci(action.arg)
        san = board.san(move)
        number = f"{board.fullmove_number}." if board.turn == chess.WHITE else f"{board.fullmove_number}..."
        board.push(move)
        state.g.san.append(san)
        state.announce(f"{number} {state.name(agent)} plays {san} ({move.uci()}).")
        state.round = board.fullmove_number
        outcome = board.outcome(claim_draw=False)      # claimable draws are the mover's (claim_draw)
        if outcome is not None:
            state.g.outcome = outcome
            scores = outcome_scores(outcome, white, black)
            if outcome.winner is None:
                reason = f"draw by {termination_label(outcome).replace('_', ' ')}"
            else:
                winner = white if outcome.winner == chess.WHITE else black
                reason = f"{state.name(winner)} wins by {termination_label(outcome).replace('_', ' ')}"
            state.finish(reason, scores=scores,
                         winners=[a for a in (white, black) if scores[a] == 1.0])
            return
        if len(state.g.san) >= self.config["max_plies"]:
            self._cap(state)
            return
        state.goto("move")

    def _cap(self, state):
        white, black = state.with_role(WHITE)[0], state.with_role(BLACK)[0]
        state.finish(f"draw: the ply cap was reached after {len(state.g.san)} plies",
                     scores=outcome_scores(None, white, black), truncated=True)

    def on_truncation(self, state):
        self._cap(state)

    # ------------------------------------------------------------------ text
    def goal(self, state, agent):
        colour = "White" if self.color_of(state, agent) == chess.WHITE else "Black"
        return f"You play {colour}. Checkmate the opponent's king; a draw is better than a loss."

    def status(self, state, agent):
        board = state.g.board
        side = "White" if board.turn == chess.WHITE else "Black"
        lines = [f"Position (FEN): {board.fen()}", f"{side} to move; ply {len(state.g.san)} of at most "
                 f"{self.config['max_plies']}."]
        lines.append("Board (White at the bottom, uppercase = White):")
        lines.extend(str(board).splitlines())
        return lines

    def public_data(self, state, agent):
        board = state.g.board
        uci, san = legal_moves(board)
        return {"fen": board.fen(), "turn": WHITE if board.turn == chess.WHITE else BLACK,
                "my_color": state.role(agent), "ply": len(state.g.san), "moves_san": list(state.g.san),
                "legal_moves_uci": list(uci), "legal_moves_san": list(san),
                "in_check": board.is_check()}

    def pgn(self, state) -> str:
        board = state.g.board
        game = chess.pgn.Game.from_board(board)
        white, black = state.with_role(WHITE)[0], state.with_role(BLACK)[0]
        game.headers["Event"] = "Social Gym chess"
        game.headers["White"] = state.name(white)
        game.headers["Black"] = state.name(black)
        game.headers["Result"] = pgn_result(state.result.rewards[white] if state.result else None)
        if state.result is not None:
            game.headers["Termination"] = termination_label(state.g.outcome) if state.g.outcome or \
                state.result.truncated else state.result.reason
        return str(game)

    def metrics(self, state):
        return {"pgn": self.pgn(state), "plies": len(state.g.san),
                "termination": termination_label(state.g.outcome) if state.result else None}


GAME = Chess
