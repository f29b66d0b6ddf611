"""Survivor — 6 players, no roles; vote each other out, then the jury picks the winner.

Create: ``socialgym_env.make("survivor")``

Each round the live players talk, then vote one of the others out. The eliminated join the
jury (they keep watching the board). When 3 players are left, the finalists plead and the
jury elects the winner.

| Phase      | Who                                   | Actions                                   |
|------------|---------------------------------------|-------------------------------------------|
| discussion | live players, one message each, round-robin; the first speaker rotates each round | ``say TEXT`` / ``pass`` |
| vote       | live players, simultaneous             | ``vote NAME`` (a live player, not oneself) |
| plea       | the 3 finalists, one message each      | ``say TEXT`` / ``pass``                    |
| jury       | the jurors (eliminated players), simultaneous | ``vote NAME`` (a finalist)          |

Observation: every message is public (the eliminated keep watching the board); each seat sees
the live players, the jury, the votes so far and its own status. Votes are revealed after each
vote. Plurality eliminates; a tie is broken by the env's seeded
RNG and the transcript says so. The jury vote is plurality too, tie → RNG (announced);
the game ends with it.
Discussion round ``r`` starts with seat ``(r − 1) mod 6`` (or the next live seat after it).

Reward (outcome CUSTOM): jury winner +1, the other finalists 0, jurors −1; the same values are
the scores. Invalid-action fallbacks: talk → ``pass``; votes → a random legal vote (env RNG).
Turn cap: 200 steps (the structure needs at most about 40); reaching it gives everyone 0.
Version history: v0 initial.
"""
from ..game import CUSTOM, Game, GameInfo, Phase
from ..patterns import everyone, plurality, rotating_from, talk_phase, vote_specs, vote_values

FINALISTS = 3


def final_rewards(agents, finalists, winner) -> dict:
    """Jury winner +1, other finalists 0, jurors (everyone else) −1."""
    return {a: (1.0 if a == winner else 0.0 if a in finalists else -1.0) for a in agents}


def first_speaker(state) -> str:
    """Seat (round − 1) mod n, or the next live seat after it."""
    seat = state.agents[(state.round - 1) % len(state.agents)]
    return seat if state.seat[seat].alive else state.next_alive(seat)


class Survivor(Game):
    info = GameInfo(
        id="survivor", name="Survivor", category="social_strategy", num_players=6,
        information="complete", communication="free_form", horizon="open_ended", iteration="until 3 remain",
        skills=("negotiation", "persuasion", "tom"), outcome=CUSTOM, max_steps=200,
        description=("Six players, no roles. Each round everyone still in the game speaks once, then "
                     "all vote at the same time to eliminate one other player (most votes goes; a tie "
                     "is broken at random). Eliminated players join the jury. When three players "
                     "remain, each finalist makes one plea, then the jury votes for the winner (a tie "
                     "is broken at random). The winner gets +1, the other finalists 0, the jurors −1."))
    config_defaults = {}

    def phases(self):
        return [
            talk_phase("discussion", lambda s: s.goto("vote"), actors=rotating_from(first_speaker),
                       instructions="Say one message to the group (alliances, accusations), or pass."),
            Phase("vote", actors=everyone, simultaneous=True, resolve=self._voted,
                  grammar=lambda s, a: vote_specs(s, a, s.others(a), help="eliminate this player"),
                  instructions=lambda s, a: f"Round {s.round}: vote one other player out."),
            talk_phase("plea", lambda s: s.goto("jury"), actors=everyone,
                       instructions="Final plea: tell the jury why you should win."),
            Phase("jury", actors=lambda s: list(s.g.jury), simultaneous=True, resolve=self._jury_voted,
                  grammar=lambda s, a: vote_specs(s, a, s.alive(), help="this finalist wins"),
                  instructions="You are on the jury: vote for the finalist who should win.",
                  allow_eliminated=True),
        ]

    def setup(self, state):
        state.g.jury = []
        state.round = 1
        state.announce(f"The game starts. Round 1: {state.names(state.alive())} are in.")
        state.goto("discussion")

    def _voted(self, state, actions):
        target = plurality(state, vote_values(actions), tie="rng", label=f"Round {state.round} votes")
        state.eliminate(target)
        state.g.jury.append(target)
        state.announce(f"{state.name(target)} is voted out and joins the jury.")
        if len(state.alive()) <= FINALISTS:
            state.announce(f"Finalists: {state.names(state.alive())}. Jury: {state.names(state.g.jury)}. "
                           f"Each finalist makes one plea.")
            state.goto("plea")
            return
        state.round += 1
        state.goto("discussion")
        state.announce(f"Round {state.round}: {state.names(state.alive())} remain.")

    def _jury_voted(self, state, actions):
        winner = plurality(state, vote_values(actions), tie="rng", label="Jury votes")
        finalists = state.alive()
        rewards = final_rewards(state.agents, finalists, winner)
        state.announce(f"The jury elects {state.name(winner)}.")
        state.finish(f"the jury chose {state.name(winner)} over "
                     f"{state.names([f for f in finalists if f != winner])}",
                     scores=rewards, winners=[winner], rewards=rewards)

    def on_truncation(self, state):
        zeros = {a: 0.0 for a in state.agents}
        state.finish("turn cap reached: nobody wins", scores=zeros, rewards=zeros, truncated=True)

    def goal(self, state, agent):
        return ("Reach the final three and win the jury vote (+1). A finalist who loses the jury vote "
                "gets 0; an eliminated player gets −1.")

    def status(self, state, agent):
        lines = [f"Round {state.round}; in the game: {state.names(state.alive())}."]
        if state.g.jury:
            lines.append(f"Jury: {state.names(state.g.jury)}.")
        return lines

    def public_data(self, state, agent):
        talk = [{"round": m.round, "phase": m.phase, "speaker": m.sender, "text": m.text}
                for m in state.messages if m.sender is not None and agent in m.receivers]
        return {"round": state.round, "alive": state.alive(), "jury": list(state.g.jury),
                "names": {a: state.name(a) for a in state.agents}, "talk": talk}


GAME = Survivor
