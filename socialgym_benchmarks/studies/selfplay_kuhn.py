"""Tabular self-play on Kuhn poker, measured against OpenSpiel's CFR on the same plot.

    python -m socialgym_benchmarks.studies.selfplay_kuhn [--iterations 800] [--episodes 256] [--out runs/selfplay_kuhn]
    python socialgym_benchmarks/studies/selfplay_kuhn.py --help

The algorithm of ``socialgym_training/selfplay/`` with a table instead of a language model: one softmax
policy (a logit per information state and legal action word, read from the seat's
``game_state``: own card, board, betting so far) plays both seats of Kuhn poker through the
env, against itself or a past checkpoint from the pool (:mod:`socialgym_agents.selfplay`: seating, pool
sampling); each seat's trajectory is a row scored by its chips; its advantage is the chips
minus the per-seat EMA baseline (role-conditioned advantage estimation, RAE); rows with zero
advantage are dropped; the update is REINFORCE on the rows kept (the mean over them of
advantage x grad log-probability of every action the seat took).

A self-play policy-gradient iterate cycles around the equilibrium in a zero-sum game, so, as CFR
does, the script reports the *average policy* (each iterate weighted, per information state, by
its own probability of reaching it: the strategy a player following a uniformly chosen past
iterate plays) next to the last iterate. Exploitability (chips; OpenSpiel's, via
:mod:`socialgym_agents.openspiel_bridge`) of both is printed every ``eval_every`` iterations, next to
OpenSpiel's CFR average policy after as many CFR iterations (one CFR iteration is a full pass
over the game tree, one self-play iteration a batch of ``episodes`` sampled hands: the x axes
count different work, which the plot says).

Writes ``--out``/curve.csv (iteration, self-play last / average, CFR) and curve.png (log scale).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import socialgym_env
from socialgym_agents import openspiel_bridge as bridge
from socialgym_agents.selfplay import CURRENT, CheckpointPool, RoleBaseline, keep_nonzero, role_key, seat_assignment
from socialgym_env.atomic import atomic_file, atomic_savefig
from socialgym_env.docgen import field_help

GAME = "kuhn_poker"


@dataclass
class Config:
    iterations: int = 800
    """self-play iterations (one batch of episodes and one update each)"""
    episodes: int = 256
    """episodes (hands) per iteration"""
    learning_rate: float = 1.0
    """step size on the logits"""
    kl: float = 0.1
    """KL penalty toward the starting (uniform) policy, as GRPO's beta: -kl x KL(pi || uniform) per decision"""
    baseline_rate: float = 0.05
    """RAE: per-seat EMA rate, b <- b + rate (R - b)"""
    average: str = "linear"
    """average policy weights: linear (iterate t weighs t, as CFR+) or uniform"""
    pool_capacity: int = 8
    """past checkpoints kept as opponents"""
    self_play: float = 0.5
    """probability an episode is against the current policy itself"""
    snapshot_every: int = 10
    """iterations between checkpoints added to the pool"""
    eval_every: int = 10
    """iterations between exploitability measurements"""
    cfr_iterations: int = 200
    """OpenSpiel CFR iterations for the reference curve"""
    seed: int = 0
    """seed of deals, seating and action draws"""
    out: str = "runs/selfplay_kuhn"
    """output folder (curve.csv, curve.png)"""


