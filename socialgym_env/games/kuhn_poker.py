"""Kuhn poker — 2 players, a 3-card deck (J < Q < K), one betting round. A control game with a known answer.

Create: ``socialgym_env.make("kuhn_poker")`` (``deal="KQ"`` fixes player_0's and player_1's cards).

Both players ante 1 chip and are dealt one card each from J, Q, K (the third card is never
seen). ``player_0`` acts first; there is one betting round with bets of 1 chip and at most one bet.

| Situation        | Actions                                                        |
|------------------|----------------------------------------------------------------|
| no bet standing  | ``check`` (pass the turn) or ``bet`` (put in 1 chip)             |
| facing the bet   | ``call`` (put in 1 chip: showdown) or ``fold`` (give up the pot) |

The hand ends on two checks (showdown for the pot of 2), on a call (showdown for the pot of 4)
or on a fold (the bettor takes the pot without a showdown). At the showdown both cards are
shown publicly and the higher card wins. The five possible hands and player_0's chips:
check-check ±1, bet-call ±2, bet-fold +1, check-bet-call ±2, check-bet-fold −1.

Observation: the public board (antes, every action, the showdown), the seat's card under "Your
private information", the pot and each player's chips in it. ``infos[agent]["game_state"]``
(``public_data``): ``my_card``, ``board`` (always empty), ``history`` (one list of action words
per betting round), ``betting_round``, ``to_call``, ``pot``, ``put_in``, ``ranks``,
``bets_this_round``, ``max_bets``.

Scores are the chips won or lost (the values OpenSpiel's ``kuhn_poker`` returns, so the
OpenSpiel bridge ``socialgym_agents/openspiel_bridge.py`` measures exploitability in chips); the
outcome reward is their sign: +1 for the winner of the pot, −1 for the loser (two-player rule).
Cap 10 steps (never reached: a hand has at most 3 actions).
Invalid action fallback: ``check`` when no bet stands, otherwise ``fold``.

The game has a known equilibrium family (Kuhn, 1950): player_0 bets a J with probability α ≤ 1/3,
always checks a Q and calls a bet with it with probability α + 1/3, bets a K with probability 3α;
player_1 bets a J after a check with probability 1/3, calls a bet with Q with probability 1/3,
always bets and calls with K. player_0's value is −1/18 chip per hand. The uniform random
policy's exploitability is 0.4583 chips (OpenSpiel's ``exploitability``, the mean of both
players' best-response gains).

Version history: v0 initial (the rules of OpenSpiel's ``kuhn_poker``).
"""
from ..game import GameInfo, TWO_PLAYER
from ..poker import LimitPoker


class KuhnPoker(LimitPoker):
    info = GameInfo(
        id="kuhn_poker", name="Kuhn Poker", category="control", num_players=2,
        information="hidden_state", communication="structured", horizon="single_round",
        iteration="one hand", skills=("deception", "probabilistic", "strategic"), outcome=TWO_PLAYER,
        max_steps=10, rank_by="score",
        description=("Kuhn poker. The deck has three cards, J < Q < K. Both players ante 1 chip and get "
                     "one card each; the third card stays hidden. The first seat acts first. With no bet "
                     "standing a player may check or bet 1 chip; facing the bet a player may call (put "
                     "in 1 chip) or fold (give up the pot). Two checks or a call lead to a showdown: "
                     "the higher card wins the pot. A fold gives the pot to the bettor. You win or "
                     "lose the chips your opponent or you put in."))
    deck = ("J", "Q", "K")
    bet_sizes = (1,)
    max_bets = 1

    def hand_strength(self, card, board):
        return (self.deck.index(card),)


GAME = KuhnPoker
