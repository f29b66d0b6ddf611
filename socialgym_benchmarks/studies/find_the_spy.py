"""Find the Spy data sets (seed 004): instances built from Undercover-style description rounds
by a chosen describer, baselines and model solvers, and the ``socialgym spy`` commands.

    socialgym spy generate --n 500 --seed 0 --describer hints --out data/spy.jsonl
    socialgym spy generate --n 500 --describer "openai:gpt-4o-mini@https://api.openai.com/v1?temperature=0.7" --out data/spy_llm.jsonl
    socialgym spy evaluate data/spy.jsonl --solver odd_one_out      (or random, always_civilian, a model spec)
    socialgym spy show data/spy.jsonl --index 0 --answer

The task itself (instance, prompt, exact scoring, rule-based describer, Gymnasium env
``socialgym/FindTheSpy-v0``) is engine code, :mod:`socialgym_env.socialmaze.spy`; this module
adds what calls policies. Settings default to the seed's: n = 4 players, T = 3 rounds, Player 1
holds the spy word in exactly 25% of a data set's instances. Instance i's seed is
``tournament.episode_seed(seed, "find_the_spy", [describer], i)``; generation appends one line per
instance and skips ids already in the file, so a killed run resumes.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

import typer

from socialgym_agents.registry import check_spec
from socialgym_agents.registry import is_model_spec
from socialgym_agents.runner import PolicyPool
from socialgym_env.atomic import append_records, drop_torn_tail
from socialgym_env.socialmaze.spy import (BASELINES, CIVILIAN, DEFAULT_PLAYERS, DEFAULT_ROUNDS, SPY, Describer,
                                          SpyInstance, build_instance, hint_describer, read_instances,
                                          score_spy_answer, spy_perspectives)

from socialgym_benchmarks.ratings import wilson_interval
from socialgym_benchmarks.tournament.plan import episode_seed

HINTS = "hints"
DESCRIBE_PROMPT = """You are Player {player} in the word game Find the Spy. {n} players each got a secret word: all but one share the same word, one (the Spy) got a different but related word. Nobody knows who the Spy is.
Your secret word is "{word}". Round {round} of {rounds}: describe your word in one short sentence from a new angle, without saying the word itself.
Descriptions so far:
{history}
Reply with only your description."""


def complete_text(policy, prompt: str, sample_seed: int) -> str:
    """One free-text completion from an LLM policy's backend."""
    from socialgym_agents.llm.backend import Completion
    reply = policy.backend.complete([Completion(("find-the-spy", sample_seed), [{"role": "user", "content": prompt}],
                                                sample_seed)])[0]
    if isinstance(reply, BaseException):
        raise reply
    return reply.text


def llm_describer(policy, seed: int, n_players: int, n_rounds: int) -> Describer:
    def describe(player: int, word: str, round_no: int, history: list) -> str:
        shown = "\n".join(f"Round {r}, Player {p}: {t}" for r, p, t in history) or "(none yet)"
        prompt = DESCRIBE_PROMPT.format(player=player, n=n_players, word=word, round=round_no, rounds=n_rounds,
                                        history=shown)
        return complete_text(policy, prompt, seed * 1000 + round_no * 10 + player)
    return describe


def check_model_spec(spec: str, other: str) -> None:
    """ValueError unless ``spec`` is a language-model spec that check_spec accepts (options,
    paths, URLs; nothing loaded). ``other`` names the built-in alternatives for the message."""
    if not is_model_spec(spec):
        raise ValueError(f"{spec!r} is not a language-model spec (smollm2, hf:..., openai:...) nor {other}")
    check_spec(spec)


def _llm_policy(pool: PolicyPool, spec: str):
    policy = pool.get(spec)
    if not hasattr(policy, "backend"):
        raise ValueError(f"{spec!r} is not a language-model spec (smollm2, hf:..., openai:...) nor {HINTS!r}")
    return policy


