"""The Jester self-learning study (seed 002 §3.2 and §4): models x {OFF, ON}, K games per cell,
one model plays every role.

    python -m socialgym_benchmarks.studies.triadic.study --models smollm2 --games 10 --out runs/jester
    (or: socialgym jester run --models smollm2 --games 10 --out runs/jester)

Protocol. Cells run one after another (model by model, OFF then ON), and so do a cell's games.
In an ON cell, after game k the Jester's model reflects on the game's transcript and outcome
(:data:`lessons.REFLECTION_PROMPT`; ``reflector`` may name another model, e.g. to pair cheap
scripted players with a real lesson writer) and its new lessons, minus near-duplicates, are appended to
the cell's lessons file ``OUT/lessons/<cell>.json``; game k+1's Jester reads every lesson of games
1..k in its prompt (the LLM policy's playbook slot, ``EpisodeJob.playbooks``). OFF cells have no
lessons file. Files are per model and per cell, so no model ever reads another's lessons.

Name-to-role regime (``roles``), the two the seed uses:

* ``fixed`` (default; the seed's main runs, §5.3: "the same player name is the Jester in every
  game of a given model and condition"): game 1's deal fixes the Jester's seat and name; game k
  plays the first seed of its stream (``tournament.episode_seed(seed, game, ["jester"], k)``,
  then re-deals ``["jester", "redeal<t>"]``) whose deal gives the Jester that seat and name.
  The other roles are dealt afresh each game; the engine's deal itself is untouched.
* ``shuffled`` (the seed's GPT-4.1 robustness runs): roles permuted at random per game, i.e. game
  k simply plays the first seed of its stream.

Either way game k has the same seed in every cell, so OFF/ON pairs differ only in the Jester's
lessons.

Outputs: ``OUT/logs/<cell>.jsonl`` (episode records; tags hold model, condition, cell, game
index), ``OUT/lessons/<cell>.json`` (ON cells), ``OUT/study.json`` (the configuration).
Resumable: a logged game is not replayed and a reflected game is not reflected again, so a
killed run restarts where it stopped with identical results for the games already done.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

import socialgym_env
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_agents.specs import AgentSpec
from socialgym_benchmarks.tournament.plan import episode_seed
from socialgym_env.atomic import atomic_write_text
from socialgym_env.logs import iter_log_dir

from .lessons import (DEFAULT_THRESHOLD, LessonBook, MiniLMEncoder, format_playbook, parse_lessons,
                      reflection_prompt)

GAME = "triadic_werewolf"
CONDITIONS = ("OFF", "ON")
ROLE_REGIMES = ("fixed", "shuffled")
MAX_REDEALS = 100_000      # a seat-and-name match has odds 1 in 10 x 40; this never binds in practice
# Seed §4 engine settings (Table 22), with the env's measurement on (labels and suspicion).
SEED_CONFIG = {"max_debate_turns": 12, "max_explanation_turns": 6, "measure": True}
# --quick: a game the embedded model plays in minutes on a laptop CPU.
QUICK_CONFIG = {"max_debate_turns": 1, "max_explanation_turns": 1, "max_days": 2, "measure": True}

Reflector = Callable[[str, int], str]      # (reflection prompt, sample seed) -> the model's reply


@dataclass
class StudyConfig:
    models: list = field(default_factory=lambda: ["smollm2"])   # policy specs; one cell pair each
    games: int = 10                      # K games per cell
    conditions: list = field(default_factory=lambda: list(CONDITIONS))
    seed: int = 0
    out: str = "runs/jester"
    threshold: float = DEFAULT_THRESHOLD  # near-duplicate cosine similarity (MiniLM)
    reflect_tokens: int = 400            # max_new_tokens of the reflection call (local/openai models)
    reflect_chars: int = 12000           # transcript characters the reflection keeps (its end); 0 = all
    quick: bool = False                  # QUICK_CONFIG instead of the seed's settings
    reflector: str = ""                  # spec of the model that writes the lessons; "" = the playing model
    config: dict = field(default_factory=dict)   # further game config overrides
    roles: str = "fixed"                 # fixed: the Jester keeps game 1's seat and name | shuffled: dealt per game

    def __post_init__(self):
        if self.roles not in ROLE_REGIMES:
            raise ValueError(f"roles must be one of {', '.join(ROLE_REGIMES)}, got {self.roles!r}")


def cell_name(model: str, condition: str) -> str:
    """A file-safe cell name: the spec's characters outside [A-Za-z0-9._-] become '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") + "-" + condition


def game_config(cfg: StudyConfig) -> dict:
    return {**(QUICK_CONFIG if cfg.quick else SEED_CONFIG), **cfg.config}


