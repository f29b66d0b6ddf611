"""Sheriff of Nottingham — 4 players, 4 rounds; the sheriff rotates so each player serves once.

Create: ``socialgym_env.make("sheriff_of_nottingham", rounds=4)``

Round ``r``'s sheriff is seat ``(r − 1) mod 4`` (player_0 first), so with the default 4 rounds
every player is sheriff exactly once. The other three are merchants.

| Phase     | Who                                   | Actions                                       |
|-----------|---------------------------------------|-----------------------------------------------|
| pack      | merchants, simultaneous, private       | ``honest`` / ``smuggle``                        |
| negotiate | everyone once, round-robin from the sheriff | ``say TEXT`` / ``pass`` (offers and threats are talk only) |
| inspect   | the sheriff, one decision per merchant | ``inspect NAME`` / ``pass NAME``                |

Inspect is a sequence of single decisions: the phase re-enters itself with the sheriff as the
only actor until every merchant of the round is decided; NAME must be a merchant not yet
decided this round (any order). Each decision is applied and announced at once, so later
decisions may use what earlier inspections revealed.

| Bag                  | passed      | inspected                    |
|----------------------|-------------|------------------------------|
| honest               | merchant +3 | merchant +5, sheriff −2      |
| smuggled contraband  | merchant +8 | merchant −4, sheriff +4      |

Visibility (as in the published game): a merchant's packing is private. The sheriff's
decision is public; an inspection reveals the bag's contents and both payoffs to everyone; a
passed bag stays hidden — only its owner is told the payoff (privately). A merchant's own
total is therefore private (shown in its secret); the totals are announced when the game ends.

Observation: description, own packing and own total (private), the public board.
``public_data``: round, sheriff, merchants, undecided merchants, the public decision log
(contents only for inspected bags), the sheriff ledger (public), and the seat's own packing
history and total.

Reward: median split on the totals (above the median +1, below −1, equal 0); no seat-order
tie-breaks. Invalid-action fallbacks: pack → ``honest``; negotiate → ``pass``; inspect →
``pass NAME`` for the first undecided merchant in seat order. Turn cap: 400 steps (never
reached by the structure: 10 steps a round); reaching it is a draw.
Version history: v0 initial.
"""
from ..actions import ActionSpec
from ..game import Game, GameInfo, MEDIAN, Phase
from ..patterns import player_arg, rotating_from, talk_phase

HONEST, SMUGGLE = "honest", "smuggle"
INSPECT, PASS = "inspect", "pass"


def bag_payoff(packed: str, decision: str) -> tuple[int, int]:
    """(merchant, sheriff) points for one bag."""
    if decision == PASS:
        return (3, 0) if packed == HONEST else (8, 0)
    return (5, -2) if packed == HONEST else (-4, 4)


def sheriff_of_round(state, round_number: int) -> str:
    return state.agents[(round_number - 1) % len(state.agents)]


def _contents(packed: str) -> str:
    return "honest goods" if packed == HONEST else "smuggled contraband"


def _pts(x: float) -> str:
    x = int(x) if float(x).is_integer() else x
    return f"+{x}" if x > 0 else f"−{-x}" if x < 0 else "0"


ROUND_RULES = ("Each round the three merchants secretly pack their bag with honest goods or smuggled "
               "contraband. Then everyone speaks once (offers and threats are only talk). Then the sheriff "
               "decides, merchant by merchant, to inspect the bag or let it pass. Passed honest bag: merchant "
               "+3. Passed smuggler: merchant +8. Inspected honest bag: merchant +5 and sheriff −2. Inspected "
               "smuggler: merchant −4 and sheriff +4. Inspections show the bag to everyone; passed bags stay "
               "hidden. Totals above the group median win, below it lose.")