def parse(argv=None, config_class=Config, doc: str = __doc__):
    """``config_class`` from the command line: one option per field, its docstring the help."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    docs = field_help(config_class)
    for f in dataclasses.fields(config_class):
        parser.add_argument(f"--{f.name}", type=type(f.default), default=f.default, help=docs[f.name].replace("%", "%%"))
    return config_class(**vars(parser.parse_args(argv)))


# ------------------------------------------------------------------ the tabular policy
def probabilities(logits: dict, key: tuple, legal: list) -> dict:
    row = logits.get(key, {})
    top = max(row.get(w, 0.0) for w in legal)
    weights = {w: math.exp(row.get(w, 0.0) - top) for w in legal}
    total = sum(weights.values())
    return {w: x / total for w, x in weights.items()}


def own_reach(logits: dict, key: tuple, legal_of: dict) -> float:
    """The probability that the seat owning ``key`` plays its own moves leading there (its
    earlier decisions in the key's betting history, seats alternating from player_0 each round)."""
    card, board, history = key
    owner = len(history[-1]) % 2
    reach = 1.0
    for r, moves in enumerate(history):
        for j, word in enumerate(moves):
            if j % 2 == owner:
                prefix = (card, board[:r], history[:r] + (moves[:j],))
                reach *= probabilities(logits, prefix, legal_of[prefix])[word]
    return reach


def as_table(logits: dict, legal_of: dict) -> dict:
    return {key: probabilities(logits, key, legal) for key, legal in legal_of.items()}


def information_states() -> dict:
    """{info_key: legal words} of every information state (from the OpenSpiel tree, via the bridge)."""
    legal_of = {}
    for state, ranks, words in bridge.walk(GAME):
        if not state.is_terminal():
            env = bridge.replay(GAME, ranks, words)
            info = env.infos[env.agent_selection]
            legal_of[bridge.info_key(info)] = info["legal_action_list"]
    return legal_of


def play_hands(env, logits: dict, pool: CheckpointPool, rng: random.Random, episodes: int) -> list:
    """One iteration's hands; returns a row (role key, chips, [(info key, word)]) per seat of
    the current policy."""
    rows = []
    for e in range(episodes):
        opponent = pool.sample(rng)
        env.reset(seed=rng.getrandbits(31))
        seats = seat_assignment(env.possible_agents, [""] * 2, False, opponent, e)
        tables = {CURRENT: logits} if opponent == CURRENT else {CURRENT: logits, opponent: pool.get(opponent)}
        taken = {a: [] for a in env.possible_agents}
        for agent in env.agent_iter():
            _, _, terminated, truncated, info = env.last(observe=False)
            if terminated or truncated:
                env.step(None)
                continue
            key, legal = bridge.info_key(info), info["legal_action_list"]
            p = probabilities(tables[seats[agent]], key, legal)
            word = rng.choices(legal, weights=[p[w] for w in legal])[0]
            taken[agent].append((key, word))
            env.step(word)
        for agent in env.possible_agents:
            if seats[agent] == CURRENT:
                rows.append((role_key(GAME, agent, "", False), env.state.result.scores[agent], taken[agent]))
    return rows


def reinforce(logits: dict, rows: list, advantages: list, kept: list, legal_of: dict, config: Config) -> None:
    """REINFORCE on the kept rows (mean over them), plus ``kl`` x the entropy gradient (KL to
    uniform is minus the entropy, up to a constant) at every decision taken."""
    gradient: dict = {}
    for i in kept:
        for key, word in rows[i][2]:
            p = probabilities(logits, key, legal_of[key])
            g = gradient.setdefault(key, {w: 0.0 for w in legal_of[key]})
            entropy = -sum(q * math.log(q) for q in p.values() if q > 0)
            for w in legal_of[key]:
                g[w] += advantages[i] * ((w == word) - p[w])
                if p[w] > 0:
                    g[w] -= config.kl * p[w] * (math.log(p[w]) + entropy)
    for key, g in gradient.items():
        row = logits.setdefault(key, {})
        for w, value in g.items():
            row[w] = row.get(w, 0.0) + config.learning_rate * value / max(len(kept), 1)


def cfr_reference(iterations: int) -> list:
    """OpenSpiel CFR's average-policy exploitability after each iteration."""
    import pyspiel
    from open_spiel.python.algorithms import cfr, exploitability
    game = pyspiel.load_game("kuhn_poker")
    solver = cfr.CFRSolver(game)
    curve = []
    for i in range(1, iterations + 1):
        solver.evaluate_and_update_policy()
        curve.append((i, float(exploitability.exploitability(game, solver.average_policy()))))
    return curve


def main(argv=None) -> dict:
    config = parse(argv)
    if config.average not in ("linear", "uniform"):
        raise SystemExit(f"error: --average must be linear or uniform, got {config.average!r}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(config.seed)
    started = time.time()
    legal_of = information_states()
    logits: dict = {}
    average_sum = {key: {w: 0.0 for w in legal} for key, legal in legal_of.items()}
    baseline = RoleBaseline(config.baseline_rate)
    pool = CheckpointPool(config.pool_capacity, config.self_play)
    env = socialgym_env.make(GAME, log_observations=False)
    curve = []
    kept_rows = all_rows = 0

    for iteration in range(1, config.iterations + 1):
        # 1. play a batch of hands; each seat of the current policy is a row
        rows = play_hands(env, logits, pool, rng, config.episodes)
        # 2. RAE advantages, zero-advantage filter, REINFORCE on the kept rows
        advantages = baseline.advantages_then_update([(k, r) for k, r, _ in rows])
        kept = keep_nonzero(advantages)
        kept_rows, all_rows = kept_rows + len(kept), all_rows + len(rows)
        reinforce(logits, rows, advantages, kept, legal_of, config)
        # 3. the reach-weighted average policy; checkpoints; measurements
        weight = iteration if config.average == "linear" else 1.0
        for key, legal in legal_of.items():
            reach = weight * own_reach(logits, key, legal_of)
            for w, p in probabilities(logits, key, legal).items():
                average_sum[key][w] += reach * p
        if iteration % config.snapshot_every == 0:
            pool.add(iteration, {k: dict(v) for k, v in logits.items()})
        if iteration % config.eval_every == 0 or iteration == config.iterations:
            last = bridge.exploitability(GAME, bridge.from_table(as_table(logits, legal_of)))
            average = bridge.exploitability(GAME, bridge.from_table(average_sum))
            curve.append((iteration, last, average))
            print(f"iteration {iteration:4d}  exploitability  last {last:.4f}  average {average:.4f}", flush=True)

    # 4. OpenSpiel's CFR on the same game, for reference
    cfr_curve = cfr_reference(config.cfr_iterations)
    cfr_at = dict(cfr_curve)
    print(f"\n{'iteration':>9} {'self-play last':>15} {'self-play average':>18} {'OpenSpiel CFR':>14}")
    for iteration, last, average in curve:
        reference = f"{cfr_at[iteration]:.4f}" if iteration in cfr_at else "-"
        print(f"{iteration:>9} {last:>15.4f} {average:>18.4f} {reference:>14}")
    final = {"last": curve[-1][1], "average": curve[-1][2], "cfr": cfr_curve[-1][1],
             "kept_rows": kept_rows, "rows": all_rows, "seconds": round(time.time() - started, 1),
             "baselines": {str(k): round(v, 4) for k, v in baseline.values.items()}}
    print(f"\nfinal exploitability: self-play average {final['average']:.4f}, last {final['last']:.4f}; "
          f"CFR after {config.cfr_iterations} iterations {final['cfr']:.4f}; rows kept {kept_rows}/{all_rows}; "
          f"per-seat baselines {final['baselines']}; {final['seconds']} s")
    with atomic_file(out / "curve.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["iteration", "selfplay_last", "selfplay_average", "cfr"])
        for iteration, last, average in curve:
            writer.writerow([iteration, round(last, 6), round(average, 6), round(cfr_at.get(iteration, float("nan")), 6)])
    plot(curve, cfr_curve, config, out / "curve.png")
    return final


def plot(curve, cfr_curve, config, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([c[0] for c in curve], [c[2] for c in curve], label=f"self-play average policy ({config.episodes} hands/iter)")
    ax.plot([c[0] for c in curve], [c[1] for c in curve], label="self-play last iterate", alpha=0.6)
    ax.plot([c[0] for c in cfr_curve], [c[1] for c in cfr_curve], label="OpenSpiel CFR (full tree pass/iter)")
    ax.axhline(0.05, color="grey", linestyle=":", label="0.05")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("exploitability (chips)")
    ax.set_title("Kuhn poker: tabular self-play (RAE, pool) vs CFR")
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
