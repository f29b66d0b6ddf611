"""The rules every Social Gym game shares; each game's own rules are its module's docstring.

One module per game, each defining ``GAME`` (its Game subclass); ``registry.GAME_MODULES``
lists them. ``socialgym rules GAME`` prints a game's rules, ``socialgym rules`` these.

Seats and names. Agent ids are ``player_0 … player_{n-1}``. Each episode draws display names
from a name pool and deals roles with the env's own seeded RNG (``reset(seed=…)``); nothing
reads the global ``random`` or ``numpy`` state. The same seed and the same actions give a
byte-identical transcript and episode record. Player names (and other keywords) are matched
after Unicode NFC normalisation and case folding, as whole tokens: a decomposed "Björn" is the
composed one, and "eyes" is not "yes".

Outcome reward. At the end every seat gets a terminal reward in {+1, 0, −1}, by the game's
outcome rule (``GameInfo.outcome``):

| rule | reward |
|------|--------|
| ``two_player`` | the higher game score +1, the lower −1, equal scores 0 |
| ``team`` | every member of the winning team +1, everyone else −1 (no splitting); no winner: all 0 |
| ``median`` | a score above the median of all seats' scores +1, below −1, equal 0 |
| ``winner_take_all`` | the winner +1, everyone else −1; no winner: all 0 |
| ``custom`` | the game's own rule, stated in its rules |

No rule breaks a tie by seat order. Raw game points are ``infos[agent]["score"]``;
``infos[agent]["outcome"]`` is ``win`` / ``draw`` / ``loss`` (the sign of the reward).

Turn cap. Every game has a cap on decisions (``GameInfo.max_steps``; ``max_steps=N`` in the
config lowers or raises it), stated in its rules or set as a safety net far above where its
rules end it. Reaching it is a truncation, not a termination, and the game's cap rule decides
the outcome. A game that states no cap rule is scored on the points so far by its outcome rule
(a draw for team and winner-take-all games, which have no winner yet), and the transcript says
exactly that -- never "draw" when the rewards are not a draw.

Votes. Unless a game says otherwise, a tied plurality eliminates nobody; where someone must go,
the env's seeded RNG breaks the tie and the transcript says so. Where a vote offers ``abstain``,
abstention is a candidate like any player: if it has or ties for the plurality, nobody goes (one
vote among four abstentions never exiles anyone).

Invalid actions. Anything a seat sends that does not parse or is not legal now is recorded in
``infos[agent]["invalid_action"]`` (the raw text and the reason) and handled by the env's
``invalid_action`` mode: ``fallback`` (the default: the phase's neutral action, stated in each
game's rules -- pass, abstain, or a random legal choice drawn from the env's RNG), ``forfeit``
(the seat loses the game) or ``raise``. Text is clipped before parsing (4,000 characters), so
junk never crashes an env.

Visibility. Every message is public, team-only, private to one seat, or sent to a list of
receivers fixed when it is posted; a seat never observes a message it was not entitled to see.
Each seat's observation is the game's description, its own role, goal and private facts, the
messages it may see, the status lines and its legal actions (``infos`` holds the same as
structured data).

Cooperative games (Battle of the Sexes, Stag Hunt, Public Goods, Centipede) are left out of the
Elo ratings and reported by win rate and their coordination metric.

Where the published reference code of the Social Gym paper differed, these rules fix it: Liar's
Dice gave double turns after a ``liar`` call and blind first moves; Coup charged a card for
challenged foreign aid; Centipede paid (actor, other) instead of (first mover, second mover);
Dead Last accepted splits that do not sum to 100; the Insider's secret could be empty; Stag
Hunt, Minority Game, Public Goods and Sheriff of Nottingham broke ties by seat order; Battle of
the Sexes defaulted to seat 0's option and named fixed people; Skull stalled on a bad flip
target and stepped passed players; timeouts were scored as all-zero ties; parsing matched
substrings; a process-global RNG made seeds meaningless.
"""