class SheriffOfNottingham(Game):
    info = GameInfo(
        id="sheriff_of_nottingham", name="Sheriff of Nottingham", category="bluffing", num_players=4,
        information="hidden_state", communication="free_form", horizon="fixed_rounds", iteration="4 rounds",
        skills=("deception", "negotiation", "probabilistic"), outcome=MEDIAN, max_steps=400,
        description=f"Four merchants take turns as the Sheriff of Nottingham, one round each. {ROUND_RULES}")
    config_defaults = {"rounds": 4}

    config_ranges = {"rounds": (1, None)}

    # ------------------------------------------------------------------ roles of the round
    def sheriff(self, state) -> str:
        return sheriff_of_round(state, state.round)

    def merchants(self, state) -> list[str]:
        sheriff = self.sheriff(state)
        return [a for a in state.agents if a != sheriff]

    def undecided(self, state) -> list[str]:
        return [a for a in self.merchants(state) if a not in state.g.decided]

    # ------------------------------------------------------------------ phases
    def phases(self):
        return [
            Phase("pack", actors=self.merchants, simultaneous=True, resolve=self._packed,
                  grammar=lambda s, a: [ActionSpec(HONEST, help="legal goods only"),
                                        ActionSpec(SMUGGLE, help="hide contraband in the bag")],
                  fallback=HONEST, instructions=self._pack_instructions),
            talk_phase("negotiate", lambda s: s.goto("inspect"), actors=rotating_from(self.sheriff),
                       instructions="Speak once: offers, promises, threats or bluffs (talk only)."),
            Phase("inspect", actors=lambda s: [self.sheriff(s)] if self.undecided(s) else [],
                  grammar=self._inspect_specs, resolve=self._decided, fallback=self._inspect_fallback,
                  instructions=self._inspect_instructions),
        ]

    def setup(self, state):
        state.g.packed = {}          # this round: merchant -> honest/smuggle (private)
        state.g.decided = {}         # this round: merchant -> inspect/pass
        state.g.log = []             # public decision log
        state.g.own_history = {a: [] for a in state.agents}   # private: (round, packed, decision, delta)
        state.round = 1
        state.announce(f"The game starts: {self.config['rounds']} rounds; the sheriff rotates.")
        self._start_round(state)

    def _start_round(self, state):
        state.g.packed, state.g.decided = {}, {}
        state.goto("pack")
        state.announce(f"Round {state.round}: {state.name(self.sheriff(state))} is the sheriff; merchants: "
                       f"{state.names(self.merchants(state))}.")

    def _pack_instructions(self, state, agent):
        return (f"Round {state.round}: pack your bag privately. {state.name(self.sheriff(state))} is the "
                f"sheriff.")

    def _packed(self, state, actions):
        for agent in self.merchants(state):
            packed = actions[agent].type
            state.g.packed[agent] = packed
            state.tell(agent, f"You packed {_contents(packed)} this round (only you know this).")
        state.announce("All bags are packed.")
        state.goto("negotiate")

    def _inspect_specs(self, state, agent):
        targets = self.undecided(state)
        return [ActionSpec(INSPECT, (player_arg(state, targets),), help="open this merchant's bag"),
                ActionSpec(PASS, (player_arg(state, targets),), help="let this merchant's bag through")]

    def _inspect_fallback(self, state, agent):
        return f"{PASS} {self.undecided(state)[0]}"

    def _inspect_instructions(self, state, agent):
        return (f"Decide one merchant at a time (inspect NAME or pass NAME). Still to decide: "
                f"{state.names(self.undecided(state))}.")

    def _decided(self, state, actions):
        (sheriff, action), = actions.items()
        merchant, decision = action.arg, action.type
        packed = state.g.packed[merchant]
        gain, sheriff_gain = bag_payoff(packed, decision)
        state.g.decided[merchant] = decision
        state.scores[merchant] += gain
        state.scores[sheriff] += sheriff_gain
        state.g.own_history[merchant].append({"round": state.round, "packed": packed, "decision": decision,
                                              "points": gain})
        entry = {"round": state.round, "sheriff": sheriff, "merchant": merchant, "decision": decision,
                 "contents": None, "merchant_points": None, "sheriff_points": sheriff_gain}
        if decision == INSPECT:
            entry["contents"], entry["merchant_points"] = packed, gain
            state.announce(f"Sheriff {state.name(sheriff)} inspects {state.name(merchant)}'s bag: "
                           f"{_contents(packed)}. {state.name(merchant)} {_pts(gain)}, "
                           f"{state.name(sheriff)} {_pts(sheriff_gain)}.")
        else:
            state.announce(f"Sheriff {state.name(sheriff)} lets {state.name(merchant)}'s bag pass unopened.")
            state.tell(merchant, f"Your bag passed: {_contents(packed)}, you earn {_pts(gain)}.")
        state.g.log.append(entry)
        if self.undecided(state):
            state.goto("inspect")
            return
        if state.round >= self.config["rounds"]:
            totals = ", ".join(f"{state.name(a)} {_pts(state.scores[a])}" for a in state.agents)
            state.finish(f"after {state.round} rounds the totals are {totals}")
            return
        state.round += 1
        self._start_round(state)

    def on_truncation(self, state):
        state.finish("turn cap reached: draw", rewards={a: 0.0 for a in state.agents}, truncated=True)

    # ------------------------------------------------------------------ text
    def description(self, state):
        rounds = self.config["rounds"]
        if rounds == self.num_players:          # each merchant is the sheriff once: the default's text
            return self.info.description
        return (f"Four merchants play {rounds} rounds; the Sheriff of Nottingham is a different merchant each "
                f"round, in turn. {ROUND_RULES}")

    def goal(self, state, agent):
        return "End with a total above the group median (median split)."

    def secret(self, state, agent):
        lines = [f"Your total so far: {_pts(state.scores[agent])} (other players' totals are not "
                 f"shown: passed bags stay hidden)."]
        if agent in state.g.packed:
            lines.insert(0, f"This round you packed {_contents(state.g.packed[agent])}.")
        return lines

    def status(self, state, agent):
        role = "the sheriff" if agent == self.sheriff(state) else "a merchant"
        return [f"Round {state.round} of {self.config['rounds']}; sheriff: {state.name(self.sheriff(state))} "
                f"(you are {role})."]

    def public_data(self, state, agent):
        return {"round": state.round, "rounds": self.config["rounds"], "sheriff": self.sheriff(state),
                "merchants": self.merchants(state), "undecided": self.undecided(state),
                "decisions": [dict(e) for e in state.g.log],
                "my_packed": state.g.packed.get(agent),
                "my_history": [dict(h) for h in state.g.own_history[agent]],
                "my_score": state.scores[agent]}

    def metrics(self, state):
        bags = [h for hist in state.g.own_history.values() for h in hist]
        n = len(bags) or 1
        return {"smuggle_rate": sum(h["packed"] == SMUGGLE for h in bags) / n,
                "inspect_rate": sum(h["decision"] == INSPECT for h in bags) / n}


GAME = SheriffOfNottingham
