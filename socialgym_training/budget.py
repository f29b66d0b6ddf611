"""One budget of play for three ways to train on a game side: rejection-sampling fine-tuning
(:mod:`socialgym_training.rft`), a decision head on frozen features
(:mod:`socialgym_training.decision_head`) and turn-level GRPO (:mod:`socialgym_training.selfplay`,
``--advantage turn``), each evaluated after every iteration on the same held-out deals as the base.

    python -m socialgym_training.budget --iterations 2 --episodes 8 --eval_seeds 16 --out runs/budget

Each method gets ``--episodes`` episodes of play per iteration on ``--side`` (a team, every
other seat ``--opponents``), so after ``k`` iterations every method has played ``k x episodes``
episodes: RFT and the head on the same training deals (``seed * 1_000_000 + 1000 * k + e``), GRPO
on the self-play trainer's own deals. Iteration 0 is the base model for all three
(``smollm2?mode=score&temperature=T&<llm_options>``), evaluated once. Every evaluation plays the
``--eval_seeds`` held-out deals (``500_000 + 1000 * seed + j``), so each method's win rate is
paired with the base's by deal.

Writes to ``--out``:

| file | holds |
|------|-------|
| ``results.jsonl`` | one line per (method, iteration) evaluated: the spec played, wins per deal, the training numbers |
| ``summary.json`` | per method and iteration: win rate with its exact (Clopper-Pearson) 95% interval, the paired difference from the base (exact McNemar p, paired bootstrap interval, ``socialgym_agents.paired``) |
| ``curve.png`` | win rate against iterations (episodes of play), one line per method, intervals as bars |
| ``eval/``, ``rft/``, ``head/``, ``grpo/`` | the evaluation logs, each method's play logs, rows, adapters, heads and features |

Resumable in pieces: a (method, iteration) whose line is in ``results.jsonl`` is skipped; the
episode logs resume by episode id, the SFT by its checkpoints, GRPO by its own ``--resume``
(one ``--piece_steps 1`` piece per iteration). Kill it anywhere and run the same line again.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from socialgym_training.configs import RunArgs, ThreadArgs

METHODS = ("rft", "head", "grpo")


@dataclass
class Config(RunArgs, ThreadArgs):
    game: str = "werewolves"
    """Game id"""
    game_config: str = '{"max_cycles": 3}'
    """The game's config as JSON"""
    side: str = "werewolves"
    """The team every method plays (each of its seats); the other seats play --opponents"""
    opponents: str = "scripted:heuristic"
    """Policy spec of every other seat"""
    methods: str = "rft,head,grpo"
    """Comma-separated: rft, head, grpo"""
    iterations: int = 2
    """Training iterations per method"""
    episodes: int = 8
    """Episodes of play per iteration and method (the budget)"""
    eval_seeds: int = 16
    """Held-out deals every evaluation plays"""
    temperature: float = 1.0
    """Sampling temperature of every learner decision (training and evaluation)"""
    llm_options: str = "max_new_tokens=24&talk=pass"
    """Further LLM options of every learner spec"""
    rft_learning_rate: float = 2e-4
    """RFT: the SFT's learning rate"""
    rft_epochs: float = 1.0
    """RFT: passes over the kept rows"""
    rft_max_examples: int = 64
    """RFT: rows per SFT (a seeded sample of the kept ones)"""
    head_learning_rate: float = 0.1
    """Head: gradient step size"""
    head_epochs: int = 20
    """Head: gradient steps per iteration on the cached features"""
    head_l2: float = 0.01
    """Head: penalty on moving from the head that played"""
    grpo_learning_rate: float = 1e-3
    """GRPO: the LoRA's learning rate"""
    out: str = "runs/budget"


def game_kwargs(config: Config) -> dict:
    return json.loads(config.game_config) if config.game_config else {}


def base_spec(config: Config, **options) -> str:
    """The learner's spec: the embedded model in scoring mode, plus ``options`` (adapter=, head=)."""
    extra = "".join(f"&{k}={v}" for k, v in options.items())
    return f"smollm2?mode=score&temperature={config.temperature}&{config.llm_options}{extra}"


def train_seeds(config: Config, iteration: int) -> list:
    return [config.seed * 1_000_000 + 1000 * iteration + e for e in range(config.episodes)]


def eval_seeds(config: Config) -> list:
    return [500_000 + 1000 * config.seed + j for j in range(config.eval_seeds)]