def jester_seat(config: dict, seed: int) -> str:
    """The seat the env's seeded deal makes the Jester."""
    return jester_deal(socialgym_env.make(GAME, **config), seed)[0]


def jester_deal(env, seed: int) -> tuple[str, str]:
    """(seat, name) of the Jester in the deal of ``seed``."""
    env.reset(seed=seed)
    seat = next(s for s in env.state.seats if s.role == "Jester")
    return seat.agent, seat.name


def game_seeds(cfg: StudyConfig, config: dict) -> list[int]:
    """The seed of games 1..K under the configured name-to-role regime (see the module docstring)."""
    seeds = [episode_seed(cfg.seed, GAME, ["jester"], k) for k in range(1, cfg.games + 1)]
    if cfg.roles == "shuffled":
        return seeds
    env = socialgym_env.make(GAME, **config)
    wanted = jester_deal(env, seeds[0])
    for k in range(2, cfg.games + 1):
        seed, redeal = seeds[k - 1], 0
        while jester_deal(env, seed) != wanted:
            redeal += 1
            if redeal > MAX_REDEALS:
                raise RuntimeError(f"no deal of game {k} puts the Jester at {wanted} in {MAX_REDEALS} tries")
            seed = episode_seed(cfg.seed, GAME, ["jester", f"redeal{redeal}"], k)
        seeds[k - 1] = seed
    return seeds


def with_option(spec: str, key: str, value) -> str:
    """``spec`` with one more LLM option (a later key overrides an earlier one)."""
    return f"{spec}{'&' if '?' in spec else '?'}{key}={value}"


def reflection_spec(spec: str, max_new_tokens: int) -> str:
    return with_option(with_option(spec, "max_new_tokens", max_new_tokens), "context", 0)


def model_reflector(pool: PolicyPool, spec: str, max_new_tokens: int) -> Reflector:
    """The reflection call of an LLM spec: one free-text completion from the same model (its
    own policy instance with a larger token budget and the model's whole context window, since
    a game-time ``context=`` cap would cut the prompt; the loaded weights are shared)."""
    from socialgym_agents.llm.backend import Completion

    from .lessons import LESSONS_SCHEMA, lessons_grammar
    policy = pool.get(reflection_spec(spec, max_new_tokens))
    # constrained like the policy's moves (constrained=0 in the spec turns it off)
    grammar = lessons_grammar() if policy.config.constrained else None

    def reflect(prompt: str, sample_seed: int) -> str:
        reply = policy.backend.complete([Completion(("jester-reflection", sample_seed),
                                                    [{"role": "user", "content": prompt}], sample_seed,
                                                    grammar=grammar, schema=LESSONS_SCHEMA if grammar else None)])[0]
        if isinstance(reply, BaseException):
            raise reply
        return reply.text
    return reflect


def scripted_reflector(prompt: str, sample_seed: int) -> str:
    """For scripted specs (no model to ask): a fixed rule of thumb per outcome, so the loop and
    its de-duplication run end to end (the second identical lesson is always dropped)."""
    won = "GAME OUTCOME: You won" in prompt
    lessons = {"to_do": ["Bid high early so the village hears you first."],
               "to_not_do": [] if won else ["Do not stay quiet on day 1."],
               "winning_tactics": ["Give evasive answers that sound like a hiding Werewolf."] if won else []}
    return json.dumps(lessons)


def default_reflector(pool: PolicyPool, spec: str, cfg: StudyConfig) -> Reflector:
    if AgentSpec.of(spec).kind == "scripted":
        return scripted_reflector
    return model_reflector(pool, spec, cfg.reflect_tokens)


def _logged(log: Path) -> dict:
    return {r["episode_id"]: r for r in iter_log_dir(log)} if log.exists() else {}


