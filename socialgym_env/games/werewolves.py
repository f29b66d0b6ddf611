"""Werewolves — 6 players: 2 Werewolves vs the village (Seer, Witch, 2 Villagers).

Create: ``socialgym_env.make("werewolves", max_cycles=10)``

The game starts at night. Each cycle is one night then one day (``round`` = cycle number).

| Phase      | Who                          | Actions                                                   |
|------------|------------------------------|-----------------------------------------------------------|
| night_talk | live Werewolves, in seat order | ``say MESSAGE`` / ``pass`` — team-only                    |
| wolf_kill  | live Werewolves (simultaneous) | ``kill NAME`` (a live non-Werewolf); plurality, tie → env RNG; tally and tie told to the Werewolves only |
| seer       | the Seer (if alive)          | ``inspect NAME`` (a live other player); private answer: a Werewolf or not |
| witch      | the Witch (if alive)         | told the victim privately first; ``save`` (once per game), ``poison NAME`` (once per game), ``pass`` — at most one potion a night |
| day_talk   | everyone alive, round-robin  | ``say MESSAGE`` / ``pass`` (one message each, public; the first speaker rotates each day) |
| day_vote   | everyone alive (simultaneous) | ``vote NAME`` (a live other player) / ``abstain``; plurality, tie → nobody; the votes are shown, the exiled player's role is NOT revealed |

Deaths of the night are announced at dawn (roles not revealed). The Witch may save herself.

Ending (checked after the night's deaths and after each exile): no Werewolf alive → the
village (Seer, Witch, Villagers) wins; live Werewolves ≥ live village team → the Werewolves
win. After ``max_cycles`` (10) complete day–night cycles the game is a draw (truncation); the
engine turn cap ``max_steps`` (1000) is scored the same way.

Observation: public board; Werewolves also see the team-only night talk and kill tally; the
Seer sees its results; the Witch sees the victim. ``public_data``: alive players, deaths,
exiles, day votes, plus the seat's own private facts (``werewolves`` for a Werewolf,
``inspections`` for the Seer, ``victim``/potions for the Witch).

Reward (team): winners +1, losers −1; a draw gives everyone 0. Invalid-action fallbacks:
talk ``pass``, kill/inspect a random legal target, witch ``pass``, day vote ``abstain``.

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec
from ..game import TEAM, Game, GameInfo, Phase
from ..patterns import (everyone, player_arg, plurality, role_actors, rotating_from, talk_phase,
                        team_plurality, vote_specs, vote_values)
from ..state import State

WEREWOLF, SEER, WITCH, VILLAGER = "Werewolf", "Seer", "Witch", "Villager"
TEAM_WOLVES, TEAM_VILLAGE = "werewolves", "village"


# ------------------------------------------------------------------ pure rules
def winner(state: State):
    """The winning team now, or None: no live Werewolf → village; live Werewolves ≥ live
    village team → Werewolves."""
    wolves = len(state.on_team(TEAM_WOLVES))
    village = len(state.on_team(TEAM_VILLAGE))
    if wolves == 0:
        return TEAM_VILLAGE
    if wolves >= village:
        return TEAM_WOLVES
    return None


def finish_if_decided(state: State, village_wins: str, wolves_win: str) -> bool:
    """End the game with the reason text of the winning side if :func:`winner` says so."""
    team = winner(state)
    if team is not None:
        state.finish(village_wins if team == TEAM_VILLAGE else wolves_win,
                     winners=state.on_team(team, alive_only=False))
    return team is not None


def night_deaths(victim, saved: bool, poisoned) -> list:
    """Who dies at dawn: the wolves' victim unless saved, plus the poisoned player."""
    deaths = []
    if victim is not None and not saved:
        deaths.append(victim)
    if poisoned is not None and poisoned not in deaths:
        deaths.append(poisoned)
    return deaths