def side_jobs(config: Config, spec: str, seeds: list, tag: str) -> list:
    """One episode per seed: the side's seats (dealt by the seed) play ``spec``, the rest the opponents."""
    import socialgym_env
    from socialgym_agents.runner import EpisodeJob
    env = socialgym_env.make(config.game, log_observations=False, **game_kwargs(config))
    jobs = []
    for seed in seeds:
        env.reset(seed=seed)
        teams = [env.state.team(a) for a in env.possible_agents]
        seats = [spec if team == config.side else config.opponents for team in teams]
        jobs.append(EpisodeJob(config.game, seed, seats, game_kwargs(config), episode_id=f"{tag}-{seed}"))
    return jobs


def play(config: Config, pool, spec: str, seeds: list, log: Path, tag: str) -> list:
    """The side's episodes on ``seeds`` (resumed from ``log``), their records in seed order."""
    from socialgym_agents.runner import run_jobs
    from socialgym_env.logs import iter_log_dir
    jobs = side_jobs(config, spec, seeds, tag)
    run_jobs(jobs, pool, log_path=log)
    by_id = {r["episode_id"]: r for r in iter_log_dir(log)}
    return [by_id[j.episode_id] for j in jobs]


def side_won(config: Config, record: dict) -> int:
    """1 when the side won the episode (its seats' outcome), else 0; a failed episode counts as lost."""
    seats = [s["agent"] for s in record.get("roster", []) if s.get("team") == config.side]
    return int(bool(seats) and (record.get("outcomes") or {}).get(seats[0]) == "win")


def evaluate(config: Config, pool, spec: str, name: str) -> dict:
    records = play(config, pool, spec, eval_seeds(config), Path(config.out) / "eval" / f"{name}.jsonl", f"eval-{name}")
    return {str(r["seed"]): side_won(config, r) for r in records}


def record_stage(out: Path, line: dict) -> None:
    from socialgym_env.atomic import append_records
    append_records(out / "results.jsonl", (json.dumps(line, sort_keys=True) + "\n").encode())


def train_rft(config: Config, pool, iteration: int) -> tuple:
    """Play with the last RFT adapter, keep the winners' decisions, fine-tune from the base on all
    rows kept so far; returns (spec to evaluate, numbers)."""
    from socialgym_training.rft import fine_tune, winning_rows
    folder = Path(config.out) / "rft"
    last = folder / f"sft-{iteration - 1}" / "adapter"
    spec = base_spec(config, adapter=last) if iteration > 1 else base_spec(config)
    play(config, pool, spec, train_seeds(config, iteration), folder / f"play-{iteration}.jsonl", f"rft{iteration}")
    logs = [folder / f"play-{i}.jsonl" for i in range(1, iteration + 1)]
    rows = winning_rows(logs, config.side)
    adapter = folder / f"sft-{iteration}" / "adapter"
    if rows and not (adapter / "adapter_config.json").exists():
        fine_tune(rows, folder / f"data-{iteration}", folder / f"sft-{iteration}", config)
    if not rows:                      # nothing won yet: the policy stays what it was
        return spec, {"rows": 0}
    return base_spec(config, adapter=adapter), {"rows": len(rows)}


def train_head(config: Config, pool, iteration: int) -> tuple:
    """Play with the last head recording the features of its decisions, then update it on them."""
    from socialgym_agents.llm.decision_head import DecisionHead
    from socialgym_training.decision_head import Decisions, HeadTraining, recording, update_head
    folder = Path(config.out) / "head"
    folder.mkdir(parents=True, exist_ok=True)
    last = folder / f"head-{iteration - 1}.json"
    if iteration == 1 and not last.exists():
        DecisionHead.fresh(_hidden_size(pool, config)).save(last)
    spec = base_spec(config, head=last)
    cached = folder / f"decisions-{iteration}.npz"
    if cached.exists():
        decisions = Decisions.load(cached)
    else:
        log = folder / f"play-{iteration}.jsonl"
        log.unlink(missing_ok=True)        # features are kept with a whole batch only: replay it all
        with recording(pool.get(spec), Decisions()) as decisions:
            records = play(config, pool, spec, train_seeds(config, iteration), log, f"head{iteration}")
        decisions.reward_from(records)
        decisions.save(cached)
    head = DecisionHead.load(last)
    numbers = update_head(head, decisions, HeadTraining(config.temperature, config.head_learning_rate,
                                                        config.head_epochs, l2=config.head_l2))
    head.save(folder / f"head-{iteration}.json")
    return base_spec(config, head=folder / f"head-{iteration}.json"), numbers


