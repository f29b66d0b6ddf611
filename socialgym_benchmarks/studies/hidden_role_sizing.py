"""Size a trained gain on a hidden-role game before running it (issue 63, item 1).

    python -m socialgym_benchmarks.studies.hidden_role_sizing --out runs/hidden_role_sizing --episodes 12
        [--model SPEC] [--games chameleon,spyfall] [--sides werewolves:village] [--seed 0] [--budget-hours 8]
        [--report]

For every hidden-role game and each of its sides (``SIDES``), two arms play the same seeded deals
(seeds ``seed .. seed+episodes-1``; the deal and every scripted seat's draws depend on the seed
only): ``model``, the side's seats played by ``--model`` (default: make demo's SmolLM2 spec) and
every other seat ``scripted:heuristic``; and ``heuristic``, the side's seats heuristic too (the
ceiling a trained model aims at). Each game is played with the main job's demo config
(:func:`~socialgym_benchmarks.tournament.plan.demo_config`): a trained policy would join the main
job's roster on that game.

The table (Markdown, printed) gives per game and side: the side's win rate per arm with its exact
(Clopper-Pearson) 95% interval, the model's decisions per episode, episodes a minute with the
model on this CPU (wall time of the model arm's episodes, played batched as the tournament plays
them, the model loaded before the clock starts), and the paired sample size of a powered run:

- design: the trained model against its base on the same deals, exact McNemar test (two-sided)
  at ``ALPHA`` = 0.01, ``POWER`` = 80%, for an effect of half the base-to-heuristic gap
  (p1 = p0 + (pH - p0) / 2);
- discordance model: the two arms' outcomes are independent given the deal, so a deal is won by
  the trained arm only with p10 = p1 (1 - p0) and by the base only with p01 = p0 (1 - p1).
  Outcomes positively correlated within a deal make fewer discordant deals, so this is the
  conservative case;
- power is computed exactly (:func:`mcnemar_power`: the binomial number of discordant deals,
  then the binomial split of them) and counts only rejections with the trained arm ahead; the
  tests check it against a simulation that plays the test with scipy's ``binomtest``.

``minutes/arm`` is n divided by the measured episodes a minute; a powered run plays two model
arms (trained and base) on n deals, so it ``fits`` when 2 n / (episodes a minute) is within
``--budget-hours`` (default 8 h of this CPU; training itself is extra). A pilot's few deals leave
wide intervals, so the table also sizes the gap between the intervals' inner ends (the base at
its upper bound, the heuristic at its lower). Of the sides that fit, the cheapest is marked
``chosen``, one that fits even at those ends first.

Resumable in pieces: a piece is one (game, side, arm); its episodes go to
``--out``/episodes/<game>.<side>.<arm>.jsonl (a killed piece resumes after its last logged
episode) and, once complete, one line to ``--out``/pieces.jsonl (appended atomically). A rerun
skips every piece already there (same game, side, arm, spec, seeds and config) and counts each
episode once. ``--report`` prints the table from what is there without playing.
"""
from __future__ import annotations

import argparse
import json
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from scipy.stats import binom, binomtest

import socialgym_env
from socialgym_agents.registry import check_spec
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_env.atomic import append_records, drop_torn_tail
from socialgym_env.logs import iter_log_dir

from socialgym_benchmarks.tournament.plan import demo_config

# ----------------------------------------------------------------------------- configuration
# make demo's SmolLM2 spec (the Makefile's demo line): the base model a training run starts from.
DEFAULT_MODEL = "smollm2?dtype=auto&temperature=0.7&context=2048&batch_size=8&template=compact"
HEURISTIC = "scripted:heuristic"
ARMS = ("model", "heuristic")
# game -> its sides (teams), the hidden side first; issue 63's list of hidden-role games.
SIDES = {
    "chameleon": ("chameleon", "citizens"),
    "spyfall": ("spy", "non_spies"),
    "insider": ("insider", "commons"),
    "undercover": ("undercovers", "civilians"),
    "werewolves": ("werewolves", "village"),
    "resistance": ("spies", "resistance"),
    "triadic_werewolf": ("werewolves", "village", "jester"),
}
ALPHA = 0.01            # issue 63's pre-registered level
POWER = 0.80
EFFECT_SHARE = 0.5      # the effect to detect: this share of the base-to-heuristic gap
BUDGET_HOURS = 8.0
MAX_PAIRS = 10 ** 6     # beyond this a gap is reported as unreachable (">1,000,000")


