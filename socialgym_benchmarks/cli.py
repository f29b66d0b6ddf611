"""``socialgym tournament | leaderboard | replay`` — a typer sub-app over plain functions.

The root ``socialgym`` app loads ``register`` through the ``socialgym.commands`` entry point
(setup.cfg); or run ``python -m socialgym_benchmarks.cli tournament --quick``.
"""
from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from socialgym_agents.registry import PolicySpecError, parse_specs
from socialgym_env.cli_errors import check_output_file, check_output_folder, one_line

from .leaderboard.render import build_leaderboard, print_leaderboard
from .leaderboard.replay import write_replay
from .ratings import check_ties, skipped_note
from .tournament import plan as tour

app = typer.Typer(help="Elo tournaments, leaderboards and episode replays.", no_args_is_help=True,
                  add_completion=False)


MAX_EPISODES = tour.MAX_EPISODES


def _split(values: Optional[List[str]], option: str = "--games") -> Optional[list]:
    """Repeated and/or comma-separated values; None when the option was not given. Given but
    empty (``--games ","``) is bad input, never "all games"."""
    if not values:
        return None
    out = [x.strip() for v in values for x in v.split(",")]
    if not all(out):
        raise typer.BadParameter(f"{one_line(','.join(values))!r} has an empty entry", param_hint=option)
    twice = sorted({x for x in out if out.count(x) > 1})
    if twice:       # each game is played once per combination; a repeat would double its episodes' ids
        raise typer.BadParameter(f"names {one_line(', '.join(twice))} more than once", param_hint=option)
    return out


class BootstrapBy(str, Enum):
    """What a bootstrap resample draws (socialgym_benchmarks.ratings)."""
    episode = "episode"
    battle = "battle"


class Rating(str, Enum):
    """Which rating the leaderboard prints: Bradley–Terry alone, or openskill's beside it."""
    bt = "bt"
    openskill = "openskill"


class Interval(str, Enum):
    """How the leaderboard's Elo intervals are made (socialgym_benchmarks.ratings.rate)."""
    profile = "profile"
    bootstrap = "bootstrap"


TIES_HELP = ("same-value pairs in every rating: exclude (the paper's text, default) | split (one win and one loss "
             "each way, the paper's released code)")


def parse_prices(items) -> dict:
    """``SPEC=IN,OUT`` items -> {spec: (IN, OUT)}; the spec may itself hold '=' (split at the last)."""
    prices = {}
    for item in items:
        spec, sep, pair = item.rpartition("=")
        parts = pair.split(",")
        try:
            values = tuple(float(x) for x in parts)
        except ValueError:
            values = ()
        if not sep or not spec or len(values) != 2 or any(not v >= 0 for v in values):
            raise ValueError(f"{item!r} is not SPEC=IN,OUT (two non-negative prices per million tokens)")
        prices[spec] = values
    return prices


def _check_ties(ties: str) -> None:
    try:
        check_ties(ties)
    except ValueError as err:
        typer.echo(f"error: --ties: {err}", err=True)
        raise typer.Exit(2)


def run_tournament_command(games=None, agents=None, episodes=None, seed=0, out="runs/tournament",
                           backend="local", workers=None, resume=True, config_override=(), quick=False,
                           ray_address=None, bootstrap=1000, progress=True, retry_failed=True,
                           preset=None, scripted_episodes=None, ties="exclude", roster=(),
                           game_episodes=()) -> dict:
    """Typer-free body of ``tournament``: run, print the leaderboard and where files went;
    returns the TournamentResult. ``roster`` and ``game_episodes`` are the options' items
    (``GAME=SPEC,SPEC,...``, ``GAME=N``)."""
    result = tour.tournament(games=games, agents=agents or list(tour.DEFAULT_AGENTS), episodes=episodes,
                             seed=seed, out=out, backend=backend, workers=workers, resume=resume,
                             config_overrides=config_override or (), quick=quick, progress=progress,
                             ray_address=ray_address, n_boot=bootstrap, retry_failed=retry_failed,
                             preset=preset, scripted_episodes=scripted_episodes, ties=ties,
                             rosters=tour.parse_rosters(roster or ()),
                             game_episodes=tour.parse_game_episodes(game_episodes or ()))
    if result.summary:
        print_leaderboard(result.summary)
    retries = f" ({result.retried} of them failed before and were retried)" if result.retried else ""
    failures = (f"; {result.failed} of the episodes played now FAILED (their log records hold the error; "
                "a rerun retries them)") if result.failed else ""
    print(f"episodes: {result.planned} planned, {result.already_logged} already logged, "
          f"{result.played} played now{retries}{failures}")
    print(f"logs: {result.log_dir}")
    if not result.summary:
        print("no leaderboard: none of the episodes finished")
        return result
    replays = result.summary.get("replays") or {}
    if replays:
        print(f"replay: {Path(out) / next(iter(replays.values()))} (one page per game in {Path(out) / 'replays'})")
    print(f"plots: {Path(out) / 'elo_heatmap.png'}, {Path(out) / 'role_gap.png'}")
    print(f"leaderboard: {Path(out) / 'leaderboard.html'} (also .md, .csv, .json; links each game's replay)")
    return result