def _hidden_size(pool, config: Config) -> int:
    """The base model's hidden size (the fresh head's width), from the base policy's backend."""
    return int(pool.get(base_spec(config)).backend.model.config.hidden_size)


def train_grpo(config: Config, pool, iteration: int) -> tuple:
    """One ``--piece_steps 1`` piece of the self-play trainer (turn-level advantages, the side
    against the opponents): one GRPO step on ``--episodes`` episodes."""
    run = Path(config.out) / "grpo" / "run"
    checkpoint = run / "checkpoints" / f"step{iteration}"
    if not (checkpoint / "adapter_config.json").exists():
        options = dict(pair.split("=", 1) for pair in config.llm_options.split("&") if "=" in pair)
        command = [sys.executable, "-m", "socialgym_training.selfplay", "--game", config.game,
                   "--game_config", config.game_config, "--train_teams", config.side,
                   "--fixed_opponents", config.opponents, "--self_play", "0", "--fixed_share", "1",
                   "--episodes_per_step", str(config.episodes), "--group_size", "1",
                   "--rows_per_step", str(config.episodes * _side_seats(config)), "--advantage", "turn",
                   "--talk", options.get("talk", "free"), "--max_new_tokens", options.get("max_new_tokens", "24"),
                   "--temperature", str(config.temperature), "--learning_rate", str(config.grpo_learning_rate),
                   # one more step than the iterations: every piece ends by --piece_steps, none evaluates
                   "--steps", str(config.iterations + 1), "--snapshot_every", "1", "--save_every", "1",
                   "--piece_steps", "1", "--resume", "true", "--bf16", "true", "--threads", str(config.threads),
                   "--device", "cpu", "--seed", str(config.seed), "--progress", "false", "--out", str(run)]
        subprocess.run(command, check=True)
    return base_spec(config, adapter=checkpoint), {"checkpoint": str(checkpoint)}


def _side_seats(config: Config) -> int:
    return sum(1 for seat in side_jobs(config, "x", eval_seeds(config)[:1], "n")[0].seats if seat == "x")


TRAINERS = {"rft": train_rft, "head": train_head, "grpo": train_grpo}


def check_config(config: Config) -> list:
    """One line and exit 2 for a bad option, before anything loads; the methods to run."""
    from socialgym_training.common import fail
    methods = [m for m in config.methods.split(",") if m]
    if not methods or any(m not in METHODS for m in methods):
        fail(f"--methods takes a comma-separated list of {', '.join(METHODS)}, got {config.methods!r}")
    if config.iterations < 1 or config.episodes < 1 or config.eval_seeds < 1 or config.temperature <= 0:
        fail("--iterations, --episodes and --eval_seeds must be at least 1 and --temperature above 0")
    try:
        game_kwargs(config)
        if _side_seats(config) == 0:
            fail(f"--side {config.side!r} is no team of {config.game} (seed {eval_seeds(config)[0]})")
    except (KeyError, ValueError) as err:
        fail(str(err).strip("'\""))
    return methods


def main(argv=None) -> dict:
    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import parse_config
    from socialgym_training.budget_report import done_stages, write_summary
    config = parse_config(Config, argv)
    methods = check_config(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    done = done_stages(out)
    pool = PolicyPool(seed=config.seed)
    if ("base", 0) not in done:
        started = time.time()
        record_stage(out, {"method": "base", "iteration": 0, "episodes": 0, "spec": base_spec(config),
                           "wins": evaluate(config, pool, base_spec(config), "base-0"),
                           "seconds": round(time.time() - started, 1)})
    for method in methods:
        for iteration in range(1, config.iterations + 1):
            if (method, iteration) in done:
                continue
            started = time.time()
            spec, numbers = TRAINERS[method](config, pool, iteration)
            wins = evaluate(config, pool, spec, f"{method}-{iteration}")
            record_stage(out, {"method": method, "iteration": iteration, "episodes": iteration * config.episodes,
                               "spec": spec, "wins": wins, "training": numbers,
                               "seconds": round(time.time() - started, 1)})
    return write_summary(out, config.seed)


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.budget")
