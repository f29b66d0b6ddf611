"""Heuristic for Public Goods: a conditional cooperator. Contributes 10 in round 1, then the
rounded mean of the others' last contributions (the commonest human strategy in the lab)."""
from ..base import BasePolicy, Decision


class ConditionalCooperator(BasePolicy):
    policy_id = "scripted:heuristic:public_goods"

    def act(self, observation, info, key=("", "")):
        history = (info.get("game_state") or {}).get("history") or []
        if not history:
            return Decision("contribute 10")
        others = [int(move.split()[1]) for agent, move in history[-1].items() if agent != key[1]]
        return Decision(f"contribute {round(sum(others) / len(others))}")


POLICY = ConditionalCooperator