class Werewolves(Game):
    info = GameInfo(
        id="werewolves", name="Werewolves", category="hidden_role", num_players=6,
        information="hidden_roles", communication="free_form", horizon="open_ended",
        iteration="until one side is eliminated (cap 10 day-night cycles)",
        skills=("strategic", "deception", "tom"), outcome=TEAM, max_steps=1000,
        roles=((WEREWOLF, 2, TEAM_WOLVES), (SEER, 1, TEAM_VILLAGE), (WITCH, 1, TEAM_VILLAGE),
               (VILLAGER, 2, TEAM_VILLAGE)),
        main_role=VILLAGER, alt_role=WEREWOLF,
        description=("Six players: 2 Werewolves (who know each other) against the village: a Seer, a "
                     "Witch and 2 Villagers. At night the Werewolves talk in secret and vote whom to "
                     "kill; the Seer learns whether one player is a Werewolf; the Witch learns the "
                     "victim and may save them (once per game) or poison someone (once per game), at "
                     "most one potion a night. By day the night's deaths are announced, everyone "
                     "speaks once, then everyone votes; the player with the most votes is exiled (a "
                     "tie exiles nobody) and their role is not revealed. The village wins when no "
                     "Werewolf is alive; the Werewolves win when they are at least as many as the "
                     "rest. After {max_cycles} day-night cycles the game is a draw."))
    config_defaults = {"max_cycles": 10}

    config_ranges = {"max_cycles": (1, None)}

    # -- flow -----------------------------------------------------------------------------
    def phases(self):
        return [
            talk_phase("night_talk", lambda s: s.goto("wolf_kill"), actors=role_actors(WEREWOLF),
                       visibility="team", team=TEAM_WOLVES,
                       instructions="Night: talk with your fellow Werewolves (only they hear you), or pass."),
            Phase("wolf_kill", actors=role_actors(WEREWOLF), simultaneous=True, resolve=self._killed,
                  grammar=lambda s, a: [ActionSpec("kill", (player_arg(s, s.on_team(TEAM_VILLAGE)),),
                                                   help="vote for tonight's victim")],
                  fallback="random", instructions="Night: vote for the player the Werewolves kill tonight."),
            Phase("seer", actors=role_actors(SEER), resolve=self._inspected,
                  grammar=lambda s, a: [ActionSpec("inspect", (player_arg(s, s.others(a)),),
                                                   help="learn whether this player is a Werewolf")],
                  fallback="random", instructions="Night: choose a player to inspect."),
            Phase("witch", actors=role_actors(WITCH), resolve=self._witched, grammar=self._witch_grammar,
                  fallback="pass", instructions=self._witch_instructions),
            talk_phase("day_talk", lambda s: s.goto("day_vote"),
                       actors=rotating_from(lambda s: s.alive()[(s.round - 1) % len(s.alive())]),
                       instructions="Day: say one message to everyone, or pass."),
            Phase("day_vote", actors=everyone, simultaneous=True, resolve=self._voted,
                  grammar=lambda s, a: vote_specs(s, a, s.others(a), allow_abstain=True,
                                                  help="exile this player"),
                  fallback="abstain", instructions="Day: vote to exile a player, or abstain."),
        ]

    def setup(self, state: State) -> None:
        g = state.g
        g.victim = None
        g.save_used = False
        g.poison_used = False
        g.inspections = {}     # target -> is a Werewolf (the Seer's knowledge)
        g.deaths = []          # {"cycle", "agents"}
        g.exiles = []          # {"cycle", "agent"} (agent None: nobody)
        g.day_votes = []       # {"cycle", "votes"}
        g.potions = []         # {"cycle", "potion", "target"} (private bookkeeping, for metrics)
        wolves = state.with_role(WEREWOLF)
        state.tell_team(TEAM_WOLVES, f"The Werewolves are {state.names(wolves)}.")
        state.round = 1
        self._start_night(state)

    def _start_night(self, state):
        state.g.victim = None
        state.goto("night_talk")
        state.announce(f"Night {state.round} falls. Everyone closes their eyes.")

    def _killed(self, state, actions):
        votes = vote_values(actions, "kill")
        victim = team_plurality(state, votes, TEAM_WOLVES, tie="rng", label="Kill votes")
        state.g.victim = victim
        state.tell_team(TEAM_WOLVES, f"The Werewolves attack {state.name(victim)} tonight.")
        state.goto("seer")

    def _inspected(self, state, actions):
        for seer, action in actions.items():
            target = action.arg
            is_wolf = state.role(target) == WEREWOLF
            state.g.inspections[target] = is_wolf
            state.tell(seer, f"{state.name(target)} is {'a Werewolf' if is_wolf else 'not a Werewolf'}.")
        for witch in state.with_role(WITCH):
            state.tell(witch, f"Tonight the Werewolves attacked {state.name(state.g.victim)}.")
        state.goto("witch")

    def _witch_grammar(self, state, agent):
        specs = []
        if not state.g.save_used:
            specs.append(ActionSpec("save", help=f"save {state.name(state.g.victim)} (once per game)"))
        if not state.g.poison_used:
            specs.append(ActionSpec("poison", (player_arg(state, state.others(agent)),),
                                    help="kill this player too (once per game)"))
        specs.append(ActionSpec("pass", help="use no potion tonight"))
        return specs

    def _witch_instructions(self, state, agent):
        left = [p for p, used in (("save", state.g.save_used), ("poison", state.g.poison_used)) if not used]
        return (f"Night: the Werewolves attacked {state.name(state.g.victim)}. Potions left: "
                f"{', '.join(left) or 'none'}. At most one potion a night.")

    def _witched(self, state, actions):
        g = state.g
        saved, poisoned = False, None
        for witch, action in actions.items():
            if action.type == "save":
                g.save_used, saved = True, True
                g.potions.append({"cycle": state.round, "potion": "save", "target": g.victim})
            elif action.type == "poison":
                g.poison_used, poisoned = True, action.arg
                g.potions.append({"cycle": state.round, "potion": "poison", "target": poisoned})
        deaths = sorted(night_deaths(g.victim, saved, poisoned), key=lambda a: state.seat[a].index)
        for agent in deaths:
            state.eliminate(agent)
        g.deaths.append({"cycle": state.round, "agents": deaths})
        if deaths:
            verb = "was" if len(deaths) == 1 else "were"
            state.announce(f"Day {state.round} dawns: {' and '.join(state.name(a) for a in deaths)} "
                           f"{verb} found dead.")
        else:
            state.announce(f"Day {state.round} dawns: nobody died during the night.")
        if not self._check_end(state):
            state.goto("day_talk")

    def _voted(self, state, actions):
        g = state.g
        votes = vote_values(actions)
        g.day_votes.append({"cycle": state.round, "votes": dict(votes)})
        exiled = plurality(state, votes, tie="none", label="Votes")
        g.exiles.append({"cycle": state.round, "agent": exiled})
        if exiled is None:
            state.announce("Nobody is exiled today.")
        else:
            state.eliminate(exiled)
            state.announce(f"{state.name(exiled)} is exiled. Their role is not revealed.")
        if self._check_end(state):
            return
        if state.round >= self.config["max_cycles"]:
            state.finish(f"{self.config['max_cycles']} day-night cycles played: draw", truncated=True)
            return
        state.round += 1
        self._start_night(state)

    def _check_end(self, state) -> bool:
        return finish_if_decided(state, village_wins="no Werewolf is alive: the village wins",
                                 wolves_win="the Werewolves are at least as many as the village: the Werewolves win")

    # -- text hooks -----------------------------------------------------------------------
    def goal(self, state, agent):
        if state.team(agent) == TEAM_WOLVES:
            return "Kill or exile village members until the Werewolves are at least as many as the rest."
        return "Find and exile both Werewolves."

    def secret(self, state, agent):
        role = state.role(agent)
        g = state.g
        if role == WEREWOLF:
            partner = [a for a in state.with_role(WEREWOLF, alive_only=False) if a != agent]
            return [f"You are a Werewolf. Your fellow Werewolf is {state.names(partner)}."]
        if role == SEER:
            lines = ["You are the Seer: each night you learn whether one player is a Werewolf."]
            lines += [f"{state.name(t)} is {'a Werewolf' if w else 'not a Werewolf'}." for t, w in g.inspections.items()]
            return lines
        if role == WITCH:
            left = [p for p, used in (("save", g.save_used), ("poison", g.poison_used)) if not used]
            return [f"You are the Witch. Potions left: {', '.join(left) or 'none'}."]
        return ["You are a Villager."]

    def status(self, state, agent):
        return [f"Cycle {state.round} of at most {self.config['max_cycles']}.",
                f"Alive: {state.names(state.alive())}."]

    def public_data(self, state, agent):
        g = state.g
        data = {"players": {seat.agent: seat.name for seat in state.seats}, "cycle": state.round,
                "alive": state.alive(), "deaths": [dict(d, agents=list(d["agents"])) for d in g.deaths],
                "exiles": [dict(e) for e in g.exiles],
                "day_votes": [dict(v, votes=dict(v["votes"])) for v in g.day_votes]}
        role = state.role(agent)
        if role == WEREWOLF:
            data["werewolves"] = state.with_role(WEREWOLF, alive_only=False)
            data["victim"] = g.victim
        elif role == SEER:
            data["inspections"] = dict(g.inspections)
        elif role == WITCH:
            data["victim"] = g.victim if state.phase == "witch" else None
            data["save_left"] = not g.save_used
            data["poison_left"] = not g.poison_used
        return data

    def metrics(self, state):
        g = state.g
        return {"cycles": state.round, "night_deaths": sum(len(d["agents"]) for d in g.deaths),
                "exiles": sum(1 for e in g.exiles if e["agent"]),
                "saves": sum(1 for p in g.potions if p["potion"] == "save"),
                "poisons": sum(1 for p in g.potions if p["potion"] == "poison"),
                "seer_inspections": len(g.inspections)}


GAME = Werewolves
