"""The Resistance: Avalon — 5 players (5 to 10), good (Arthur's loyal servants) against hidden evil.

Create: ``socialgym_env.make("avalon", num_players=7, percival=True, morgana=True)``
(``num_players`` 5–10, default 5; the special roles ``merlin`` (with the Assassin, default on),
``percival``, ``morgana``, ``mordred`` and ``oberon`` (default off) are true/false options).

Setup. Good and evil players by count: 5 → 3/2, 6 → 4/2, 7 → 4/3, 8 → 5/3, 9 → 6/3, 10 → 6/4.
The special roles in play replace Loyal Servants (good) and Minions (evil); the roles are dealt
with the env's RNG. Quest team sizes by count: 5 → 2, 3, 2, 3, 3; 6 → 2, 3, 4, 3, 4;
7 → 2, 3, 3, 4, 4; 8 to 10 → 3, 4, 4, 5, 5. With 7 or more players the fourth quest fails only
on two fail cards; every other quest fails on one.

What each role is told at the start, privately (and keeps in its observation and
``game_state``; nobody learns another player's role but Percival, who learns who may be Merlin):

| Role            | Team | Sees                                                                 |
|-----------------|------|----------------------------------------------------------------------|
| Merlin          | good | every evil player except Mordred (``known_evil``), not their roles   |
| Percival        | good | Merlin and Morgana as ``merlin_candidates``, not which is which (Merlin alone without Morgana) |
| Loyal Servant   | good | nothing                                                              |
| Assassin, Morgana, Mordred, Minion | evil | the other evil players except Oberon (``known_evil``) |
| Oberon          | evil | nothing; no evil player sees Oberon                                   |

The first leader is drawn with the env's RNG (announced); the leadership passes to the next
seat after every proposal. One proposal:

| Phase      | Who                         | Actions                                                  |
|------------|-----------------------------|----------------------------------------------------------|
| discussion | everyone, from the leader   | ``say MESSAGE`` / ``pass`` (one message each, public)     |
| proposal   | the leader                  | ``propose NAME1 … NAMEk`` — exactly the quest's size, all different |
| vote       | everyone (simultaneous)     | ``approve`` / ``reject``; a strict majority approves; every vote is shown |
| quest      | team members (simultaneous) | good: ``success`` only; evil: ``success`` / ``fail``     |

A rejected proposal goes back to ``discussion`` with the next leader; five rejected proposals
in a row and evil wins. An approved proposal resets that count. The quest result shows only
the number of fail cards (never who played them).

Ending: three failed quests → evil wins. Three successful quests → with Merlin in play, the
assassination: every evil player (Oberon too) speaks once on the evil team's channel
(``assassination_talk``, ``say``/``pass``, from the Assassin round the table), then the
Assassin ``assassinate NAME`` (any other player): Merlin → evil wins, anyone else → good wins.
Without Merlin, three successful quests → good wins.

Reward (team): every winner +1, every loser −1. Role gaps are rated as in The Resistance:
``main_role`` Loyal Servant (the good team), ``alt_role`` Minion (the evil team).
Turn cap ``max_steps`` = 1000 (never reached: at most 25 proposals); reaching it is a draw.
Invalid-action fallbacks: discussion and assassination talk ``pass``, proposal a random legal
team, vote ``reject``, quest ``success``, assassination a random other player.

Where the published rulebook (Avalon Hill / Indie Boards & Cards) leaves room, choices made:
votes are simultaneous and public, as in the rulebook's open vote; the Assassin may name any
other player (naming an evil one simply misses Merlin); the Lady of the Lake and the other
expansion options are not played. Percival needs Merlin, Morgana needs Percival (her only power
is to look like Merlin to him) and Mordred needs Merlin (his only power is to hide from him);
a configuration with more special evil roles than evil seats is refused.

Version history: v0 initial.
"""
from __future__ import annotations

from ..actions import ActionSpec
from ..game import TEAM, GameInfo, Phase
from ..patterns import player_arg, rotating_from, talk_phase
from ..state import State
from .resistance import Resistance

MERLIN, PERCIVAL, SERVANT = "Merlin", "Percival", "Loyal Servant"
ASSASSIN, MORGANA, MORDRED, OBERON, MINION = "Assassin", "Morgana", "Mordred", "Oberon", "Minion"
GOOD, EVIL = "good", "evil"

# player count -> (good, evil) seats, and the five quests' team sizes
TEAMS = {5: (3, 2), 6: (4, 2), 7: (4, 3), 8: (5, 3), 9: (6, 3), 10: (6, 4)}
QUEST_SIZES = {5: (2, 3, 2, 3, 3), 6: (2, 3, 4, 3, 4), 7: (2, 3, 3, 4, 4),
               8: (3, 4, 4, 5, 5), 9: (3, 4, 4, 5, 5), 10: (3, 4, 4, 5, 5)}
TWO_FAIL_QUEST, TWO_FAIL_PLAYERS = 4, 7        # from 7 players on, quest 4 needs two fail cards
OPTIONAL_ROLES = (("percival", PERCIVAL, GOOD), ("morgana", MORGANA, EVIL), ("mordred", MORDRED, EVIL),
                  ("oberon", OBERON, EVIL))


