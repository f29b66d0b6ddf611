"""The Reflect step: self-play trajectories and outcomes -> the Appendix-F prompt -> a playbook.

The prompt is the paper's (Appendix F) with the bulleted capability axes restored. Every game
is rendered with every player's actions (including the hidden ones: votes, night kills, mission
cards) and the moderator's private and team messages, marked as such, then the outcome per
player and role. Games are separated by a header that names the game but never numbers it, as
the prompt forbids the model to refer to game numbers.

A *reflector* turns the prompt into text. ``make_reflector(spec)`` accepts:

* a policy spec of a chat model (``smollm2``, ``hf:...``, ``openai:...``): the model is asked
  with one user message; its reply length defaults to ``REFLECT_MAX_NEW_TOKENS`` unless the spec
  sets ``max_new_tokens``, and JSON stopping is turned off;
* ``file:PATH``: a deterministic fake that returns the text of PATH (tests, hand-written
  playbooks, replaying a reflection);
* any callable ``prompt -> text`` (tests).

The trajectories are shortened to the reflector's context: each game keeps its opening, its
ending and the outcome, the middle giving way to an ``[... N lines omitted ...]`` marker.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

from .playbook import Playbook, text_hash

REFLECT_MAX_NEW_TOKENS = 400

CAPABILITIES = (
    "- Deception: when and how to hide my intentions or role",
    "- Detection: how to read others' claims, votes and moves for signs of their hidden role or intent",
    "- Persuasion: how to move a group towards my plan",
    "- Information management: what to reveal, when, and to whom",
    "- Coalition dynamics: whom to trust, how to form and break alliances",
    "- Timing and patience: when to act, when to wait, how the end of a game changes what pays",
)

PRIOR_FIRST = ("You just played {num_games} games across the following game(s): {games_desc}. "
               "Each player was an independent instance of you and only saw its own role's private "
               "information; the transcripts below reveal the hidden moves of every role, but the "
               "players themselves did not have this view during play.")
PRIOR_REVISE = ("You previously wrote the following strategic playbook for yourself:\n{prior_reflection}\n\n"
                "You then played {num_games} more games using this playbook across: {games_desc}. "
                "Based on these new games, revise your playbook. Keep rules that worked, remove or "
                "modify rules that didn't help, and add new insights. Output the complete revised "
                "playbook (not just the changes).")
INSTRUCTIONS = (
    "Write an internal monologue of transferable social reasoning skills. Frame your insights around "
    "general capabilities that apply across many social games, such as:\n{capabilities}\n\n"
    "Requirements:\n"
    "- Write in first person (\"I should...\", \"When I need to hide information...\", "
    "\"A pattern I noticed is...\")\n"
    "- Derive insights from the games above, but write the rules so they apply beyond any specific game\n"
    "- Focus on actionable lessons, not abstract observations\n"
    "- Do NOT reference specific game numbers (e.g., \"Game 3\", \"Games 5-8\"). Your future self will "
    "not have access to these transcripts, so such references would be meaningless\n\n"
    "This monologue will be prepended to your system prompt in future social games. Write it so that "
    "reading it once before any social strategy game will meaningfully improve your play.")
OMITTED = "[... {n} lines omitted ...]"


# ----------------------------------------------------------------------------- trajectories
def _names(record: dict) -> dict:
    return {seat["agent"]: seat.get("name") or seat["agent"] for seat in record.get("roster", [])}


def trajectory_lines(record: dict) -> list[str]:
    """Every action and every moderator message of one episode, in order. Player speech is
    shown once (as the speaker's action); private and team messages say who saw them."""
    names = _names(record)
    roles = {seat["agent"]: seat.get("role", "") for seat in record.get("roster", [])}
    events = []
    for order, message in enumerate(record.get("messages", [])):
        if message.get("sender") is not None:
            continue   # the speaker's turn below carries the words
        step = message.get("step", 0)
        text = message.get("text", "")
        if message.get("visibility") != "public":
            seen = ", ".join(names.get(a, a) for a in message.get("receivers", []))
            text = f"(seen only by {seen}) {text}"
        events.append(((step - 1 if step else -1), 1, order, f"[R{message.get('round', '')}] Moderator: {text}"))
    for order, turn in enumerate(record.get("turns", [])):
        agent = turn.get("agent")
        action = turn.get("action") or turn.get("raw") or ""
        label = f"{names.get(agent, agent)} ({roles.get(agent, '')})"
        flag = "" if turn.get("valid", True) else " [invalid, replaced by the fallback]"
        events.append((turn.get("step", 0), 0, order, f"[R{turn.get('round', '')} {turn.get('phase', '')}] {label}: {action}{flag}"))
    return [line for *_, line in sorted(events)]


def outcome_lines(record: dict) -> list[str]:
    if record.get("failed"):
        return [f"The game could not be completed ({record.get('error', 'error')})."]
    outcomes = record.get("outcomes") or {}
    scores = record.get("scores") or {}
    lines = [f"Result: {record.get('reason') or 'finished'}."]
    for seat in record.get("roster", []):
        agent = seat["agent"]
        team = f", team {seat['team']}" if seat.get("team") else ""
        lines.append(f"- {seat.get('name', agent)} (role {seat.get('role', '')}{team}): "
                     f"{outcomes.get(agent, 'unknown')}, score {scores.get(agent, '')}")
    return lines


def render_game(record: dict, max_lines: Optional[int] = None) -> str:
    """One game's block for the prompt: header (no number), roster, trajectory, outcome."""
    header = [f"=== A game of {record.get('game')} ===",
              "Players: " + "; ".join(f"{s.get('name', s['agent'])} ({s.get('role', '')})" for s in record.get("roster", [])),
              "Trajectory:"]
    lines = trajectory_lines(record)
    if max_lines is not None and len(lines) > max_lines:
        head = max_lines // 2
        tail = max_lines - head
        lines = lines[:head] + [OMITTED.format(n=len(lines) - max_lines)] + (lines[-tail:] if tail else [])
    return "\n".join(header + lines + ["Outcome:"] + outcome_lines(record))


def games_description(records: Sequence[dict]) -> str:
    return ", ".join(dict.fromkeys(r.get("game", "?") for r in records))


def reflection_prompt(records: Sequence[dict], prior: Optional[str] = None, max_lines: Optional[int] = None) -> str:
    """The Appendix-F prompt over these games (revision form when ``prior`` is given)."""
    fields = {"num_games": len(records), "games_desc": games_description(records)}
    prior_section = (PRIOR_REVISE.format(prior_reflection=prior.strip(), **fields) if prior
                     else PRIOR_FIRST.format(**fields))
    games = "\n\n".join(render_game(r, max_lines) for r in records)
    return (f"{prior_section}\n\nBelow are the full trajectories of all {len(records)} games, showing every "
            f"player's actions and the outcome:\n\n{games}\n\n"
            + INSTRUCTIONS.format(capabilities="\n".join(CAPABILITIES)))


def fitted_prompt(records: Sequence[dict], prior: Optional[str], fits: Callable[[str], bool]) -> str:
    """The longest prompt that fits: whole games first, then fewer lines per game (halving)."""
    prompt = reflection_prompt(records, prior)
    if fits(prompt):
        return prompt
    longest = max((len(trajectory_lines(r)) for r in records), default=0)
    max_lines = longest
    while max_lines > 2:
        max_lines //= 2
        prompt = reflection_prompt(records, prior, max_lines)
        if fits(prompt):
            return prompt
    return reflection_prompt(records, prior, 2)


# ----------------------------------------------------------------------------- reflectors
class Reflector:
    """Turns a reflection prompt into playbook text. ``fits`` says whether a prompt fits the
    model's context (always True for fakes)."""

    id = "reflector"

    def fits(self, prompt: str) -> bool:
        return True

    def __call__(self, prompt: str) -> str:
        raise NotImplementedError


class FileReflector(Reflector):
    def __init__(self, path):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"reflector file {self.path} does not exist")
        self.id = f"file:{self.path}"

    def __call__(self, prompt: str) -> str:
        return self.path.read_text(encoding="utf-8")


