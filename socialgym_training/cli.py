"""The training layer's commands, joined to the root ``socialgym`` app through the
``socialgym.commands`` entry point (``training = socialgym_training.cli:register``):

    socialgym export sft|dpo|grpo LOGS... --out DIR    training datasets from episode logs
    socialgym detect LOG --model DIR                   per-player suspicion from a trained detector
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from socialgym_training.detection_logs import DETECTION_GAMES
from socialgym_training.export import EXPORT_KINDS, OUTCOMES, ExportFilter, export


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _split(values: List[str]) -> list:
    """Repeatable options that also take comma-separated lists."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def export_cmd(kind: str = typer.Argument(..., help=f"what to build: {', '.join(EXPORT_KINDS)}"),
               logs: List[str] = typer.Argument(..., help="episode log files (.jsonl) or folders of them"),
               out: str = typer.Option(..., "--out", help="output folder (datasets save_to_disk + <split>.jsonl)"),
               game: List[str] = typer.Option([], "--game", help="keep these games (repeatable or a,b)"),
               role: List[str] = typer.Option([], "--role", help="keep these roles"),
               policy: List[str] = typer.Option([], "--policy", help="keep these policy specs (glob: 'smollm2*')"),
               outcome: List[str] = typer.Option([], "--outcome", help=f"keep seats with these outcomes: {', '.join(OUTCOMES)}"),
               phase: List[str] = typer.Option([], "--phase", help="keep these phases"),
               legal_only: bool = typer.Option(False, "--legal-only", help="only valid first-try replies"),
               test_fraction: float = typer.Option(0.1, "--test-fraction", help="share of episodes in the test split"),
               seed: int = typer.Option(0, help="seed of the episode split"),
               prompts_as: str = typer.Option("smollm2", "--prompts-as",
                                              help="LLM spec whose prompt a seat without a model (scripted, human) "
                                                   "is given in its rows (layout, trimming)"),
               tokenizer: str = typer.Option("smollm2", "--tokenizer",
                                             help="report the rows' token lengths (percentiles, longest) for this "
                                                  "model's tokenizer: smollm2, a .gguf or a model folder; '' = none"),
               candidates: int = typer.Option(4, "--candidates", help="dpo: legal actions compared per decision"),
               rollouts: int = typer.Option(8, "--rollouts", help="dpo: paired rollouts to the end per candidate"),
               alpha: float = typer.Option(0.05, "--alpha", help="dpo: keep a pair when the best-worst paired test, Holm-adjusted over the candidate pairs, gives p < alpha"),
               rollout_policy: str = typer.Option("", "--rollout-policy",
                                                  help="dpo: policy of every seat in the rollouts (default: the "
                                                       "episode's own)")):
    """Export decisions from episode logs as a Hugging Face dataset (chat format) plus JSONL:
    each row holds the whole chat the seat's policy was given; DPO pairs come from branching."""
    from socialgym_training.branching import BranchConfig
    if kind not in EXPORT_KINDS:
        _fail(f"unknown export {kind!r}; valid: {', '.join(EXPORT_KINDS)}")
    from socialgym_agents.registry import PolicySpecError, check_spec
    for option, spec in (("--prompts-as", prompts_as), ("--rollout-policy", rollout_policy)):
        try:
            if spec:
                check_spec(spec)
        except PolicySpecError as err:
            _fail(f"{option}: {err}")
    try:
        keep = ExportFilter(games=_split(game), roles=_split(role), policies=_split(policy),
                            outcomes=_split(outcome), phases=_split(phase), legal_only=legal_only)
        branch = BranchConfig(candidates=candidates, rollouts=rollouts, alpha=alpha)
        summary = export(kind, logs, out, keep, test_fraction=test_fraction, seed=seed, as_spec=prompts_as,
                         branch=branch, rollout_policy=rollout_policy, tokenizer=tokenizer)
    except (ValueError, FileNotFoundError, FileExistsError) as err:   # FileExistsError: --out holds other files
        _fail(str(err))
    typer.echo(json.dumps({"out": out, "rows": summary["rows"], "episodes": summary["episodes"],
                           "duplicates_dropped": summary.get("duplicates_dropped", 0),
                           "token_lengths": summary.get("token_lengths")}))


