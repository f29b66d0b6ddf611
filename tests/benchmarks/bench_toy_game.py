"""A tiny hidden-role game for the benchmark tests: 4 seats, one Spy (team "spies", the
minority / alt side) against three Civilians (team "town", the main side). One round of public
talk, then a vote; the town wins when the Spy gets the plurality. The Spy is told its role in a
private message (what the replay viewer's private view must show)."""
from socialgym_env.game import Game, GameInfo, TEAM
from socialgym_env.patterns import exile_by_vote, talk_phase, vote_phase


class ToySpy(Game):
    info = GameInfo(
        id="toy_spy", name="Toy Spy", category="hidden_role", num_players=4, information="hidden_roles",
        communication="free_form", horizon="single_round", iteration="1 round",
        skills=("deception", "tom"), outcome=TEAM, max_steps=50,
        roles=(("spy", 1, "spies"), ("civilian", 3, "town")), main_role="civilian", alt_role="spy",
        description="Find the spy.")
    config_defaults = {}

    def phases(self):
        return [talk_phase("talk", lambda s: s.goto("vote")),
                vote_phase("vote", self._vote)]

    def setup(self, state):
        spy = state.with_role("spy")[0]
        state.tell(spy, "SECRET: you are the spy.")
        for agent in state.with_role("civilian"):
            state.tell(agent, "SECRET: you are a civilian.")
        state.announce("One of you is the spy.")
        state.goto("talk")

    def _vote(self, state, actions):
        exiled = exile_by_vote(state, actions)
        if exiled is not None and state.role(exiled) == "spy":
            state.finish("the spy was caught", winners=state.on_team("town", alive_only=False))
        else:
            state.finish("the spy escaped", winners=state.on_team("spies", alive_only=False))


GAME = ToySpy
