"""Dead Last — 6 players, no roles; point others out, then split the loot by identical offers.

Create: ``socialgym_env.make("dead_last", max_point_rounds=10)``

| Phase              | Who                                  | Actions                                   |
|--------------------|--------------------------------------|-------------------------------------------|
| discussion         | live players, one message each, round-robin; the first speaker rotates | ``say TEXT`` / ``pass`` |
| point              | live players, simultaneous            | ``point NAME`` (a live player, not oneself) |
| final_negotiation  | survivors, one message each           | ``say TEXT`` / ``pass``                    |
| final_offer        | survivors, simultaneous, private      | ``offer a b c …`` (one share per survivor)  |

Point: a player pointed at by a strict majority of the live players (more than half of them,
e.g. 4 of 6, 3 of 5, 3 of 4) is eliminated; otherwise nobody goes. All pointings are revealed
after the point phase. When 3 players are left, or after ``max_point_rounds`` (10) point
rounds, the survivors negotiate (one message each) and then make their final offers.

Final offer: ``offer a b c`` gives shares of 100 to the survivors **in seat order** (the order
is stated in the prompt), one integer 0–100 per survivor, summing to exactly 100; otherwise the
action is invalid with the reason ``shares must sum to 100 (got N)``. Offers are secret until
all are in, then revealed. Identical offers → each survivor scores its share / 100; any
mismatch → every survivor scores 0. Eliminated players score −1.

Reward: −1 for the eliminated; if a deal was struck, +1 for the survivor(s) with
the largest share and 0 for the other survivors; no deal, 0 for every survivor. So the final
deal matters (a median split would give every survivor +1 whatever the offers). The tournament
compares Dead Last pairs by score (``GameInfo.rank_by="score"``): a larger share beats a smaller.

Invalid-action fallbacks: talk → ``pass``; point → a random legal target (env RNG);
offer → a random valid split drawn with the env RNG. Turn cap: 300 steps (the structure needs
at most 132); reaching it scores survivors 0 and the eliminated −1 (no deal).
Version history: v0 initial.
"""
from ..actions import ActionSpec, Int
from ..game import CUSTOM, Game, GameInfo, Phase
from ..patterns import everyone, player_arg, rotating_from, strict_majority, talk_phase
from ..patterns import random_split as split_total

FINAL_SIZE = 3
TOTAL = 100


def offer_scores(agents, survivors, offers: dict) -> dict:
    """Scores from ``{survivor: tuple of shares in survivor (seat) order}``."""
    shares = set(offers.values())
    identical = len(shares) == 1
    deal = next(iter(shares)) if identical else None
    scores = {}
    for a in agents:
        if a not in survivors:
            scores[a] = -1.0
        elif identical:
            scores[a] = deal[survivors.index(a)] / TOTAL
        else:
            scores[a] = 0.0
    return scores


def deal_rewards(agents, survivors, scores: dict, deal: bool) -> dict:
    """The Dead Last rewards: eliminated -1; with a deal the largest share(s) +1, other survivors 0."""
    best = max(scores[a] for a in survivors) if deal else None
    return {a: (-1.0 if a not in survivors else 1.0 if deal and scores[a] == best else 0.0) for a in agents}


def shares_reason(values) -> str | None:
    total = sum(values)
    return None if total == TOTAL else f"shares must sum to {TOTAL} (got {total})"


def random_split(rng, k: int) -> tuple:
    return split_total(rng, k, TOTAL)


def first_speaker(state) -> str:
    seat = state.agents[(state.round - 1) % len(state.agents)]
    return seat if state.seat[seat].alive else state.next_alive(seat)