def suspicion_rows(record: dict, detector, cut: Optional[int] = None) -> tuple[int, list[dict]]:
    """(cut used, one row per player: name, suspicion, actual side from the log). The default cut
    is the last one the observer is asked at (just before the first role reveal)."""
    from socialgym_training.detection_data import cut_points, episode_examples, public_messages
    from socialgym_training.detector import predict
    cuts = cut_points(public_messages(record))
    if not cuts:
        return 0, []
    if cut is None:
        cut = cuts[-1]
    elif cut not in cuts:
        _fail(f"cut {cut} is not a cut point of {record['episode_id']}; valid: {', '.join(map(str, cuts))}")
    examples = [ex for ex in episode_examples(record) if ex.cut == cut]
    probs = predict(detector, [ex.text for ex in examples])
    names = {seat["agent"]: seat for seat in record["roster"]}
    rows = [{"agent": ex.target, "name": names[ex.target]["name"], "suspicion": float(p),
             "hidden": bool(ex.label), "role": names[ex.target]["role"]} for ex, p in zip(examples, probs)]
    return cut, sorted(rows, key=lambda r: -r["suspicion"])


def detect(log: Path, model: Path, episode: Optional[str] = None, cut: Optional[int] = None) -> None:
    from socialgym_env.logs import iter_log_dir
    from socialgym_training.detection_data import usable
    if not log.is_file():
        _fail(f"no log file at {log}")
    records = [r for r in iter_log_dir(log) if usable(r)]
    if not records:
        _fail(f"{log} holds no usable episode of a hidden-role game ({', '.join(DETECTION_GAMES)})")
    if episode is not None:
        chosen = [r for r in records if r["episode_id"] == episode]
        if not chosen:
            ids = ", ".join(r["episode_id"] for r in records[:5])
            _fail(f"no episode {episode!r} in {log}; e.g. {ids}")
        records = chosen
    from socialgym_training.detector import load_detector
    try:
        detector = load_detector(model)
    except FileNotFoundError as err:
        _fail(str(err))
    for record in records:
        used, rows = suspicion_rows(record, detector, cut)
        typer.echo(f"{record['episode_id']} ({record['game']}), after {used} public messages:")
        for r in rows:
            side = "hidden side" if r["hidden"] else ""
            typer.echo(f"  {r['name']:<12} {r['suspicion']:.3f}  {r['role']:<12} {side}")


def register(app: typer.Typer) -> None:
    """Add ``export`` and ``detect`` to the root app."""
    app.command("export")(export_cmd)

    @app.command("detect")
    def detect_cmd(
        log: Path = typer.Argument(..., help="an episode log (JSONL) of a hidden-role game"),
        model: Path = typer.Option(Path("runs/detector"), "--model", help="folder written by python -m socialgym_training.detector"),
        episode: Optional[str] = typer.Option(None, "--episode", help="one episode id (default: every episode in LOG)"),
        cut: Optional[int] = typer.Option(None, "--cut", help="public messages seen (default: all before the first role reveal)"),
    ):
        """Per-player suspicion (probability of being on the hidden side) from a trained detector;
        the players' actual roles from the log are shown beside it."""
        detect(log, model, episode, cut)


if __name__ == "__main__":   # python -m socialgym_training.cli export ... (before the root app loads entry points)
    import sys

    from socialgym_env.cli_errors import invoke_typer, main_of
    _app = typer.Typer(add_completion=False, no_args_is_help=True)
    register(_app)
    main_of(lambda: invoke_typer(_app, sys.argv[1:], "socialgym_training.cli"), "socialgym_training.cli")
