"""Heuristic for the Minority Game: expect the crowd to repeat itself, so join last round's
minority side... except that everyone reasoning so herds; a mixed rule does better: go with the
last minority side with probability 0.6, else pick at random."""
from ..base import BasePolicy, Decision


class LastMinority(BasePolicy):
    policy_id = "scripted:heuristic:minority_game"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        history = (info.get("game_state") or {}).get("history") or []
        if not history or rng.random() >= 0.6:
            return Decision(rng.choice(["go", "stay"]))
        goers = sum(move == "go" for move in history[-1].values())
        return Decision("go" if goers < len(history[-1]) - goers else "stay")


POLICY = LastMinority