@app.command("tournament")
def tournament_cmd(
    games: Optional[List[str]] = typer.Option(None, "--games", help="game ids, comma-separated or repeated (default: all registered)"),
    agents: str = typer.Option(",".join(tour.DEFAULT_AGENTS), "--agents", help="policy specs, comma-separated"),
    episodes: Optional[int] = typer.Option(None, "--episodes", min=1, max=MAX_EPISODES, help=f"episodes per combination (default {tour.DEFAULT_EPISODES}; --quick: {tour.QUICK_EPISODES}; demo: {tour.DEMO_EPISODES})"),
    scripted_episodes: Optional[int] = typer.Option(
        None, "--scripted-episodes", min=1,
        help=f"episodes per combination of scripted policies only (default: --episodes; demo: {tour.DEMO_SCRIPTED_EPISODES})"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("runs/tournament"), "--out", help="folder for logs/ and the leaderboard"),
    backend: str = typer.Option("local", "--backend", help="local | ray"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="processes (local) or actors (ray); default: CPU count"),
    resume: bool = typer.Option(True, "--resume/--no-resume", help="skip episodes already in OUT/logs (--no-resume moves old logs aside)"),
    config_override: Optional[List[str]] = typer.Option(None, "--config-override", "-c", help="game.key=value or *.key=value (repeatable)"),
    quick: bool = typer.Option(False, "--quick", help="small preset: 2 episodes per combination, round counts capped, 12-decision cap"),
    preset: Optional[str] = typer.Option(None, "--preset", help="quick | demo (the main job: short per-game configs, every episode to its real end)"),
    game_roster: Optional[List[str]] = typer.Option(
        None, "--roster", help="GAME=SPEC,SPEC,...: GAME is played by these policies instead of --agents (repeatable)"),
    game_episodes: Optional[List[str]] = typer.Option(
        None, "--game-episodes", help="GAME=N: episodes per combination in GAME, scripted-only ones too (repeatable)"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster address (default: a local Ray instance)"),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="bootstrap resamples for the CIs"),
    retry_failed: bool = typer.Option(True, "--retry-failed/--no-retry-failed",
                                      help="on resume, play episodes logged as failed again (default)"),
    ties: str = typer.Option("exclude", "--ties", help=TIES_HELP),
    until_resolved: bool = typer.Option(False, "--until-resolved",
                                        help="adaptive: play in rounds, each where the ranking is least certain, and stop "
                                             "when every adjacent pair is resolved or --budget is spent (docs/tournament.md)"),
    budget: Optional[int] = typer.Option(None, "--budget", min=1, max=tour.MAX_PLANNED_EPISODES,
                                         help="with --until-resolved: the most episodes to play (required)"),
):
    """Play every policy combination on every game, then rate them (Bradley–Terry Elo)."""
    if backend not in ("local", "ray"):
        raise typer.BadParameter("--backend must be local or ray")
    if preset is not None and preset not in tour.PRESETS:
        typer.echo(f"error: unknown --preset {preset!r}; valid: {', '.join(tour.PRESETS)}", err=True)
        raise typer.Exit(2)
    _check_ties(ties)
    try:
        roster = parse_specs(agents)      # parsed once; the tournament takes these
    except PolicySpecError as err:
        raise typer.BadParameter(str(err), param_hint="--agents") from None
    check_output_folder(out, "--out")
    if until_resolved or budget is not None:
        _check_adaptive_options(until_resolved, budget, episodes is not None or scripted_episodes is not None
                                or backend != "local" or bool(game_roster) or bool(game_episodes))
        run_adaptive_command(games=_split(games), agents=roster, budget=budget, seed=seed, out=out, workers=workers,
                             resume=resume, config_override=config_override or (), quick=quick, preset=preset,
                             retry_failed=retry_failed, ties=ties)
        return
    result = run_tournament_command(games=_split(games), agents=roster, episodes=episodes, seed=seed, out=out,
                           backend=backend, workers=workers, resume=resume, config_override=config_override or (),
                           quick=quick, ray_address=ray_address, bootstrap=bootstrap, retry_failed=retry_failed,
                           preset=preset, scripted_episodes=scripted_episodes, ties=ties, roster=game_roster,
                           game_episodes=game_episodes)
    if result.failed:                  # not all that was asked was done: the exit code says so too
        raise typer.Exit(1)


def _check_adaptive_options(until_resolved: bool, budget: Optional[int], fixed_plan_options: bool) -> None:
    """--until-resolved needs --budget, and plans its own episodes and match-ups (exit 2 otherwise)."""
    if not until_resolved or budget is None:
        typer.echo("error: --until-resolved and --budget go together (an adaptive run needs its budget in episodes)",
                   err=True)
        raise typer.Exit(2)
    if fixed_plan_options:
        typer.echo("error: --until-resolved plans its own episodes and match-ups on the local backend: drop "
                   "--episodes, --scripted-episodes, --game-episodes, --roster and --backend", err=True)
        raise typer.Exit(2)


def run_adaptive_command(games, agents, budget, seed=0, out="runs/tournament", workers=None, resume=True,
                         config_override=(), quick=False, preset=None, retry_failed=True, ties="exclude",
                         progress=True):
    """Typer-free body of ``tournament --until-resolved``: run, print the leaderboard, the stop
    and the corrected intervals."""
    from .tournament.adaptive import adaptive_tournament
    try:
        result = adaptive_tournament(games, agents, budget, seed=seed, out=out, workers=workers, resume=resume,
                                     config_overrides=config_override, quick=quick, preset=preset,
                                     progress=progress, retry_failed=retry_failed, ties=ties)
    except ValueError as err:
        typer.echo(f"error: {one_line(str(err))}", err=True)
        raise typer.Exit(2)
    if result.summary.get("leaderboard"):
        print_leaderboard(result.summary["leaderboard"])
    final = result.summary["final"]
    why = "every adjacent pair resolved" if result.stop == "resolved" else "budget spent"
    print(f"adaptive: stopped after {result.planned} of {budget} budgeted episodes ({why}; "
          f"{len(result.summary['looks'])} of {result.summary['planned_looks']} planned looks); "
          f"{result.played} played now")
    print(f"adjacent pairs, Elo difference with its {100 * final['pair_level']:.3f}% interval "
          "(Bonferroni over looks and pairs):")
    for pair in final["pairs"]:
        lo, hi = (f"{v:+.0f}" if v is not None else "unbounded" for v in (pair["lo"], pair["hi"]))
        print(f"  {pair['upper']} > {pair['lower']}: {pair['gap']:+.0f} [{lo}, {hi}]"
              f"{'' if pair['resolved'] else '  (not resolved)'}")
    print(f"adaptive summary: {Path(out) / 'adaptive.json'} (plan: {Path(out) / 'adaptive_plan.json'}; "
          "the leaderboard's intervals are the fixed-sample ones)")
    return result


@app.command("leaderboard")
def leaderboard_cmd(logdir: Path = typer.Argument(..., help="a log file or a folder of *.jsonl logs"),
                    out: Path = typer.Option(Path("leaderboard"), "--out"),
                    bootstrap: int = typer.Option(1000, "--bootstrap", min=1),
                    by: BootstrapBy = typer.Option(BootstrapBy.episode, "--bootstrap-by",
                                                   help="resample whole episodes or single battles"),
                    ties: str = typer.Option("exclude", "--ties", help=TIES_HELP),
                    interval: Interval = typer.Option(Interval.profile, "--interval",
                                                      help="profile: profile likelihood (keeps coverage with few "
                                                           "episodes and under separation) | bootstrap: percentile"),
                    price: Optional[List[str]] = typer.Option(
                        None, "--price", help="SPEC=IN,OUT: a policy's price per million prompt (IN) and completion "
                                              "(OUT) tokens, for the cost column (repeatable)"),
                    rating: Rating = typer.Option(Rating.bt, "--rating",
                                                  help="bt: the Bradley–Terry Elo leaderboard | openskill: also the "
                                                       "openskill Plackett–Luce ratings (the arena's live ones), "
                                                       "in openskill.json and openskill.md")):
    """Rebuild the leaderboard files from logs alone."""
    _check_ties(ties)
    check_output_folder(out, "--out")
    try:
        prices = parse_prices(price or ())
    except ValueError as err:
        typer.echo(f"error: --price: {err}", err=True)
        raise typer.Exit(2)
    summary = build_leaderboard(logdir, out, n_boot=bootstrap, by=by.value, ties=ties, interval=interval.value,
                                prices=prices)
    print_leaderboard(summary)
    print(f"leaderboard: {out / 'leaderboard.html'} (also .md, .csv, .json, elo_heatmap.png, role_gap.png)")
    if rating is Rating.openskill:
        from .leaderboard.skill import build_skill_table, format_skill_table
        print("openskill (Plackett–Luce, episodes in log order; best first by mu - 3 sigma):")
        print(format_skill_table(build_skill_table(logdir, out)))
        print(f"openskill: {out / 'openskill.json'} (also openskill.md)")


def say_skipped(skipped: dict) -> None:
    """One line on what reading the logs skipped (failed, duplicate, bad lines), if anything."""
    note = skipped_note(skipped)
    if note:
        print(note)


@app.command("ratings-validity")
def ratings_validity_cmd(logdir: Path = typer.Argument(..., help="a log file or a folder of *.jsonl logs"),
                         folds: int = typer.Option(5, "--folds", min=2, help="folds, split by episode"),
                         seed: int = typer.Option(0, "--seed")):
    """Held-out log-loss and Brier score of each rating choice (pooled vs games-equal, ties left out vs
    split, Bradley–Terry vs online Elo), split by episode: which predicts outcomes best on these logs."""
    from .ratings.validity import format_table, validity_from_logs
    try:
        table, skipped = validity_from_logs(logdir, folds, seed)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    print(f"held-out decisive battles, {folds} folds by episode, seed {seed} (lower is better; "
          "differences to pooled are paired, se clustered by episode)")
    print(format_table(table))
    say_skipped(skipped)


@app.command("rate")
def rate_cmd(spec: str = typer.Argument(..., help="the policy to rate, e.g. scripted:win_stay_lose_shift or llm:..."),
             against: str = typer.Option("reference", "--against",
                                         help="reference (the shipped pool) or a pool folder made by "
                                              "python -m socialgym_benchmarks.tournament.reference build --out DIR"),
             episodes: Optional[int] = typer.Option(None, "--episodes", min=1, max=MAX_EPISODES,
                                                    help="episodes per reference and game (default: the pool's)"),
             seed: int = typer.Option(0, "--seed"),
             out: Path = typer.Option(Path("runs/rate"), "--out", help="folder for the new policy's logs (resumable)"),
             workers: Optional[int] = typer.Option(None, "--workers", min=1)):
    """Rate one policy offline against a frozen reference pool: it plays the references only, and its
    Elo is fitted with the references' ratings held fixed (docs/tournament.md)."""
    from .tournament.reference import ReferencePoolError, load_pool, rate_against
    check_output_folder(out, "--out")
    try:
        pool = load_pool(None if against == "reference" else against)
        parse_specs(spec)
        result = rate_against(spec, pool, episodes=episodes or pool.manifest["episodes_per_combination"], seed=seed,
                              out=out, workers=workers)
    except (ReferencePoolError, PolicySpecError) as err:
        typer.echo(f"error: {one_line(str(err))}", err=True)
        raise typer.Exit(2)
    lo, hi = (f"{v:.0f}" if math.isfinite(v) else "unbounded" for v in (result["lo"], result["hi"]))
    anchors = ", ".join(f"{p} {r:.0f}" for p, r in sorted(pool.ratings.items(), key=lambda kv: -kv[1]))
    print(f"{spec}: Elo {result['elo']:.0f} [{lo}, {hi}] ({100 * result['level']:.0f}% profile interval, "
          f"references held fixed) from {result['battles']} decisive battles in {result['episodes']} episodes")
    print(f"anchors ({pool.folder}): {anchors}")
    print(f"logs: {result['logs']}")
    say_skipped(result.get("skipped") or {})


@app.command("replay")
def replay_cmd(log: Path = typer.Argument(..., help="the JSONL log holding the episode"),
               episode: Optional[str] = typer.Option(None, "--episode", help="episode id (default: the first episode)"),
               index: int = typer.Option(0, "--index", help="without --episode: which episode of the log (0 = first)"),
               out: Path = typer.Option(Path("replay.html"), "--out")):
    """Write a self-contained HTML replay of one episode (the first one unless told otherwise)."""
    if not log.is_file():
        typer.echo(f"error: no log file at {log}" + (" (a folder; give one of its .jsonl logs)" if log.is_dir() else ""),
                   err=True)
        raise typer.Exit(2)
    check_output_file(out, "--out", replaced=True)
    try:
        path = write_replay(log, episode, out, index=index)
    except KeyError as err:
        typer.echo(f"error: {err.args[0]}", err=True)
        raise typer.Exit(2)
    print(f"replay: {path} (open it in a browser; add #seat=player_0 for a seat's private view)")


def register(root: typer.Typer) -> None:
    """``tournament``, ``leaderboard`` and ``replay`` join the root app at the top level."""
    root.registered_commands.extend(app.registered_commands)


if __name__ == "__main__":
    import sys

    from socialgym_env.cli_errors import invoke_typer, main_of
    main_of(lambda: invoke_typer(app, sys.argv[1:], "socialgym_benchmarks.cli"), "socialgym_benchmarks.cli")