def run_cell(cfg: StudyConfig, model: str, condition: str, pool: PolicyPool, encoder=None,
             reflector: Optional[Reflector] = None, progress: Callable[[str], None] = print) -> list[dict]:
    """Play (or resume) one cell; returns its K episode records in game order."""
    out = Path(cfg.out)
    cell = cell_name(model, condition)
    log = out / "logs" / f"{cell}.jsonl"
    config = game_config(cfg)
    learning = condition == "ON"
    book = LessonBook(out / "lessons" / f"{cell}.json", model=model, cell=cell, threshold=cfg.threshold) \
        if learning else None
    records = []
    for k, seed in enumerate(game_seeds(cfg, config), start=1):
        episode_id = f"jester-{cell}-g{k:03d}"
        jester = jester_seat(config, seed)
        record = _logged(log).get(episode_id)
        if record is None:
            playbook = format_playbook(book.lessons) if learning else None
            job = EpisodeJob(GAME, seed, [model] * 10, config=config, episode_id=episode_id,
                             playbooks={jester: playbook} if playbook else {},
                             tags={"study": "jester", "model": model, "condition": condition, "cell": cell,
                                   "game_index": k, "jester": jester,
                                   "lessons_in_prompt": len(book.all_texts()) if learning else 0})
            started = time.perf_counter()
            record = run_jobs([job], pool, log_path=log, max_concurrent_episodes=1)[0]
            progress(f"{cell} game {k}/{cfg.games}: {record.get('reason') or record.get('error')} "
                     f"({time.perf_counter() - started:.0f} s)")
        records.append(record)
        if learning and not book.reflected(k) and not record.get("failed"):
            if reflector is None:
                reflector = default_reflector(pool, cfg.reflector or model, cfg)
            if encoder is None:
                encoder = MiniLMEncoder()
            prompt = reflection_prompt(record, jester, book.lessons, cfg.reflect_chars)
            raw = reflector(prompt, seed)
            new, error = parse_lessons(raw)
            outcome = "won" if (record.get("rewards") or {}).get(jester, 0) > 0 else "lost"
            kept = book.add(k, new, encoder, outcome, raw, error)
            progress(f"{cell} game {k}: reflection kept {sum(map(len, kept.values()))} of "
                     f"{sum(map(len, new.values()))} lessons" + (f" ({error})" if error else ""))
    return records


def run_study(cfg: StudyConfig, pool: Optional[PolicyPool] = None, encoder=None,
              reflector: Optional[Reflector] = None, progress: Callable[[str], None] = print) -> dict:
    """Every cell in order (model by model, OFF before ON); returns {cell: records}."""
    for condition in cfg.conditions:
        if condition not in CONDITIONS:
            raise ValueError(f"unknown condition {condition!r}; valid: {', '.join(CONDITIONS)}")
    if not cfg.models:
        raise ValueError("no model to study; give policy specs, e.g. --models smollm2")
    pool = pool or PolicyPool(seed=cfg.seed)
    for spec in cfg.models:                     # before anything is played or written
        pool.check(spec, games=[GAME])
    if cfg.reflector and reflector is None and AgentSpec.of(cfg.reflector).kind != "scripted":
        pool.check(reflection_spec(cfg.reflector, cfg.reflect_tokens))
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "study.json").exists():
        # a run folder from before the regimes existed played shuffled deals
        earlier = json.loads((out / "study.json").read_text(encoding="utf-8")).get("roles", "shuffled")
        if earlier != cfg.roles:
            raise ValueError(f"{out} holds a study with roles={earlier}; resuming it with roles={cfg.roles} would "
                             "mix deals: use a new --out")
    atomic_write_text(out / "study.json", json.dumps({**asdict(cfg), "game": GAME, "game_config": game_config(cfg)},
                                                     indent=1))
    results = {}
    for model in cfg.models:
        for condition in cfg.conditions:
            results[cell_name(model, condition)] = run_cell(cfg, model, condition, pool, encoder, reflector, progress)
    return results


def parse_args(argv=None) -> StudyConfig:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="smollm2", help="policy specs, comma-separated")
    p.add_argument("--games", type=int, default=10, help="K games per cell")
    p.add_argument("--conditions", default="OFF,ON")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/jester")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    p.add_argument("--reflect-tokens", type=int, default=400)
    p.add_argument("--reflect-chars", type=int, default=12000)
    p.add_argument("--quick", action="store_true", help="2 days, 1 debate and 1 extra turn per day")
    p.add_argument("--reflector", default="", help="model spec that writes the lessons (default: the playing model)")
    p.add_argument("-c", "--config", action="append", default=[], help="game config key=value (repeatable)")
    p.add_argument("--roles", default="fixed", choices=ROLE_REGIMES,
                   help="fixed: the Jester keeps game 1's seat and name (the seed's main runs); shuffled: dealt per game")
    a = p.parse_args(argv)
    return StudyConfig(models=[m for m in a.models.split(",") if m], games=a.games,
                       conditions=[c for c in a.conditions.split(",") if c], seed=a.seed, out=a.out,
                       threshold=a.threshold, reflect_tokens=a.reflect_tokens, reflect_chars=a.reflect_chars,
                       quick=a.quick, reflector=a.reflector, config=parse_overrides(a.config), roles=a.roles)


def parse_overrides(items) -> dict:
    from socialgym_benchmarks.tournament.plan import parse_value
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"config override {item!r} must be key=value")
        out[key.strip()] = parse_value(value)
    return out


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(lambda: run_study(parse_args()), "socialgym_benchmarks.studies.triadic.study")