class FunctionReflector(Reflector):
    def __init__(self, fn: Callable[[str], str], reflector_id: str = "function"):
        self.fn = fn
        self.id = reflector_id

    def __call__(self, prompt: str) -> str:
        return self.fn(prompt)


class ModelReflector(Reflector):
    """A chat model from a policy spec, asked once with the prompt as the user message."""

    def __init__(self, spec: str, seed: int = 0):
        from socialgym_agents.registry import make_policy
        from socialgym_agents.llm.policy import LLMPolicy
        from socialgym_agents.specs import AgentSpec
        self.id = spec
        reply_spec = AgentSpec.of(spec).with_option("max_new_tokens", REFLECT_MAX_NEW_TOKENS).with_option("stop_at_json", 0)
        policy = make_policy(reply_spec, seed=seed)
        if not isinstance(policy, LLMPolicy):
            raise ValueError(f"reflector {spec!r} is not a chat model; use smollm2, hf:..., openai:... or file:PATH")
        self.backend = policy.backend
        self.seed = seed

    def fits(self, prompt: str) -> bool:
        fits = getattr(self.backend, "fits", None)
        return True if fits is None else fits([{"role": "user", "content": prompt}])

    def __call__(self, prompt: str) -> str:
        from socialgym_agents.llm.backend import Completion
        reply = self.backend.complete([Completion(("spartan-reflect", text_hash(prompt)[:12]),
                                                  [{"role": "user", "content": prompt}], self.seed)])[0]
        if hasattr(self.backend, "release"):
            self.backend.release(("spartan-reflect", text_hash(prompt)[:12]))
        if isinstance(reply, BaseException):
            raise RuntimeError(f"reflector {self.id} failed: {reply}") from reply
        return reply.text.strip()


def make_reflector(spec, seed: int = 0) -> Reflector:
    if isinstance(spec, Reflector):
        return spec
    if callable(spec):
        return FunctionReflector(spec)
    if spec.startswith("file:"):
        return FileReflector(spec[len("file:"):])
    return ModelReflector(spec, seed)


def reflect(records: Sequence[dict], reflector: Reflector, name: str, prior: Optional[Playbook] = None,
            meta: Optional[dict] = None) -> Playbook:
    """Write the playbook NAME from these episodes (revising ``prior`` when given)."""
    usable = [r for r in records if not r.get("failed")]
    if not usable:
        raise RuntimeError(f"no completed episodes to reflect on for {name}")
    prompt = fitted_prompt(usable, prior.text if prior else None, reflector.fits)
    text = reflector(prompt).strip()
    if not text:
        raise RuntimeError(f"reflector {reflector.id} returned an empty playbook for {name}")
    models = sorted({seat.get("policy") for r in usable for seat in r.get("roster", []) if seat.get("policy")})
    info = {"kind": "reflection", "games": sorted({r["game"] for r in usable}), "source_models": models,
            "reflector": reflector.id, "prior": prior.id if prior else None,
            "source_episode_ids": [r["episode_id"] for r in usable], "prompt_sha256": text_hash(prompt),
            "prompt_chars": len(prompt)}
    info.update(meta or {})
    return Playbook(name, text, info)