# ------------------------------------------------------------------ pure rules
def fails_needed(num_players: int, quest: int) -> int:
    """Fail cards that fail quest ``quest`` (1-based) at ``num_players`` players."""
    return 2 if num_players >= TWO_FAIL_PLAYERS and quest == TWO_FAIL_QUEST else 1


def role_deck(config: dict) -> list:
    """The (role, team) cards for ``config``: the special roles, then Servants and Minions."""
    good, evil = TEAMS[config["num_players"]]
    specials = ([(MERLIN, GOOD), (ASSASSIN, EVIL)] if config["merlin"] else [])
    specials += [(role, team) for key, role, team in OPTIONAL_ROLES if config[key]]
    good_cards = [card for card in specials if card[1] == GOOD]
    evil_cards = [card for card in specials if card[1] == EVIL]
    return (good_cards + [(SERVANT, GOOD)] * (good - len(good_cards))
            + evil_cards + [(MINION, EVIL)] * (evil - len(evil_cards)))


def visible_players(state: State, agent: str) -> list:
    """The seats ``agent``'s role lets it see at the start (seat order), by the table above."""
    role = state.role(agent)
    others = [a for a in state.agents if a != agent]
    if role == MERLIN:
        return [a for a in others if state.team(a) == EVIL and state.role(a) != MORDRED]
    if role == PERCIVAL:
        return [a for a in others if state.role(a) in (MERLIN, MORGANA)]
    if state.team(agent) == EVIL and role != OBERON:
        return [a for a in others if state.team(a) == EVIL and state.role(a) != OBERON]
    return []


def _description(config: dict) -> str:
    n = config["num_players"]
    good, evil = TEAMS[n]
    deck = role_deck(config)
    roles = ", ".join(f"{role} ({team})" for role, team in dict.fromkeys(deck))
    in_play = {role for role, _ in deck}
    powers = " ".join(["The evil players know each other."]
                      + [power for role, power in ROLE_POWERS if role in in_play])
    if PERCIVAL in in_play:
        powers += (" Percival sees Merlin and Morgana without knowing which is which." if MORGANA in in_play
                   else " Percival sees Merlin.")
    sizes = ", ".join(map(str, QUEST_SIZES[n]))
    two = (f" Quest {TWO_FAIL_QUEST} fails only on 2 fail cards; every other quest on 1."
           if n >= TWO_FAIL_PLAYERS else " One fail card fails a quest.")
    ending = ("Three successful quests: the Assassin (after evil confers in secret) names one player; "
              "if it is Merlin evil wins, otherwise good wins." if config["merlin"]
              else "Three successful quests: good wins.")
    return (f"Avalon, {n} players: {good} good and {evil} evil, roles hidden. Roles in play: {roles}. "
            f"{powers} "
            f"Five quests need teams of {sizes}. Each proposal: everyone speaks once, the leader "
            f"proposes a team, everyone votes approve or reject at once (a strict majority approves; "
            f"5 rejected proposals in a row: evil wins). On an approved team each member secretly "
            f"plays success or fail (good can only play success); only the number of fail cards is "
            f"revealed.{two} Three failed quests: evil wins. {ending}")


# what each role sees, as the rules text states it for the roles in play
ROLE_POWERS = (
    (MERLIN, "Merlin sees who is evil (not their roles)."),
    (MORDRED, "Mordred is hidden from Merlin."),
    (OBERON, "Oberon is evil but neither knows nor is known by the other evil players."),
)

DEFAULTS = {"merlin": True, "percival": False, "morgana": False, "mordred": False, "oberon": False}


