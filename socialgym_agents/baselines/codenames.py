"""Heuristic baseline for Codenames, from the word list's public association groups.

Reads only what its seat may see: ``info["game_state"]`` (the board, the face-up cards, the
clues, the guesses of this turn, and the key for a spymaster) and the shipped association groups
(``socialgym_env.games.codenames.associations``), which every seat may read.

- Spymaster: among the groups that are legal clues and hold none of the face-down assassin,
  the one that covers the most face-down own words, less 1.5 per other team's word and 0.7 per
  bystander in it; the clue is the group's name and the number of own words it covers. With no
  such group, a filler clue for 1.
- Operative: guesses the face-down words of the clue's group in board order, at most the
  clue's number of them, then stops; with none left it takes a word of an earlier own-team
  clue's group, and with none of those a random face-down word (a turn needs one guess).
"""
from __future__ import annotations

from socialgym_agents.base import BasePolicy, Decision
from socialgym_agents.scripted import sample_from_info
from socialgym_env.games.codenames import ASSASSIN, BYSTANDER, FILLER_CLUES, associations, clue_problem


def best_clue(game: dict, rng) -> str:
    """The spymaster's clue for the face-down board, as ``clue WORD N``."""
    key, team = game["key"], game["team"]
    face_down = [w for w in game["board"] if w not in game["revealed"]]
    weight = {team: 1.0, BYSTANDER: -0.7}
    scored = []
    for tag, words in sorted(associations().items()):
        cards = [key[w] for w in words if w in face_down]
        if ASSASSIN in cards or team not in cards or clue_problem(tag, face_down):
            continue
        score = sum(weight.get(card, -1.5) for card in cards)
        scored.append((score, tag, cards.count(team)))
    if not scored:
        filler = rng.choice([w for w in FILLER_CLUES if clue_problem(w, face_down) is None])
        return f"clue {filler} 1"
    top = max(s for s, _, _ in scored)
    _, tag, count = rng.choice([item for item in scored if item[0] == top])
    return f"clue {tag} {count}"


def next_guess(game: dict, rng) -> str:
    """The operative's next guess or ``stop``."""
    groups = associations()
    face_down = [w for w in game["board"] if w not in game["revealed"]]
    clue = game["clue"]
    if clue["number"] and game["guesses"] >= clue["number"]:
        return "stop"
    fitting = [w for w in face_down if w in groups.get(clue["word"], ())]
    if not fitting and game["guesses"]:
        return "stop"
    if not fitting:
        earlier = [c["word"] for c in game["clues"][:-1] if c["team"] == game["team"]]
        fitting = [w for w in face_down if any(w in groups.get(tag, ()) for tag in earlier)]
    return f"guess {fitting[0] if fitting else rng.choice(face_down)}"


class CodenamesHeuristic(BasePolicy):
    policy_id = "scripted:heuristic:codenames"

    def act(self, observation, info, key=("", "")):
        rng = self.rng(key)
        game = info.get("game_state") or {}
        phase = info.get("phase")
        if phase == "clue":
            return Decision(best_clue(game, rng))
        if phase == "guess":
            return Decision(next_guess(game, rng))
        if phase == "team_talk":
            return Decision("pass")
        return Decision(sample_from_info(info, rng))


POLICY = CodenamesHeuristic