class DeadLast(Game):
    info = GameInfo(
        id="dead_last", name="Dead Last", category="social_strategy", num_players=6,
        information="complete", communication="free_form", horizon="open_ended",
        iteration="until 3 remain or 10 point rounds",
        skills=("negotiation", "persuasion", "tom"), outcome=CUSTOM, rank_by="score", max_steps=300,
        description=("Six players, no roles. Each round everyone still in speaks once, then all point "
                     "at the same time at one other player. A player pointed at by more than half of "
                     "the live players is eliminated (otherwise nobody goes). When three remain, or "
                     "after {max_point_rounds} point rounds, the survivors talk once more and then each secretly offers "
                     "a split of 100 among the survivors. If all offers are identical, each survivor "
                     "scores its share / 100; otherwise every survivor scores 0. Eliminated players "
                     "score −1. Scores above the median win, below it lose."))
    config_defaults = {"max_point_rounds": 10}

    config_ranges = {"max_point_rounds": (1, None)}

    def phases(self):
        return [
            talk_phase("discussion", lambda s: s.goto("point"), actors=rotating_from(first_speaker),
                       instructions="Say one message to the group, or pass."),
            Phase("point", actors=everyone, simultaneous=True, resolve=self._pointed,
                  grammar=lambda s, a: [ActionSpec("point", (player_arg(s, s.others(a)),),
                                                   help="point at the player you want out")],
                  instructions=self._point_instructions),
            talk_phase("final_negotiation", lambda s: s.goto("final_offer"), actors=everyone,
                       instructions="Final negotiation: one message about how to split the 100."),
            Phase("final_offer", actors=everyone, simultaneous=True, resolve=self._offered,
                  grammar=self._offer_specs, instructions=self._offer_instructions),
        ]

    def setup(self, state):
        state.g.point_rounds = 0
        state.g.history = []
        state.g.survivors = []
        state.g.offers = {}
        state.round = 1
        state.announce(f"The game starts. Round 1: {state.names(state.alive())} are in.")
        state.goto("discussion")

    # ------------------------------------------------------------------ point
    def _point_instructions(self, state, agent):
        need = len(state.alive()) // 2 + 1
        return (f"Point round {state.g.point_rounds + 1} of at most {self.config['max_point_rounds']}: "
                f"point at one other player; {need} of {len(state.alive())} pointing at the same player "
                f"eliminates them.")

    def _pointed(self, state, actions):
        alive = state.alive()
        points = {a: actions[a].arg for a in alive}
        state.g.point_rounds += 1
        state.g.history.append(dict(points))
        state.announce(f"Point round {state.g.point_rounds}: " +
                       "; ".join(f"{state.name(a)} → {state.name(t)}" for a, t in points.items()) + ".")
        target = strict_majority(points, len(alive))
        need = len(alive) // 2 + 1
        if target is None:
            state.announce(f"No strict majority (needs {need} of {len(alive)}): nobody is eliminated.")
        else:
            state.eliminate(target)
            state.announce(f"{state.name(target)} is eliminated.")
        if len(state.alive()) <= FINAL_SIZE or state.g.point_rounds >= self.config["max_point_rounds"]:
            state.g.survivors = state.alive()
            state.announce(f"Final: the survivors are {state.names(state.g.survivors)} (offers list shares in "
                           f"this order). Each says one message, then offers a split of {TOTAL}.")
            state.goto("final_negotiation")
            return
        state.round += 1
        state.goto("discussion")
        state.announce(f"Round {state.round}: {state.names(state.alive())} remain.")

    # ------------------------------------------------------------------ final offer
    def _offer_specs(self, state, agent):
        k = len(state.g.survivors)
        return [ActionSpec("offer", (Int(0, TOTAL, name="SHARE"),), repeat=k, check=shares_reason,
                           sampler=lambda rng: random_split(rng, k), schema_extra={"x-sum": TOTAL},
                           help=f"shares of {TOTAL} for {state.names(state.g.survivors)} in this order, "
                                f"summing to {TOTAL}")]

    def _offer_instructions(self, state, agent):
        return (f"Offer a split of {TOTAL}, privately: one share each for {state.names(state.g.survivors)} "
                f"(in this order), summing to {TOTAL}. Only identical offers pay.")

    def _offered(self, state, actions):
        survivors = state.g.survivors
        offers = {a: tuple(actions[a].values) for a in survivors}
        state.g.offers = offers
        state.announce("Final offers (" + ", ".join(state.name(a) for a in survivors) + "): " +
                       "; ".join(f"{state.name(a)} → {' '.join(map(str, o))}" for a, o in offers.items()) + ".")
        scores = offer_scores(state.agents, survivors, offers)
        deal = len(set(offers.values())) == 1
        if deal:
            reason = "identical offers: " + ", ".join(f"{state.name(a)} {scores[a]:.2f}" for a in survivors)
        else:
            reason = "the offers differ: every survivor scores 0"
        state.finish(reason + "; the eliminated score −1", scores=scores,
                     rewards=deal_rewards(state.agents, survivors, scores, deal))

    def on_truncation(self, state):
        survivors = state.alive()
        scores = {a: (0.0 if a in survivors else -1.0) for a in state.agents}
        state.finish("turn cap reached: no deal", scores=scores, truncated=True,
                     rewards=deal_rewards(state.agents, survivors, scores, deal=False))

    # ------------------------------------------------------------------ text
    def goal(self, state, agent):
        return ("Survive to the final and agree on an identical split that gives you a large share; "
                "eliminated players score −1. Beat the median score.")

    def status(self, state, agent):
        lines = [f"Round {state.round}; point rounds so far: {state.g.point_rounds} of at most "
                 f"{self.config['max_point_rounds']}; in the game: {state.names(state.alive())}."]
        if state.g.survivors:
            lines.append(f"Survivors in offer order: {state.names(state.g.survivors)}.")
        return lines

    def public_data(self, state, agent):
        talk = [{"round": m.round, "phase": m.phase, "speaker": m.sender, "text": m.text}
                for m in state.messages if m.sender is not None and agent in m.receivers]
        return {"round": state.round, "point_rounds": state.g.point_rounds, "alive": state.alive(),
                "survivors": list(state.g.survivors), "names": {a: state.name(a) for a in state.agents},
                "points": [dict(h) for h in state.g.history], "talk": talk}

    def metrics(self, state):
        offers = state.g.offers
        return {"point_rounds": state.g.point_rounds, "survivors": len(state.g.survivors),
                "deal": bool(offers) and len(set(offers.values())) == 1}


GAME = DeadLast