def generate(out, n: int, seed: int = 0, describer: str = HINTS, n_players: int = DEFAULT_PLAYERS,
             n_rounds: int = DEFAULT_ROUNDS, pool: Optional[PolicyPool] = None,
             progress: Callable[[str], None] = lambda s: None) -> list:
    """Write (or complete) ``n`` instances to the JSONL file ``out``; returns all n, in order."""
    out = Path(out)
    drop_torn_tail(out)              # the instance a killed run was writing is generated again
    done = {i.id: i for i in read_instances(out)} if out.exists() else {}
    policy = None if describer == HINTS else _llm_policy(pool or PolicyPool(seed=seed), describer)
    flags = spy_perspectives(n, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    instances = []
    for i in range(n):
        iid = f"spy-s{seed}-{i:06d}"
        if iid not in done:
            s = episode_seed(seed, "find_the_spy", [describer], i)
            describe = hint_describer(random.Random(s)) if policy is None else \
                llm_describer(policy, s, n_players, n_rounds)
            inst = build_instance(iid, s, flags[i], describe, describer, n_players, n_rounds)
            append_records(out, (json.dumps(inst.to_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
            done[iid] = inst
            progress(f"{i + 1}/{n} {iid}")
        instances.append(done[iid])
    return instances


def solver_for(name: str, pool: Optional[PolicyPool] = None) -> Callable[[SpyInstance], str]:
    if name in BASELINES:
        return BASELINES[name]
    policy = _llm_policy(pool or PolicyPool(), name)
    return lambda inst: complete_text(policy, inst.prompt(), inst.seed)


def evaluate(instances, solver: Callable[[SpyInstance], str]) -> dict:
    """Accuracy (both parts right), spy-only and role-only accuracy, overall and per
    perspective (Player 1 = Spy / Civilian), each with its Wilson 95% interval."""
    hits = Counter()
    for inst in instances:
        result = score_spy_answer(solver(inst), inst)
        for group in ("all", inst.player1_role):
            hits[(group, "n")] += 1
            hits[(group, "accuracy")] += result.reward == 1.0
            hits[(group, "spy")] += result.spy_correct
            hits[(group, "role")] += result.role_correct
    report = {}
    for group in ("all", SPY, CIVILIAN):
        n = hits[(group, "n")]
        row = {"n": n}
        for metric in ("accuracy", "spy", "role"):
            k = hits[(group, metric)]
            row[metric] = k / n if n else None
            row[f"{metric}_ci"] = wilson_interval(k, n)
        report[group] = row
    return report


# ----------------------------------------------------------------------------- CLI
app = typer.Typer(help="SocialMaze Find the Spy: generate, inspect and score data sets.", no_args_is_help=True,
                  add_completion=False)


def _fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(2)


@app.command("generate")
def generate_cmd(out: Path = typer.Option(..., "--out", "-o", help="JSONL file to write (completed if it exists)"),
                 n: int = typer.Option(100, "--n", min=0, help="number of instances"),
                 seed: int = typer.Option(0, "--seed"),
                 describer: str = typer.Option(HINTS, "--describer", help="'hints' (rule-based) or a model spec (smollm2, hf:..., openai:...)"),
                 players: int = typer.Option(DEFAULT_PLAYERS, "--players", min=3),
                 rounds: int = typer.Option(DEFAULT_ROUNDS, "--rounds", min=1)):
    """Write N instances; Player 1 holds the spy word in exactly 25% of them."""
    try:
        if describer != HINTS:
            check_model_spec(describer, repr(HINTS))     # before any row is written or model loaded
        data = generate(out, n, seed, describer, players, rounds, progress=lambda s: None)
    except ValueError as err:
        _fail(str(err))
    roles = Counter(i.player1_role for i in data)
    typer.echo(f"{len(data)} instances in {out} (players={players}, rounds={rounds}, describer={describer}); "
               f"Player 1: {roles[SPY]} Spy, {roles[CIVILIAN]} Civilian")


@app.command("evaluate")
def evaluate_cmd(path: Path = typer.Argument(..., help="JSONL data set"),
                 solver: str = typer.Option("odd_one_out", "--solver",
                                            help=f"a baseline ({', '.join(BASELINES)}) or a model spec")):
    """Accuracy overall and per perspective, with Wilson 95% intervals."""
    if not path.is_file():
        _fail(f"{path} is not a file; give a JSONL data set written by 'socialgym spy generate'")
    if solver not in BASELINES:
        try:                            # before reading the data or loading a model
            check_model_spec(solver, "a baseline")
        except ValueError as err:
            _fail(f"--solver: {err}; valid solvers: {', '.join(BASELINES)} or a model spec")
    report = evaluate(read_instances(path), solver_for(solver))      # a bad file: one line (socialgym_env.cli_errors)
    for group, row in report.items():
        if row["n"]:
            lo, hi = row["accuracy_ci"]
            typer.echo(f"{solver} {group}: n={row['n']} accuracy={row['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] "
                       f"spy={row['spy']:.3f} role={row['role']:.3f}")


@app.command("show")
def show_cmd(path: Path = typer.Argument(..., help="JSONL data set"),
             index: int = typer.Option(0, "--index", "-i"),
             answer: bool = typer.Option(False, "--answer", help="also print the answer and words")):
    """Print one instance's prompt."""
    if not path.is_file():
        _fail(f"{path} is not a file")
    data = read_instances(path)
    if not data:
        _fail(f"{path} holds no instances")
    if not 0 <= index < len(data):
        _fail(f"--index must be in 0..{len(data) - 1}")
    inst = data[index]
    typer.echo(inst.prompt())
    if answer:
        typer.echo(f"\nAnswer: Spy: Player {inst.spy}; My role: {inst.player1_role} "
                   f"(civilian word {inst.civilian_word!r}, spy word {inst.spy_word!r}, describer {inst.describer})")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="spy")
