"""Hanabi — 2 players (2–5), cooperative: build five fireworks from cards you cannot see.

Create: ``socialgym_env.make("hanabi", information_tokens=8, fuses=3)`` (``num_players`` 2–5,
default 2; ``information_tokens`` 1–20; ``fuses`` 1–10; ``deck`` fixes the shuffle for tests: the
50 cards in draw order, e.g. ``"R1 Y1 G1 …"``; empty = shuffled with the env's RNG).

The deck: 50 cards, five colours (red R, yellow Y, green G, white W, blue B) each with ranks
1, 1, 1, 2, 2, 3, 3, 4, 4, 5. Each player is dealt a hand of 5 cards with 2 or 3 players, 4 with
4 or 5 (``player_0``'s hand first, from the top of the deck). A player holds its cards facing
away: everyone sees every hand but their own. The team shares ``information_tokens`` information
tokens (all available at the start) and ``fuses`` fuses. Hand slots are numbered 1 to the hand
size, oldest card first; when a card leaves a hand the newer cards move down one slot and the
card drawn takes the last slot. ``player_0`` takes the first turn, then seat order.

| Action | Effect |
|--------|--------|
| ``hint NAME CLUE`` | CLUE is a colour (``red`` ``yellow`` ``green`` ``white`` ``blue``) or a rank (``1``–``5``): every card in NAME's hand with that colour or rank is pointed out (the hint names all of them, and at least one must match). NAME is another player. Costs one information token; needs one. |
| ``discard SLOT`` | the card goes face up to the discard pile; one information token comes back; draw a card. Not allowed while every information token is available. |
| ``play SLOT`` | the card is shown: if its rank is one more than the top of its colour's firework it is placed there (a 1 starts a firework), and completing a firework with its 5 returns one information token if any is spent; otherwise it is discarded and a fuse burns. Draw a card. |

A draw from an empty deck draws nothing (the hand shrinks).

End: at once when the last fuse burns (score 0: the fireworks explode) or when all five
fireworks reach 5 (score 25); otherwise when every player, the one who drew the last card
included, has taken one more turn after the last card was drawn. The score is the sum of the
fireworks' top ranks (0–25).

Observation: the rules, the public board (every hint with the slots it pointed at, every play
and discard with the card shown, fuses burnt), and under "Status" the fireworks, tokens, fuses,
deck size, the discard pile and every other player's hand with what its holder has been told.
The seat's own hand is shown only as what the hints told it ("Your private information": per
slot the colour and rank if hinted, and the colours and ranks that a hint ruled out), never the
cards themselves. ``infos[agent]["game_state"]`` (``public_data``): ``my_hand`` (per slot
``colour``/``rank`` when hinted, else None, and ``not_colours``/``not_ranks``), ``hands`` (every
other seat's cards as ``[colour, rank]`` with that seat's own knowledge), ``fireworks``,
``information_tokens``, ``max_information_tokens``, ``fuses``, ``max_fuses``, ``deck_size``,
``discards``, ``score``, ``final_turns_left`` (None until the deck is empty), ``current_player``.

Reward (cooperative, the same for every seat; outcome rule ``custom``): the score is every
seat's ``infos[agent]["score"]``, and the terminal reward in {+1, 0, −1} is +1 for a perfect 25,
−1 when the fuses are all burnt (the published rules' lost game), 0 for any other finished
show. The game is reported as cooperative (win rate and a ``coordination`` metric, not Elo):
``coordination`` is the score divided by 25.
Turn cap: 200 decisions, a safety net: the rules end every game within 125 (at most 50 plays and
discards, and at most ``information_tokens`` + discards + 5 hints); reaching it is a truncation
scored as a draw (reward 0, the score so far).
Invalid action fallback: the first legal hint (hints lose no card) when a token is available,
otherwise ``discard 1``.

Choices and sources: the published rules (Antoine Bauza, 2010) and the Hanabi Learning
Environment agree on everything above. Printings of the published rules differ on an empty
hint ("you have no blue cards"); this game follows the acceptance rules and the Hanabi Learning
Environment: a hint must point at one card at least. A discard is illegal with every token
available, as in both. The game's turns are checked against OpenSpiel's ``hanabi`` (the
Hanabi Learning Environment): seeded random games replayed in both with the same deck give the
same legal actions at every turn, the same fireworks, tokens, fuses and hands, and the same
final score (``tests/games/test_hanabi.py``).

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec, Choice, Int
from ..game import CUSTOM, Game, GameInfo, Phase
from ..patterns import player_arg
from ..state import State

COLOURS = ("red", "yellow", "green", "white", "blue")
LETTERS = {colour: colour[0].upper() for colour in COLOURS}
RANKS = (1, 2, 3, 4, 5)
COPIES = {1: 3, 2: 2, 3: 2, 4: 2, 5: 1}
CLUES = COLOURS + tuple(str(r) for r in RANKS)
PERFECT = len(COLOURS) * max(RANKS)


# ------------------------------------------------------------------ pure rules
def full_deck() -> list:
    """The 50 cards as (colour, rank), colour by colour, ranks ascending."""
    return [(c, r) for c in COLOURS for r in RANKS for _ in range(COPIES[r])]


def card_text(card) -> str:
    return f"{card[0]} {card[1]}"


def parse_deck(text: str) -> list:
    """``"R1 Y5 …"`` -> [(colour, rank), ...]; ValueError unless it is the full deck, reordered."""
    by_letter = {letter: colour for colour, letter in LETTERS.items()}
    cards = []
    for token in text.split():
        colour, rank = by_letter.get(token[:1].upper()), token[1:]
        if colour is None or not rank.isdigit() or int(rank) not in RANKS:
            raise ValueError(f"deck: {token!r} is not a card (a colour letter R Y G W B and a rank 1-5)")
        cards.append((colour, int(rank)))
    if sorted(cards) != sorted(full_deck()):
        raise ValueError(f"deck must hold the 50 cards of the game once each, in draw order (got {len(cards)} cards)")
    return cards


def hand_size(players: int) -> int:
    return 5 if players <= 3 else 4


def is_playable(card, fireworks: dict) -> bool:
    colour, rank = card
    return fireworks[colour] == rank - 1


def hint_matches(hand: list, clue: str) -> list:
    """The 1-based slots of the cards in ``hand`` that ``clue`` (a colour or a rank) points at."""
    if clue in COLOURS:
        return [i for i, card in enumerate(hand, 1) if card["colour"] == clue]
    return [i for i, card in enumerate(hand, 1) if card["rank"] == int(clue)]


def score_of(fireworks: dict) -> int:
    return sum(fireworks.values())


def _new_card(card) -> dict:
    """A card in a hand: what it is and what its holder has been told."""
    return {"colour": card[0], "rank": card[1], "known_colour": None, "known_rank": None,
            "not_colours": [], "not_ranks": []}


def _knowledge(card: dict) -> str:
    known = [card["known_colour"] or "", str(card["known_rank"] or "")]
    told = " ".join(k for k in known if k)
    ruled = [c for c in card["not_colours"]] + [str(r) for r in card["not_ranks"]]
    parts = [f"known: {told}" if told else "nothing known"]
    if ruled:
        parts.append("not " + ", ".join(ruled))
    return "; ".join(parts)


class Hanabi(Game):
    info = GameInfo(
        id="hanabi", name="Hanabi", category="bluffing", num_players=2, information="hidden_state",
        communication="structured", horizon="open_ended", iteration="until the deck runs out",
        skills=("cooperation", "coordination", "tom", "probabilistic"), outcome=CUSTOM, max_steps=200,
        cooperative=True, description="Hanabi: build five fireworks together from cards you cannot see.")
    config_defaults = {"information_tokens": 8, "fuses": 3, "deck": ""}
    config_ranges = {"information_tokens": (1, 20), "fuses": (1, 10)}
    player_counts = (2, 3, 4, 5)

    @classmethod
    def validate_config(cls, config: dict) -> None:
        if config.get("deck"):
            parse_deck(config["deck"])

    # ------------------------------------------------------------------ flow
    def phases(self):
        return [Phase("turn", actors=lambda s: [s.g.current], grammar=self._specs, resolve=self._resolve,
                      fallback=self._fallback, instructions=self._instructions)]

    def setup(self, state: State) -> None:
        g = state.g
        cards = parse_deck(self.config["deck"]) if self.config["deck"] else state.rng.sample(full_deck(), 50)
        g.deck = cards[::-1]                # the next card to draw is the last
        g.hands = {a: [] for a in state.agents}
        for agent in state.agents:
            for _ in range(hand_size(len(state.agents))):
                g.hands[agent].append(_new_card(g.deck.pop()))
        g.fireworks = {c: 0 for c in COLOURS}
        g.tokens = self.config["information_tokens"]
        g.fuses = self.config["fuses"]
        g.discards = []
        g.final_turns = None                # turns left once the last card is drawn
        g.current = state.agents[0]
        g.counts = {"hint": 0, "play": 0, "discard": 0, "misplay": 0}
        state.round = 1
        state.announce(f"The game starts: {len(state.agents)} players, {hand_size(len(state.agents))} cards each, "
                       f"{g.tokens} information tokens, {g.fuses} fuses. {state.name(g.current)} begins.")
        state.goto("turn")

    def _specs(self, state: State, agent: str):
        g = state.g
        slot = Int(1, len(g.hands[agent]), name="SLOT")
        specs = [ActionSpec("play", (slot,), help="play the card in this slot of your hand")]
        if g.tokens < self.config["information_tokens"]:
            specs.append(ActionSpec("discard", (slot,), help="discard the card in this slot; regain a token"))
        if g.tokens > 0:
            hands = g.hands

            def check(values):
                target, clue = values
                if target == agent:
                    return "you cannot hint yourself"
                if not hint_matches(hands[target], clue):
                    return f"a hint must point at one card at least: {state.name(target)} has no {clue}"
                return None
            specs.append(ActionSpec("hint", (player_arg(state, state.others(agent)), Choice(CLUES, name="CLUE")),
                                    check=check, help="point out every card of one colour or rank in a hand"))
        return specs

    def _fallback(self, state: State, agent: str) -> str:
        legal = self._grammar_hints(state, agent)
        return legal[0] if legal else "discard 1"

    def _grammar_hints(self, state: State, agent: str) -> list:
        if state.g.tokens == 0:
            return []
        return [f"hint {other} {clue}" for other in state.others(agent) for clue in CLUES
                if hint_matches(state.g.hands[other], clue)]

    def _instructions(self, state: State, agent: str) -> str:
        g = state.g
        return (f"Your turn. Information tokens {g.tokens} of {self.config['information_tokens']}, "
                f"fuses {g.fuses} of {self.config['fuses']}, deck {len(g.deck)}.")

    def _resolve(self, state: State, actions: dict) -> None:
        (agent, action), = actions.items()
        g = state.g
        g.counts[action.type] += 1
        drew_last = False
        if action.type == "hint":
            self._hint(state, agent, *action.values)
        else:
            card = g.hands[agent].pop(action.arg - 1)
            if action.type == "play":
                self._play(state, agent, action.arg, card)
            else:
                g.tokens += 1
                g.discards.append((card["colour"], card["rank"]))
                state.announce(f"{state.name(agent)} discards slot {action.arg}: {card_text((card['colour'], card['rank']))}.")
            drew_last = self._draw(state, agent)
        if state.finished:
            return
        if g.final_turns is not None:
            g.final_turns -= 1
        if drew_last:
            g.final_turns = len(state.agents)
            state.announce(f"The deck is empty: every player, {state.name(agent)} included, has one more turn.")
        self._next_turn(state, agent)

    def _hint(self, state: State, agent: str, target: str, clue: str) -> None:
        g = state.g
        g.tokens -= 1
        slots = hint_matches(g.hands[target], clue)
        for i, card in enumerate(g.hands[target], 1):
            colour_clue = clue in COLOURS
            if i in slots:
                card["known_colour" if colour_clue else "known_rank"] = clue if colour_clue else int(clue)
            else:
                ruled = card["not_colours"] if colour_clue else card["not_ranks"]
                value = clue if colour_clue else int(clue)
                if value not in ruled:
                    ruled.append(value)
        kind = "colour" if clue in COLOURS else "rank"
        state.announce(f"{state.name(agent)} hints {state.name(target)}: {kind} {clue} is in slot(s) "
                       f"{', '.join(map(str, slots))}.")

    def _play(self, state: State, agent: str, slot: int, card: dict) -> None:
        g = state.g
        shown = (card["colour"], card["rank"])
        if is_playable(shown, g.fireworks):
            g.fireworks[shown[0]] = shown[1]
            extra = ""
            if shown[1] == max(RANKS) and g.tokens < self.config["information_tokens"]:
                g.tokens += 1
                extra = " The firework is complete: one information token comes back."
            state.announce(f"{state.name(agent)} plays slot {slot}: {card_text(shown)}, placed.{extra}")
            if score_of(g.fireworks) == PERFECT:
                self._end(state, "all five fireworks are complete")
            return
        g.fuses -= 1
        g.counts["misplay"] += 1
        g.discards.append(shown)
        state.announce(f"{state.name(agent)} plays slot {slot}: {card_text(shown)}, which does not fit: "
                       f"it is discarded and a fuse burns ({g.fuses} left).")
        if g.fuses == 0:
            self._end(state, "the last fuse burnt: the fireworks explode")

    def _draw(self, state: State, agent: str) -> bool:
        """Draw for ``agent`` unless the game ended; True when this draw took the last card."""
        g = state.g
        if state.finished or not g.deck:
            return False
        g.hands[agent].append(_new_card(g.deck.pop()))
        return not g.deck

    def _next_turn(self, state: State, agent: str) -> None:
        g = state.g
        if g.final_turns == 0:
            self._end(state, "every player has had a last turn after the deck ran out")
            return
        g.current = state.next_alive(agent)
        if g.current == state.agents[0]:
            state.round += 1
        state.goto("turn")

    def score(self, state: State) -> int:
        g = state.g
        return 0 if g.fuses == 0 else score_of(g.fireworks)

    def _end(self, state: State, reason: str, truncated: bool = False) -> None:
        g = state.g
        score = self.score(state)
        reward = 0.0 if truncated else 1.0 if score == PERFECT else -1.0 if g.fuses == 0 else 0.0
        state.finish(f"{reason}; the score is {score} of {PERFECT}", scores={a: score for a in state.agents},
                     rewards={a: reward for a in state.agents}, truncated=truncated)

    def on_truncation(self, state: State) -> None:
        self._end(state, "turn cap reached: a draw", truncated=True)

    # ------------------------------------------------------------------ text hooks
    def description(self, state: State) -> str:
        c, n = self.config, len(state.agents)
        return (f"Hanabi: {n} players, cooperative. The deck has 50 cards: five colours (red, yellow, green, "
                f"white, blue), each with ranks 1,1,1,2,2,3,3,4,4,5. Each player holds {hand_size(n)} cards and "
                f"sees every hand but their own. The team shares {c['information_tokens']} information tokens and "
                f"{c['fuses']} fuses. On your turn do one thing: 'hint NAME CLUE' (costs a token: point out every "
                f"card of one colour or one rank in another player's hand; at least one must match), 'discard "
                f"SLOT' (regain a token; not while all {c['information_tokens']} are available; draw a card) or "
                f"'play SLOT' (if the card is the next rank of its colour's firework it is placed, a 5 regains a "
                f"token; otherwise it is discarded and a fuse burns; draw a card). Slots count from 1, the "
                f"oldest card; a new card takes the last slot. The game ends when the last fuse burns (score 0), "
                f"when all fireworks reach 5, or when everyone has had one more turn after the deck ran out. "
                f"The score is the sum of the fireworks' top ranks (at most {PERFECT}), shared by all.")

    def goal(self, state: State, agent: str) -> str:
        return f"Together, score as close to {PERFECT} as you can without burning every fuse."

    def secret(self, state: State, agent: str) -> list[str]:
        slots = "; ".join(f"slot {i}: {_knowledge(card)}" for i, card in enumerate(state.g.hands[agent], 1))
        return [f"Your hand (you cannot see it), what hints told you - {slots}."]

    def status(self, state: State, agent: str) -> list[str]:
        g = state.g
        fireworks = ", ".join(f"{c} {g.fireworks[c]}" for c in COLOURS)
        lines = [f"Fireworks: {fireworks} (score {score_of(g.fireworks)}). Information tokens: {g.tokens} of "
                 f"{self.config['information_tokens']}. Fuses: {g.fuses} of {self.config['fuses']}. "
                 f"Deck: {len(g.deck)} cards." + (f" Turns left: {g.final_turns}." if g.final_turns is not None else ""),
                 "Discards: " + (", ".join(card_text(c) for c in g.discards) or "none") + "."]
        for other in state.others(agent):
            cards = "; ".join(f"{i}: {card_text((card['colour'], card['rank']))} ({_knowledge(card)})"
                              for i, card in enumerate(g.hands[other], 1))
            lines.append(f"{state.name(other)}'s hand - {cards}.")
        return lines

    def public_data(self, state: State, agent: str) -> dict:
        g = state.g

        def told(card):
            return {"colour": card["known_colour"], "rank": card["known_rank"],
                    "not_colours": list(card["not_colours"]), "not_ranks": list(card["not_ranks"])}
        return {"my_hand": [told(card) for card in g.hands[agent]],
                "hands": {o: [dict(told(card), card=[card["colour"], card["rank"]]) for card in g.hands[o]]
                          for o in state.others(agent)},
                "fireworks": dict(g.fireworks), "information_tokens": g.tokens,
                "max_information_tokens": self.config["information_tokens"], "fuses": g.fuses,
                "max_fuses": self.config["fuses"], "deck_size": len(g.deck),
                "discards": [list(c) for c in g.discards], "score": score_of(g.fireworks),
                "final_turns_left": g.final_turns, "current_player": g.current, "colours": list(COLOURS)}

    def metrics(self, state: State) -> dict:
        g = state.g
        return {"coordination": self.score(state) / PERFECT, "hints": g.counts["hint"], "plays": g.counts["play"],
                "discards": g.counts["discard"], "misplays": g.counts["misplay"]}


GAME = Hanabi