class Avalon(Resistance):
    info = GameInfo(
        id="avalon", name="Avalon", category="hidden_role", num_players=5,
        information="hidden_roles", communication="free_form", horizon="open_ended",
        iteration="3 successful or 3 failed quests", skills=("strategic", "deception", "tom"),
        outcome=TEAM, max_steps=1000,
        roles=((MERLIN, 1, GOOD), (SERVANT, 2, GOOD), (ASSASSIN, 1, EVIL), (MINION, 1, EVIL)),
        main_role=SERVANT, alt_role=MINION,
        description=_description({"num_players": 5, **DEFAULTS}))
    player_counts = tuple(TEAMS)
    config_defaults: dict = dict(DEFAULTS)

    MISSION = "quest"
    GOOD_TEAM, EVIL_TEAM = GOOD, EVIL
    GOOD_LABEL, EVIL_LABEL = "good", "evil"
    GOOD_WINS, EVIL_WINS = "good wins", "evil wins"

    @classmethod
    def validate_config(cls, config: dict) -> None:
        needs = (("percival", "merlin"), ("mordred", "merlin"), ("morgana", "percival"))
        for role, needed in needs:
            if config[role] and not config[needed]:
                raise ValueError(f"avalon: {role} needs {needed}")
        evil_specials = sum(bool(config[key]) for key in ("merlin", "morgana", "mordred", "oberon"))  # merlin: the Assassin
        evil_seats = TEAMS[config["num_players"]][1]
        if evil_specials > evil_seats:
            raise ValueError(f"avalon: {evil_specials} special evil roles but only {evil_seats} evil seats "
                             f"at {config['num_players']} players")

    # -- the rules Resistance asks for --------------------------------------------------
    def role_deck(self):
        return role_deck(self.config)

    def team_sizes(self) -> tuple:
        return QUEST_SIZES[self.num_players]

    def fails_needed(self, mission: int) -> int:
        return fails_needed(self.num_players, mission)

    def can_fail(self, state, agent) -> bool:
        return state.team(agent) == EVIL

    def missions_succeeded(self, state) -> None:
        if not self.config["merlin"]:
            super().missions_succeeded(state)
            return
        assassin = state.with_role(ASSASSIN, alive_only=False)[0]
        state.announce(f"Three quests succeeded. Evil confers in secret, then the Assassin, "
                       f"{state.name(assassin)}, names the player it believes is Merlin.")
        state.goto("assassination_talk")

    # -- flow -----------------------------------------------------------------------------
    def phases(self):
        return list(super().phases()) + [
            talk_phase("assassination_talk", lambda s: s.goto("assassination"), visibility="team", team=EVIL,
                       actors=lambda s: [a for a in rotating_from(self._assassin)(s) if s.team(a) == EVIL],
                       instructions="Evil only: discuss who Merlin is (one message), or pass."),
            self._assassination_phase(),
        ]

    def _assassination_phase(self):
        return Phase("assassination", actors=lambda s: [self._assassin(s)], resolve=self._assassinated,
                     grammar=lambda s, a: [ActionSpec("assassinate", (player_arg(s, s.others(a)),),
                                                      help="the player you believe is Merlin")],
                     fallback="random", instructions="You are the Assassin: name the player you believe is Merlin.")

    @staticmethod
    def _assassin(state):
        return state.with_role(ASSASSIN, alive_only=False)[0]

    def setup(self, state: State) -> None:
        self.start_bookkeeping(state)
        state.g.assassinated = None
        for agent in state.agents:
            for line in self._knowledge(state, agent):
                state.tell(agent, line)
        self.first_leader(state, "Avalon begins. Quest team sizes")

    def _assassinated(self, state, actions):
        (assassin, action), = actions.items()
        target = action.arg
        state.g.assassinated = target
        merlin = state.with_role(MERLIN, alive_only=False)[0]
        state.announce(f"The Assassin, {state.name(assassin)}, names {state.name(target)}. "
                       f"Merlin was {state.name(merlin)}.")
        if target == merlin:
            self.evil_wins(state, "the Assassin found Merlin")
        else:
            state.finish(f"the Assassin missed Merlin: {self.GOOD_WINS}",
                         winners=state.on_team(GOOD, alive_only=False))

    # -- text hooks -----------------------------------------------------------------------
    def description(self, state):
        return _description(self.config)

    def _knowledge(self, state, agent) -> list:
        """The private lines a seat's role gives it (the table in the docstring)."""
        role, seen = state.role(agent), visible_players(state, agent)
        lines = [f"Your role: {role} ({state.team(agent)})."]
        if role == MERLIN:
            hidden = " (Mordred is hidden from you)" if self.config["mordred"] else ""
            lines.append(f"The evil players you see{hidden}: {state.names(seen) or 'none'}.")
        elif role == PERCIVAL:
            lines.append(f"Merlin is {state.names(seen)}." if len(seen) == 1 else
                         f"Merlin is one of {state.names(seen)}; the other is Morgana. You do not know which.")
        elif role == OBERON:
            lines.append("You do not know the other evil players, and they do not know you.")
        elif state.team(agent) == EVIL:
            unseen = " Oberon is evil too, but hidden from you." if self.config["oberon"] else ""
            lines.append(f"Your fellow evil players: {state.names(seen) or 'none'}.{unseen}")
        return lines

    def goal(self, state, agent):
        if state.team(agent) == EVIL:
            return ("Make 3 quests fail (or get 5 proposals in a row rejected)"
                    + (", or find Merlin at the end." if self.config["merlin"] else "."))
        return ("Make 3 quests succeed" + (" without revealing Merlin." if self.config["merlin"] else "."))

    def secret(self, state, agent):
        can = "success or fail" if state.team(agent) == EVIL else "only success"
        return self._knowledge(state, agent) + [f"On a quest you may play {can}."]

    def public_data(self, state, agent):
        data = super().public_data(state, agent)
        n = self.num_players
        data["fails_needed"] = [fails_needed(n, q) for q in range(1, len(self.team_sizes()) + 1)]
        data["good_count"], data["evil_count"] = TEAMS[n]
        role = state.role(agent)
        if role == PERCIVAL:
            data["merlin_candidates"] = visible_players(state, agent)
        elif role == MERLIN or (state.team(agent) == EVIL and role != OBERON):
            data["known_evil"] = visible_players(state, agent)
        return data

    def metrics(self, state):
        merlin = state.with_role(MERLIN, alive_only=False)
        assassinated = state.g.assassinated
        return dict(super().metrics(state), assassination=assassinated is not None,
                    merlin_found=bool(merlin) and assassinated == merlin[0])


GAME = Avalon
