"""Leduc poker — 2 players, a 6-card deck (J J Q Q K K), two betting rounds and one board card.

Create: ``socialgym_env.make("leduc_poker")`` (``deal="KQJ"`` fixes player_0's card, player_1's
card and the board card).

Both players ante 1 chip and are dealt one private card from two suits of J < Q < K (suits never
matter). ``player_0`` acts first in each of the two betting rounds. Bets are fixed: 2 chips in
round 1, 4 chips in round 2; a round holds at most two bets (a bet and one raise).

| Situation        | Actions                                                                  |
|------------------|--------------------------------------------------------------------------|
| no bet standing  | ``check`` (pass the turn) or ``bet`` (put in the round's bet size)         |
| facing a bet     | ``call`` (match it), ``fold`` (give up the pot), or — if the round has     |
|                  | only one bet so far — ``raise`` (match it and bet the round's size more)  |

A round ends on two checks or on a call. After round 1 one card from the rest of the deck is
dealt face up (the board card) and round 2 begins; after round 2 comes the showdown: both cards
are shown publicly, a private card that pairs the board card wins, otherwise the higher card
wins; equal ranks split the pot (both score 0). A fold ends the hand at once: the other player
takes the pot without a showdown.

Observation: the public board (antes, every action, the board card, the showdown), the seat's
card under "Your private information", the betting round, pot, each player's chips in it and
the board card. ``infos[agent]["game_state"]`` (``public_data``): ``my_card``, ``board``,
``history`` (one list of action words per betting round), ``betting_round``, ``to_call``,
``pot``, ``put_in``, ``ranks``, ``bets_this_round``, ``max_bets``.

Scores are the chips won or lost (at most 13; the values OpenSpiel's ``leduc_poker`` returns,
so the bridge ``socialgym_agents/openspiel_bridge.py`` measures exploitability in chips); the outcome
reward is their sign: +1 for the winner, −1 for the loser, 0 for a split pot (two-player rule).
Cap 20 steps (never reached: a hand has at most 8 actions).
Invalid action fallback: ``check`` when no bet stands, otherwise ``fold``.

Reference figures (OpenSpiel's ``exploitability``, chips): the uniform random policy 2.3736;
an equilibrium 0.

Version history: v0 initial (the rules of OpenSpiel's ``leduc_poker``).
"""
from ..game import GameInfo, TWO_PLAYER
from ..poker import LimitPoker


class LeducPoker(LimitPoker):
    info = GameInfo(
        id="leduc_poker", name="Leduc Poker", category="control", num_players=2,
        information="hidden_state", communication="structured", horizon="fixed_rounds",
        iteration="two betting rounds", skills=("deception", "probabilistic", "strategic"),
        outcome=TWO_PLAYER, max_steps=20, rank_by="score",
        description=("Leduc poker. The deck has six cards: two each of J < Q < K. Both players ante 1 "
                     "chip and get one private card. The first seat acts first in each of two betting "
                     "rounds. With no bet standing a player may check or bet; facing a bet a player "
                     "may call, fold or (once per round) raise. Bets are 2 chips in round 1 and 4 in "
                     "round 2. After round 1 a board card is dealt face up. At the showdown a card "
                     "that pairs the board wins, otherwise the higher card; equal cards split the "
                     "pot. A fold gives the pot to the other player."))
    deck = ("J", "J", "Q", "Q", "K", "K")
    bet_sizes = (2, 4)
    max_bets = 2

    def hand_strength(self, card, board):
        return (card == board[0], self.ranks.index(card))


GAME = LeducPoker
