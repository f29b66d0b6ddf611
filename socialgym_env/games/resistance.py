"""The Resistance — 5 players: 3 Resistance vs 2 Spies (the Spies know each other).

Create: ``socialgym_env.make("resistance")``

Five missions with team sizes 2, 3, 2, 3, 3. The first leader is drawn with the env's RNG
(announced); the leadership passes to the next seat after every proposal. One proposal:

| Phase      | Who                         | Actions                                                  |
|------------|-----------------------------|----------------------------------------------------------|
| discussion | everyone, from the leader   | ``say MESSAGE`` / ``pass`` (one message each, public)     |
| proposal   | the leader                  | ``propose NAME1 … NAMEk`` — exactly the mission size, all different |
| vote       | everyone (simultaneous)     | ``approve`` / ``reject``; strict majority (3 of 5) approves; votes are shown |
| mission    | team members (simultaneous) | Resistance: ``success`` only; Spies: ``success`` / ``fail`` |

A rejected proposal goes back to ``discussion`` with the next leader. The mission result
shows only the number of fail cards (never who played them); any fail card fails it.

Ending: 3 successful missions → Resistance win; 3 failed missions, or 5 rejected proposals in
a row → Spies win. The approval of a proposal resets the rejection count.

Observation: the public board (discussion, proposals, votes, mission results) plus, for a
Spy, the team-only setup message naming both Spies. ``public_data``: missions, leader,
proposal history, results and — for a Spy only — ``known_spies``.

Reward (team): winners +1, losers −1. Turn cap ``max_steps`` = 1000 (the rules end every game
well before it; reaching it is a draw). Invalid-action fallbacks: discussion ``pass``,
proposal a random legal team, vote ``reject`` (an invalid vote is not an approval), mission
``success``.

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec
from ..game import TEAM, Game, GameInfo, Phase
from ..patterns import everyone, player_arg, rotating_from, talk_phase
from ..state import State

RESISTANCE, SPY = "Resistance", "Spy"
TEAM_RESISTANCE, TEAM_SPIES = "resistance", "spies"
TEAM_SIZES = (2, 3, 2, 3, 3)
MISSIONS_TO_WIN = 3
MAX_REJECTIONS = 5


# ------------------------------------------------------------------ pure rules
def mission_size(mission: int) -> int:
    """Team size of mission ``mission`` (1-based)."""
    return TEAM_SIZES[mission - 1]


def proposal_approved(votes: dict) -> bool:
    """Strict majority of ``{voter: "approve"/"reject"}`` approves."""
    approvals = sum(1 for v in votes.values() if v == "approve")
    return approvals >= len(votes) // 2 + 1


def mission_fails(cards: dict) -> int:
    """Number of fail cards among ``{member: "success"/"fail"}``."""
    return sum(1 for c in cards.values() if c == "fail")


def game_winner(successes: int, failures: int, rejections: int):
    """The winning team or None."""
    if successes >= MISSIONS_TO_WIN:
        return TEAM_RESISTANCE
    if failures >= MISSIONS_TO_WIN or rejections >= MAX_REJECTIONS:
        return TEAM_SPIES
    return None


class Resistance(Game):
    info = GameInfo(
        id="resistance", name="The Resistance", category="hidden_role", num_players=5,
        information="hidden_roles", communication="free_form", horizon="open_ended",
        iteration="3 successful or 3 failed missions", skills=("strategic", "deception", "tom"),
        outcome=TEAM, max_steps=1000,
        roles=((RESISTANCE, 3, TEAM_RESISTANCE), (SPY, 2, TEAM_SPIES)),
        main_role=RESISTANCE, alt_role=SPY,
        description=("Five players: 3 loyal Resistance members and 2 hidden Spies (the Spies know "
                     "each other). Five missions need teams of 2, 3, 2, 3, 3 players. Each proposal: "
                     "everyone speaks once, the leader proposes a team, everyone votes approve or "
                     "reject at the same time (a strict majority, 3 of 5, approves). On an approved "
                     "team each member secretly plays a success or a fail card (Resistance members "
                     "can only play success); only the number of fail cards is revealed, and one "
                     "fail card fails the mission. The leadership passes on after every proposal. "
                     "3 successful missions: the Resistance wins. 3 failed missions or 5 rejected "
                     "proposals in a row: the Spies win."))
    config_defaults: dict = {}

    # What the flow calls its missions, teams and winners: Avalon (a subclass) says quest, good, evil.
    MISSION = "mission"
    GOOD_TEAM, EVIL_TEAM = TEAM_RESISTANCE, TEAM_SPIES
    GOOD_LABEL, EVIL_LABEL = "Resistance", "Spies"          # the score line's names
    GOOD_WINS, EVIL_WINS = "the Resistance wins", "the Spies win"

    # -- rules a subclass changes ---------------------------------------------------------
    def team_sizes(self) -> tuple:
        """The team size of every mission, in order."""
        return TEAM_SIZES

    def fails_needed(self, mission: int) -> int:
        """How many fail cards fail mission ``mission``."""
        return 1

    def can_fail(self, state, agent) -> bool:
        return state.role(agent) == SPY

    def missions_succeeded(self, state) -> None:
        """Three missions succeeded: the game's last step."""
        state.finish(f"{MISSIONS_TO_WIN} {self.MISSION}s succeeded: {self.GOOD_WINS}",
                     winners=state.on_team(self.GOOD_TEAM, alive_only=False))

    def evil_wins(self, state, reason: str) -> None:
        state.finish(f"{reason}: {self.EVIL_WINS}", winners=state.on_team(self.EVIL_TEAM, alive_only=False))

    # -- flow -----------------------------------------------------------------------------
    def phases(self):
        return [
            talk_phase("discussion", lambda s: s.goto("proposal"),
                       actors=rotating_from(lambda s: s.g.leader),
                       instructions="Discuss the next mission team: say one message, or pass."),
            Phase("proposal", actors=lambda s: [s.g.leader], grammar=self._proposal_grammar,
                  resolve=self._proposed, fallback="random", instructions=self._proposal_instructions),
            Phase("vote", actors=everyone, simultaneous=True, resolve=self._voted,
                  grammar=lambda s, a: [ActionSpec("approve", help=f"send this team on the {self.MISSION}"),
                                        ActionSpec("reject", help="pass the leadership on")],
                  fallback="reject", instructions=self._vote_instructions),
            Phase(self.MISSION, actors=lambda s: list(s.g.team), simultaneous=True,
                  grammar=self._mission_grammar, resolve=self._mission_done, fallback="success",
                  instructions=f"Play your {self.MISSION} card in secret."),
        ]

    def setup(self, state: State) -> None:
        self.start_bookkeeping(state)
        spies = state.with_role(SPY)
        state.tell_team(TEAM_SPIES, f"The Spies are {state.names(spies)}. Fail missions without being caught.")
        self.first_leader(state)

    def start_bookkeeping(self, state: State) -> None:
        g = state.g
        g.mission = 1
        g.successes = 0
        g.failures = 0
        g.rejections = 0
        g.team = ()
        g.proposals = []      # {"mission", "leader", "team", "votes", "approved"}
        g.results = []        # {"mission", "team", "fails", "success"}
        state.round = 1

    def first_leader(self, state: State, opening: str = "The Resistance begins. Mission team sizes") -> None:
        """Draw the first leader, announce it with the team sizes, and start the first proposal."""
        state.g.leader = state.agents[state.rng.randrange(len(state.agents))]
        state.announce(f"{opening}: {', '.join(map(str, self.team_sizes()))}. "
                       f"The first leader, drawn at random, is {state.name(state.g.leader)}.")
        self._start_proposal(state)

    def _start_proposal(self, state: State) -> None:
        g = state.g
        state.goto("discussion")
        state.announce(f"{self.MISSION.capitalize()} {g.mission} (team of {self.team_size(g.mission)}), proposal "
                       f"{g.rejections + 1} of {MAX_REJECTIONS}: {state.name(g.leader)} leads.")

    def team_size(self, mission: int) -> int:
        return self.team_sizes()[mission - 1]

    def _proposal_grammar(self, state, agent):
        size = self.team_size(state.g.mission)
        return [ActionSpec("propose", (player_arg(state, state.agents),), repeat=size, distinct=True,
                           unordered=True, help=f"name exactly {size} different players for the mission")]

    def _proposal_instructions(self, state, agent):
        return (f"You lead: propose a team of exactly {self.team_size(state.g.mission)} players for "
                f"{self.MISSION} {state.g.mission}.")

    def _proposed(self, state, actions):
        (leader, action), = actions.items()
        team = tuple(sorted(action.values, key=lambda a: state.seat[a].index))
        state.g.team = team
        state.announce(f"{state.name(leader)} proposes the team {state.names(team)}.")
        state.goto("vote")

    def _vote_instructions(self, state, agent):
        return (f"Vote on {state.name(state.g.leader)}'s team {state.names(state.g.team)} "
                f"(rejected proposals in a row so far: {state.g.rejections}).")

    def _voted(self, state, actions):
        g = state.g
        votes = {a: actions[a].type for a in state.agents if a in actions}
        approved = proposal_approved(votes)
        approvals = sum(1 for v in votes.values() if v == "approve")
        cast = "; ".join(f"{state.name(a)} {v}" for a, v in votes.items())
        g.proposals.append({"mission": g.mission, "leader": g.leader, "team": list(g.team),
                            "votes": dict(votes), "approved": approved})
        state.announce(f"Votes: {cast}. {'Approved' if approved else 'Rejected'} ({approvals} of {len(votes)} approve).")
        if approved:
            g.rejections = 0
            state.goto(self.MISSION)
            return
        g.rejections += 1
        if game_winner(g.successes, g.failures, g.rejections) == TEAM_SPIES:
            self.evil_wins(state, f"{MAX_REJECTIONS} proposals in a row were rejected")
            return
        self._next_leader(state)
        self._start_proposal(state)

    def _next_leader(self, state):
        state.g.leader = state.next_alive(state.g.leader)

    def _mission_grammar(self, state, agent):
        specs = [ActionSpec("success", help=f"the {self.MISSION} succeeds as far as you are concerned")]
        if self.can_fail(state, agent):
            specs.append(ActionSpec("fail", help=f"sabotage the {self.MISSION}"))
        return specs

    def _mission_done(self, state, actions):
        g = state.g
        fails = mission_fails({a: act.type for a, act in actions.items()})
        success = fails < self.fails_needed(g.mission)
        g.results.append({"mission": g.mission, "team": list(g.team), "fails": fails, "success": success})
        if success:
            g.successes += 1
        else:
            g.failures += 1
        needed = self.fails_needed(g.mission)
        state.announce(f"{self.MISSION.capitalize()} {g.mission} ({state.names(g.team)}) "
                       f"{'succeeded' if success else 'failed'}: {fails} fail card{'s' if fails != 1 else ''}"
                       f"{f' ({needed} needed to fail it)' if needed > 1 else ''}. "
                       f"Score: {self.GOOD_LABEL} {g.successes}, {self.EVIL_LABEL} {g.failures}.")
        winner = game_winner(g.successes, g.failures, g.rejections)
        if winner == TEAM_RESISTANCE:
            self.missions_succeeded(state)
            return
        if winner == TEAM_SPIES:
            self.evil_wins(state, f"{MISSIONS_TO_WIN} {self.MISSION}s failed")
            return
        g.mission += 1
        state.round = g.mission
        g.team = ()
        self._next_leader(state)
        self._start_proposal(state)

    # -- text hooks -----------------------------------------------------------------------
    def goal(self, state, agent):
        if state.role(agent) == SPY:
            return "Make 3 missions fail (or get 5 proposals in a row rejected) without being caught."
        return "Make 3 missions succeed by keeping the Spies off the mission teams."

    def secret(self, state, agent):
        if state.role(agent) == SPY:
            partner = [a for a in state.with_role(SPY, alive_only=False) if a != agent]
            return [f"You are a Spy. Your fellow Spy is {state.names(partner)}.",
                    "On a mission you may play success or fail."]
        return ["You are a loyal Resistance member. You do not know who the Spies are.",
                "On a mission you can only play success."]

    def status(self, state, agent):
        g = state.g
        return [f"{self.MISSION.capitalize()} {g.mission} of {len(self.team_sizes())} (team of "
                f"{self.team_size(g.mission)}); score: {self.GOOD_LABEL} {g.successes}, {self.EVIL_LABEL} {g.failures}.",
                f"Leader: {state.name(g.leader)}; rejected proposals in a row: {g.rejections} of {MAX_REJECTIONS}."]

    def public_data(self, state, agent):
        g = state.g
        data = {"players": {a: state.name(a) for a in state.agents}, "mission": g.mission,
                "team_size": self.team_size(g.mission), "team_sizes": list(self.team_sizes()), "leader": g.leader,
                "team": list(g.team), "rejections": g.rejections, "successes": g.successes,
                "failures": g.failures, "proposals": [dict(p, votes=dict(p["votes"])) for p in g.proposals],
                "results": [dict(r) for r in g.results]}
        if state.role(agent) == SPY:
            data["known_spies"] = state.with_role(SPY, alive_only=False)
        return data

    def metrics(self, state):
        g = state.g
        return {"missions_succeeded": g.successes, "missions_failed": g.failures,
                "proposals": len(g.proposals),
                "rejected_proposals": sum(1 for p in g.proposals if not p["approved"])}


GAME = Resistance