# ----------------------------------------------------------------------------- statistics
def clopper_pearson(wins: int, n: int, level: float = 0.95) -> tuple:
    """Exact (Clopper-Pearson) interval of a win rate; (0, 1) when nothing was played."""
    if n <= 0:
        return 0.0, 1.0
    ci = binomtest(int(wins), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def critical_counts(discordant: np.ndarray, alpha: float) -> np.ndarray:
    """For each number D of discordant deals, the largest count c such that the two-sided exact
    McNemar test (binomial, p = 1/2) rejects when the smaller of the two discordant counts is
    <= c; -1 where no split rejects. Its p-value is 2 F(c; D, 1/2), so c is the largest with
    F(c) <= alpha / 2."""
    d = np.asarray(discordant)
    c = binom.ppf(alpha / 2, d, 0.5)               # the smallest c with F(c) >= alpha / 2
    c = np.where(binom.cdf(c, d, 0.5) > alpha / 2 * (1 + 1e-9), c - 1, c)
    return np.where(d > 0, c, -1).astype(int)


def discordance(p0: float, p1: float) -> tuple:
    """(p10, p01): a deal won by the trained arm only, by the base only (independent given the deal)."""
    return p1 * (1 - p0), p0 * (1 - p1)


def mcnemar_power(n: int, p0: float, p1: float, alpha: float = ALPHA) -> float:
    """Exact probability that the two-sided exact McNemar test at ``alpha`` rejects with the
    trained arm ahead, over ``n`` paired deals (base wins with p0, trained with p1)."""
    p10, p01 = discordance(p0, p1)
    pd = p10 + p01
    if n <= 0 or pd <= 0:
        return 0.0
    lo, hi = binom.ppf(1e-12, n, pd), binom.isf(1e-12, n, pd)   # where the discordant count can fall
    d = np.arange(int(max(lo - 1, 1)), int(min(hi + 1, n)) + 1)
    c = critical_counts(d, alpha)
    # trained-only wins b ~ Binomial(D, p10 / pd); rejecting with the trained arm ahead: D - b <= c
    ahead = np.where(c >= 0, binom.sf(d - c - 1, d, p10 / pd), 0.0)
    return float(np.sum(binom.pmf(d, n, pd) * ahead))


def paired_sample_size(p0: float, p1: float, alpha: float = ALPHA, power: float = POWER,
                       max_pairs: int = MAX_PAIRS) -> Optional[int]:
    """The number of paired deals at which :func:`mcnemar_power` first reaches ``power`` (found by
    doubling, then bisection; the exact power saw-tooths in n, so a few smaller n may also reach
    it, and the n returned always does); None when p1 <= p0 or beyond ``max_pairs``."""
    if p1 <= p0:
        return None
    hi = 8
    while mcnemar_power(hi, p0, p1, alpha) < power:
        if hi >= max_pairs:
            return None
        hi = min(2 * hi, max_pairs)
    lo = hi // 2                                   # power(lo) < power (or lo is below the start)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mcnemar_power(mid, p0, p1, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=None)
def _exact_mcnemar_p(ahead: int, behind: int) -> float:
    return binomtest(ahead, ahead + behind, 0.5).pvalue if ahead + behind else 1.0


def simulated_power(n: int, p0: float, p1: float, alpha: float = ALPHA, reps: int = 2000, seed: int = 0,
                    either_way: bool = False) -> float:
    """Share of ``reps`` simulated paired runs (n deals, each arm's outcome drawn independently
    given the deal) in which scipy's exact binomial test on the discordant deals rejects at
    ``alpha`` with the trained arm ahead (or in either direction: ``either_way``, the null check)."""
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(reps):
        base, trained = rng.random(n) < p0, rng.random(n) < p1
        ahead, behind = int(np.sum(trained & ~base)), int(np.sum(base & ~trained))
        if _exact_mcnemar_p(ahead, behind) <= alpha and (either_way or ahead > behind):
            rejected += 1
    return rejected / reps


# ----------------------------------------------------------------------------- playing
def side_agents(game: str, seed: int, side: str, config: dict) -> list:
    """The seats (agent ids) on ``side`` in the deal of ``seed``."""
    env = socialgym_env.make(game, **config)
    env.reset(seed=seed)
    return [a for a in env.possible_agents if env.state.team(a) == side]


def piece_jobs(game: str, side: str, spec: str, seeds: list, config: dict) -> list:
    """One job per seed: the side's seats ``spec``, every other seat the heuristic."""
    env = socialgym_env.make(game, **config)
    jobs = []
    for seed in seeds:
        env.reset(seed=seed)
        seats = [spec if env.state.team(a) == side else HEURISTIC for a in env.possible_agents]
        jobs.append(EpisodeJob(game, seed, seats, config=dict(config), tags={"side": side}))
    return jobs


def episode_outcome(record: dict, side: str) -> tuple:
    """(1 if a seat of ``side`` is among the winners else 0, the side's decisions)."""
    agents = {s["agent"] for s in record["roster"] if s["team"] == side}
    won = int(any(a in agents for a in record.get("winners", [])))
    return won, sum(1 for turn in record["turns"] if turn["agent"] in agents)


def logged_episodes(path: Path, ids: set) -> dict:
    """{episode id: record} of the log's completed episodes among ``ids``, each counted once
    (a retried episode's completed record replaces its failed one)."""
    out = {}
    if path.exists():
        for record in iter_log_dir(path):
            if record.get("episode_id") in ids and not (record.get("failed") and record["episode_id"] in out):
                out[record["episode_id"]] = record
    return out


def play_piece(key: dict, pool: PolicyPool, logs: Path) -> dict:
    """Play (or finish) one piece and return its line for pieces.jsonl."""
    game, side, spec = key["game"], key["side"], key["spec"]
    jobs = piece_jobs(game, side, spec, key["seeds"], key["config"])
    log = logs / f"{game}.{side}.{key['arm']}.jsonl"
    drop_torn_tail(log)
    started = time.perf_counter()
    played = run_jobs(jobs, pool, log_path=log, resume=True)
    seconds = time.perf_counter() - started
    records = logged_episodes(log, {j.episode_id for j in jobs})
    outcomes, failed = {}, []
    for job in jobs:
        record = records.get(job.episode_id)
        if record is None or record.get("failed"):
            failed.append(job.seed)
        else:
            outcomes[str(job.seed)] = episode_outcome(record, side)
    return dict(key, outcomes=outcomes, failed=failed, played=len(played), seconds=round(seconds, 2))


# ----------------------------------------------------------------------------- pieces file
def piece_key(game: str, side: str, arm: str, model: str, episodes: int, seed: int) -> dict:
    return {"game": game, "side": side, "arm": arm, "spec": model if arm == "model" else HEURISTIC,
            "seeds": list(range(seed, seed + episodes)), "config": demo_config(game)}


def _key_text(piece: dict) -> str:
    return json.dumps({k: piece[k] for k in ("game", "side", "arm", "spec", "seeds", "config")}, sort_keys=True)


def read_pieces(path: Path) -> dict:
    """{key text: piece} of the complete pieces in ``path``; a piece written twice counts once
    (the first), a torn last line (a killed append) is skipped."""
    pieces = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                piece = json.loads(line)
            except json.JSONDecodeError:
                continue
            pieces.setdefault(_key_text(piece), piece)
    return pieces


def run_pieces(out: Path, keys: list, pool: PolicyPool, play: Callable = play_piece,
               say: Callable[[str], None] = print) -> dict:
    """Play every piece of ``keys`` not yet in ``out``/pieces.jsonl, appending each as it ends."""
    path = out / "pieces.jsonl"
    drop_torn_tail(path)
    done = read_pieces(path)
    for key in keys:
        text = _key_text(key)
        if text in done:
            continue
        say(f"playing {key['game']} / {key['side']} / {key['arm']} ({len(key['seeds'])} episodes)")
        piece = play(key, pool, out / "episodes")
        append_records(path, (json.dumps(piece, sort_keys=True) + "\n").encode("utf-8"))
        done[text] = piece
        say(f"  done in {piece['seconds']:.0f} s: {sum(w for w, _ in piece['outcomes'].values())}"
            f"/{len(piece['outcomes'])} side wins, {len(piece['failed'])} failed")
    return done


# ----------------------------------------------------------------------------- the table
def side_row(model_piece: Optional[dict], heuristic_piece: Optional[dict], budget_hours: float) -> dict:
    """One game-side's figures from its two pieces (either may be missing); both arms' win rates
    over the deals both completed (paired)."""
    pieces = {arm: piece for arm, piece in (("model", model_piece), ("heuristic", heuristic_piece)) if piece}
    common = set.intersection(*[set(p["outcomes"]) for p in pieces.values()]) if pieces else set()
    row = {}
    for arm, piece in pieces.items():
        wins = sum(piece["outcomes"][s][0] for s in common)
        row[arm] = (wins, len(common), *clopper_pearson(wins, len(common)))
        decisions = [d for _, d in piece["outcomes"].values()]
        row[f"{arm}_decisions"] = sum(decisions) / len(decisions) if decisions else None
    if model_piece and model_piece["outcomes"]:
        # a piece played in under the clock's resolution (scripted stand-ins) has no rate
        timed = model_piece["played"] and model_piece["seconds"] > 0
        row["per_minute"] = 60 * model_piece["played"] / model_piece["seconds"] if timed else None
    if len(pieces) == 2 and common:
        row.update(sizing(row["model"][0] / len(common), row["heuristic"][0] / len(common), row.get("per_minute"),
                          budget_hours))
        # the same at the intervals' inner ends (base at its upper bound, heuristic at its lower):
        # what a pilot's few deals cannot rule out
        cautious = sizing(row["model"][3], row["heuristic"][2], row.get("per_minute"), budget_hours)
        row["pairs_cautious"], row["fits_cautious"] = cautious["pairs"], cautious.get("fits", False)
    return row


def sizing(p0: float, ph: float, per_minute: Optional[float], budget_hours: float) -> dict:
    """The target rate, the paired deals n for it, and (with a measured rate of play) the minutes
    of model play per arm and whether both arms fit the budget."""
    out = {"target": p0 + EFFECT_SHARE * (ph - p0), "no_gap": ph <= p0}
    out["pairs"] = paired_sample_size(p0, out["target"])
    if out["pairs"] and per_minute:
        out["minutes_per_arm"] = out["pairs"] / per_minute
        out["fits"] = 2 * out["minutes_per_arm"] <= 60 * budget_hours
    return out


def table(pieces: dict, sides: list, model: str, episodes: int, seed: int, budget_hours: float) -> dict:
    """{(game, side): row} and the chosen side: of those that fit the budget, the cheapest, one
    that fits even at its intervals' inner ends first (what the pilot cannot rule out)."""
    rows = {}
    for game, side in sides:
        found = {arm: pieces.get(_key_text(piece_key(game, side, arm, model, episodes, seed))) for arm in ARMS}
        rows[(game, side)] = side_row(found["model"], found["heuristic"], budget_hours)
    fitting = [gs for gs, row in rows.items() if row.get("fits")]
    chosen = min(fitting, key=lambda gs: (not rows[gs]["fits_cautious"], rows[gs]["minutes_per_arm"])) \
        if fitting else None
    return {"rows": rows, "chosen": chosen}


def _rate(cell) -> str:
    if not cell:
        return "-"
    wins, n, lo, hi = cell
    return f"{wins}/{n} [{100 * lo:.0f}, {100 * hi:.0f}]" if n else "-"


def _number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(result: dict, budget_hours: float) -> str:
    head = ("| game | side | model wins [95% CP] | heuristic wins [95% CP] | side's decisions / episode: model "
            "(heuristic) | episodes / min (model) | target p1 | pairs n | n at the intervals' inner ends "
            "| minutes / arm | fits " + f"{budget_hours:g} h |")
    lines = [head, "|" + "---|" * 11]
    for (game, side), row in result["rows"].items():
        pairs = row.get("pairs")
        n_text = "-" if "target" not in row else (f"{pairs:,}" if pairs else
                                                   ("no gap" if row["no_gap"] else f">{MAX_PAIRS:,}"))
        fits = "-" if "fits" not in row else ("**chosen**" if result["chosen"] == (game, side)
                                              else ("yes" if row["fits"] else "no"))
        target = row.get("target")
        lines.append(f"| {game} | {side} | {_rate(row.get('model'))} | {_rate(row.get('heuristic'))} "
                     f"| {_number(row.get('model_decisions'), '.1f')} ({_number(row.get('heuristic_decisions'), '.1f')}) "
                     f"| {_number(row.get('per_minute'), '.2f')} "
                     f"| {'-' if target is None else f'{100 * target:.0f}%'} | {n_text} "
                     f"| {'-' if 'target' not in row else _number(row['pairs_cautious'], ',') if row['pairs_cautious'] else 'no gap'} "
                     f"| {_number(row.get('minutes_per_arm'), ',.0f')} | {fits} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- command line
def parse_sides(games: Optional[str], sides: Optional[str]) -> list:
    """[(game, side)] from ``--games`` (each game's every side) and ``--sides`` (game:side)."""
    if not games and not sides:
        return [(g, s) for g, ss in SIDES.items() for s in ss]
    out = []
    for game in filter(None, (games or "").split(",")):
        if game not in SIDES:
            raise ValueError(f"--games: unknown hidden-role game {game!r}; choose from {', '.join(SIDES)}")
        out += [(game, s) for s in SIDES[game]]
    every = [f"{g}:{s}" for g in SIDES for s in SIDES[g]]
    for item in filter(None, (sides or "").split(",")):
        if item not in every:
            raise ValueError(f"--sides: {item!r} is not game:side of {', '.join(every)}")
        out.append(tuple(item.split(":")))
    return list(dict.fromkeys(out))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/hidden_role_sizing", help="folder of pieces.jsonl and episode logs")
    parser.add_argument("--episodes", type=int, default=12, help="deals per game-side (both arms play them)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="the model spec on the side's seats")
    parser.add_argument("--games", default=None, help="comma-separated games, every side (default: all)")
    parser.add_argument("--sides", default=None, help="comma-separated game:side pairs")
    parser.add_argument("--seed", type=int, default=0, help="first deal's seed")
    parser.add_argument("--budget-hours", type=float, default=BUDGET_HOURS, help="CPU hours a powered run may take")
    parser.add_argument("--arms", default=",".join(ARMS),
                        help="arms to play (the heuristic arm alone is instant: every side's ceiling first)")
    parser.add_argument("--report", action="store_true", help="print the table from --out without playing")
    args = parser.parse_args(argv)
    try:
        args.side_list = parse_sides(args.games, args.sides)
        args.arm_list = [arm for arm in ARMS if arm in args.arms.split(",")]
        if not args.arm_list or set(args.arms.split(",")) - set(ARMS):
            raise ValueError(f"--arms: a comma-separated subset of {', '.join(ARMS)}, got {args.arms!r}")
        if args.episodes < 1 or args.budget_hours <= 0:
            raise ValueError("--episodes and --budget-hours must be positive")
        check_spec(args.model)
    except ValueError as err:           # PolicySpecError is a ValueError: one line, exit 2
        parser.error(str(err))
    return args


def main(argv=None) -> dict:
    from socialgym_benchmarks.perf.cpu_runtimes import host_line
    args = parse_args(argv)
    out = Path(args.out)
    keys = [piece_key(g, s, arm, args.model, args.episodes, args.seed) for g, s in args.side_list for arm in args.arm_list]
    if args.report:
        pieces = read_pieces(out / "pieces.jsonl")
    else:
        pool = PolicyPool(seed=args.seed)
        if any(_key_text(k) not in read_pieces(out / "pieces.jsonl") for k in keys if k["arm"] == "model"):
            started = time.perf_counter()
            pool.get(args.model)                       # loaded before any piece's clock starts
            print(f"model loaded in {time.perf_counter() - started:.0f} s")
        pieces = run_pieces(out, keys, pool)
    result = table(pieces, args.side_list, args.model, args.episodes, args.seed, args.budget_hours)
    print(host_line())
    print(f"model: {args.model}; {args.episodes} deals per side (seeds {args.seed}..{args.seed + args.episodes - 1}); "
          f"paired exact McNemar, alpha {ALPHA}, power {POWER:.0%}, effect = {EFFECT_SHARE:g} x the gap")
    print(markdown(result, args.budget_hours))
    chosen = result["chosen"]
    print(f"chosen: {chosen[0]} / {chosen[1]}" if chosen else f"no side's powered run fits {args.budget_hours:g} h")
    return result


if __name__ == "__main__":
    main()
