"""Colonel Blotto — 2 players (2–6), 1 round: a simultaneous split of 10 troops over 3 battlefields.

Create: ``socialgym_env.make("colonel_blotto", troops=10, fields=3, rounds=1, talk_rounds=0)``
(``num_players`` 2–6, default 2; ``troops`` 1–100; ``fields`` 2–10; ``rounds`` 1–20;
``talk_rounds`` 0–5).

Every player commands the same number of troops (``troops``) and splits them, blind and at the
same time as everyone else, over ``fields`` battlefields numbered 1 to ``fields``.

| Phase    | Who                                    | Actions                                      |
|----------|----------------------------------------|----------------------------------------------|
| talk     | every player in seat order, one message each; ``talk_rounds`` times before each allocation (none by default) | ``say TEXT`` / ``pass`` |
| allocate | every player, simultaneous             | ``allocate N1 N2 … Nf``: one whole number ≥ 0 per field, in field order, summing to exactly ``troops`` |

Resolution of an allocation round: each battlefield goes to the player who put the strictly
largest number of troops on it; a tie for the largest number gives that field to nobody. Every
allocation is then revealed to all, with the owner of each field and the fields each player won.
A player's score is the number of fields it won, summed over the rounds. With ``rounds`` > 1
the troops are whole again for every round (nothing carries over but the score).

Observation: the rules, the round, every revealed round and the fields won so far; a player
never sees another's allocation of the current round before all are in (the talk is public).
``infos[agent]["game_state"]`` (``public_data``): ``troops``, ``fields``, ``round``, ``rounds``,
``history`` (per revealed round: ``allocations`` by agent id and ``field_winners``, an agent id or
None per field) and ``fields_won`` (the scores).

End: after ``rounds`` allocation rounds. Reward (winner-take-all): the players with the most
fields won (all of them, if several tie at the top) +1, everyone else −1; when every player has
the same number of fields the game is a draw (0 each). With two players this is +1 / −1 / 0 by
the fields won. ``infos[agent]["score"]`` holds the fields won. Turn cap: 1000 decisions, a
safety net far above the ``rounds × (talk_rounds + 1) × players`` decisions the rules need;
reaching it is a truncation scored as a draw (the winner-take-all rule with no winner yet).
Invalid action fallback: in ``allocate``, a random legal allocation (the env's RNG: random cut
points over the troops); in ``talk``, ``pass``.

Choices where the sources are silent: the published game (Borel, 1921) is one simultaneous
allocation of two players; several players, several rounds and talk are options (the
acceptance rules' option of messages before every allocation). Scoring several players and
ties follows OpenSpiel's ``blotto`` (a field tie goes to nobody; the players with most fields
win, all tied is a draw): OpenSpiel splits its zero-sum returns (each winner +1/w, each loser
−1/(n−w) with w winners), whose signs are this game's rewards, and with two players the
returns are equal (``tests/games/test_colonel_blotto.py`` checks every joint allocation of
small configurations against ``pyspiel.load_game("blotto")``). The legal actions are listed
(``legal_action_list``, the masked view) when at most 5,000 number combinations need checking
(3 fields up to 16 troops); larger configurations give the grammar and JSON schema only.

Version history: v0 initial.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from ..actions import ActionSpec, Int, cached_spec
from ..game import Game, GameInfo, Phase, WINNER_TAKE_ALL
from ..patterns import everyone, random_split, talk_phase
from ..state import State


# ------------------------------------------------------------------ pure rules
def allocation_reason(values: Sequence[int], troops: int) -> Optional[str]:
    """Why an allocation is illegal (None when it is legal): its numbers must sum to ``troops``."""
    total = sum(values)
    return None if total == troops else f"the troops must sum to {troops} (got {total})"


def field_winners(allocations: dict) -> list:
    """Per field, the agent with the strictly largest number of troops on it, or None on a tie
    for the largest. ``allocations``: ``{agent: (n1, n2, ...)}``."""
    owners = []
    for column in zip(*allocations.values()):
        top = max(column)
        holders = [agent for agent, troops in zip(allocations, column) if troops == top]
        owners.append(holders[0] if len(holders) == 1 else None)
    return owners


def fields_won(owners: Sequence, agents: Sequence[str]) -> dict:
    return {agent: sum(owner == agent for owner in owners) for agent in agents}


def blotto_winners(won: dict) -> list:
    """The agents with the most fields; nobody when every agent has the same number (a draw)."""
    top = max(won.values())
    leaders = [agent for agent, count in won.items() if count == top]
    return [] if len(leaders) == len(won) else leaders


def _allocation_spec(troops: int, fields: int) -> ActionSpec:
    return ActionSpec("allocate", (Int(0, troops, name="N"),), repeat=fields,
                      check=lambda values: allocation_reason(values, troops),
                      sampler=lambda rng: random_split(rng, fields, troops), schema_extra={"x-sum": troops},
                      help=f"troops on fields 1 to {fields} in order, whole numbers summing to {troops}")


def _numbers(values) -> str:
    return " ".join(str(v) for v in values)


class ColonelBlotto(Game):
    info = GameInfo(
        id="colonel_blotto", name="Colonel Blotto", category="normal_form", num_players=2,
        information="complete", communication="none", horizon="single_round", iteration="1 round",
        skills=("strategic", "probabilistic"), outcome=WINNER_TAKE_ALL, max_steps=1000, simultaneous=True,
        description="Colonel Blotto: split your troops over the battlefields at the same time as everyone else.")
    config_defaults = {"troops": 10, "fields": 3, "rounds": 1, "talk_rounds": 0}
    config_ranges = {"troops": (1, 100), "fields": (2, 10), "rounds": (1, 20), "talk_rounds": (0, 5)}
    player_counts = (2, 3, 4, 5, 6)

    def __init__(self, config: dict):
        if config.get("talk_rounds"):
            # talk turns are sequential: this configuration is not a simultaneous-move game
            self.info = replace(type(self).info, simultaneous=False, communication="free_form")
        super().__init__(config)

    # ------------------------------------------------------------------ flow
    def phases(self):
        phases = [Phase("allocate", actors=everyone, simultaneous=True, grammar=self._allocation_specs,
                        resolve=self._resolve_round, fallback="random", instructions=self._instructions)]
        if self.config.get("talk_rounds"):
            phases.append(talk_phase("talk", self._after_talk, instructions=self._talk_instructions))
        return phases

    def setup(self, state: State) -> None:
        g = state.g
        g.history = []
        g.talk_round = 0
        state.round = 1
        c = self.config
        state.announce(f"The game starts: {c['rounds']} round(s); every player splits {c['troops']} troops "
                       f"over {c['fields']} battlefields.")
        self._start_round(state)

    def _start_round(self, state: State) -> None:
        state.g.talk_round = 1
        state.goto("talk" if self.config["talk_rounds"] else "allocate")

    def _after_talk(self, state: State) -> None:
        if state.g.talk_round < self.config["talk_rounds"]:
            state.g.talk_round += 1
            state.goto("talk")
        else:
            state.goto("allocate")

    def _allocation_specs(self, state: State, agent: str):
        troops, fields = self.config["troops"], self.config["fields"]
        return [cached_spec(("colonel_blotto", "allocate", troops, fields), lambda: _allocation_spec(troops, fields))]

    def _instructions(self, state: State, agent: str) -> str:
        c = self.config
        return (f"Round {state.round} of {c['rounds']}: allocate your {c['troops']} troops over the "
                f"{c['fields']} battlefields (one number per field, in order, summing to {c['troops']}).")

    def _talk_instructions(self, state: State, agent: str) -> str:
        return (f"Round {state.round}, talk {state.g.talk_round} of {self.config['talk_rounds']}: say one "
                f"public message before the allocation, or pass.")

    def _resolve_round(self, state: State, actions: dict) -> None:
        agents = state.agents
        allocations = {a: tuple(actions[a].values) for a in agents}
        owners = field_winners(allocations)
        won = fields_won(owners, agents)
        for agent in agents:
            state.scores[agent] += won[agent]
        state.g.history.append({"allocations": {a: list(allocations[a]) for a in agents},
                                "field_winners": owners})
        shown = ", ".join(f"{state.name(a)}: {_numbers(allocations[a])}" for a in agents)
        fields = ", ".join(f"{i}: {state.name(o) if o else 'nobody (tie)'}" for i, o in enumerate(owners, 1))
        counts = ", ".join(f"{state.name(a)} {won[a]}" for a in agents)
        state.announce(f"Round {state.round} allocations - {shown}. Battlefields - {fields}. "
                       f"Fields won this round - {counts}.")
        if state.round < self.config["rounds"]:
            state.round += 1
            self._start_round(state)
            return
        totals = {a: int(state.scores[a]) for a in agents}
        winners = blotto_winners(totals)
        standing = ", ".join(f"{state.name(a)} {totals[a]}" for a in agents)
        verdict = f"most fields: {state.names(winners)}" if winners else "every player won as many fields: a draw"
        state.finish(f"fields won - {standing}; {verdict}", winners=winners)

    # ------------------------------------------------------------------ text hooks
    def description(self, state: State) -> str:
        c = self.config
        text = (f"Colonel Blotto: {len(state.agents)} players. In each of {c['rounds']} round(s) every player "
                f"splits {c['troops']} troops over {c['fields']} battlefields, secretly and at the same time: "
                f"'allocate' followed by one whole number (0 or more) per battlefield, in order, summing to "
                f"{c['troops']}. A battlefield goes to the player with strictly the most troops on it; a tie "
                f"for the most gives it to nobody. Then all allocations are revealed. Your score is the "
                f"number of battlefields you won over all rounds; the players with the most win, and if "
                f"every player has the same number it is a draw. ")
        if c["talk_rounds"]:
            text += (f"Before every allocation there are {c['talk_rounds']} round(s) of public talk, one "
                     f"message each.")
        else:
            text += f"There is no talk ({c['talk_rounds']} talk rounds)."
        return text

    def goal(self, state: State, agent: str) -> str:
        return "Win more battlefields than every other player."

    def status(self, state: State, agent: str) -> list[str]:
        won = ", ".join(f"{state.name(a)} {state.scores[a]:g}" for a in state.agents)
        return [f"Round {state.round} of {self.config['rounds']}. Battlefields won so far: {won}."]

    def public_data(self, state: State, agent: str) -> dict:
        c = self.config
        return {"troops": c["troops"], "fields": c["fields"], "round": state.round, "rounds": c["rounds"],
                "history": [{"allocations": {a: list(v) for a, v in r["allocations"].items()},
                             "field_winners": list(r["field_winners"])} for r in state.g.history],
                "fields_won": dict(state.scores)}


GAME = ColonelBlotto
