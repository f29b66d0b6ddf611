"""Engine speed side by side with TextArena (and, optionally, an older checkout of this engine).

    python socialgym_benchmarks/perf/env_vs_textarena.py                       # the five shared games
    python socialgym_benchmarks/perf/env_vs_textarena.py --games all --baseline-src /tmp/sg-before

Every contender runs in its own worker process (same protocol, same machine, same random-agent
loop); the main process interleaves them (for each repetition, each game: A, B, C, A, B, C, ...)
so load changes on a shared machine hit every contender alike, and prints medians with ranges.

Modes (``--modes``):
  render  the acting seat's observation is rendered every step (what an LLM runner pays);
          ours: ``env.last()`` with observations logged in the record;
          TextArena: the default wrappers' ``get_observation()`` (full-history string).
  bare    no observation text: ours ``last(observe=False)`` with ``log_observations=False``;
          TextArena's ``-raw`` envs (the observation is the list of new message tuples).
  index   integer actions: ours ``env.step_index(i)`` on the legal list, no observation text
          (a free-text decision, such as a talk turn, still sends a sampled string);
          TextArena has no integer actions, so it runs its text loop (as in ``render``):
          the column ours/textarena is integer actions against TextArena's text loop.
  reset   env creation + reset per second (make + reset for ours).

``--floor`` adds "aec-floor": the PettingZoo AEC protocol alone (a do-nothing env with the
game's seats, a constant observation, 10 decisions an episode) in the same loop as ours, the
ceiling of any engine that stays a PettingZoo AEC env. ``--view-bound`` adds "no-views": ours
with the observation text and the acting seat's structured info replaced by constants (the
game, the grammar, parsing, rules and logging run as usual), the ceiling of any speed-up of
rendering and infos alone. Neither is a usable env.

Agents: uniform random legal actions (ours: the action grammar's sample; TextArena: a random
legal bracketed move per game, a fixed sentence in free-talk phases), one RNG seeded per episode.

TextArena (0.7.4) is optional. Its contender runs in its own virtualenv (Python 3.12 where there
is one, else this one; built once by ``textarena_venv.py``, which the tests' venvs share)::

    python -m socialgym_benchmarks.perf.textarena_venv

else in this Python if it imports textarena (the ``textarena`` extra), or in the Python that
``--textarena-python`` (or ``$TEXTARENA_PYTHON``) names. Without one the comparison is skipped
with a message and only this engine is timed.

Shared games: prisoners_dilemma ~ IteratedPrisonersDilemma-v0, stag_hunt ~ IteratedStagHunt-v0,
rock_paper_scissors ~ IteratedRockPaperScissors-v0, liars_dice ~ LiarsDice-v0 (3 players),
werewolves ~ SecretMafia-v0 (6 players). The rules differ in detail (round counts, talk turns,
player counts), so compare steps/s, which is per decision; episodes/s is printed for reference.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODES = ("render", "bare", "index", "reset")
# our game id -> (TextArena env id, number of players)
TEXTARENA_GAMES = {
    "prisoners_dilemma": ("IteratedPrisonersDilemma-v0", 2),
    "stag_hunt": ("IteratedStagHunt-v0", 2),
    "rock_paper_scissors": ("IteratedRockPaperScissors-v0", 2),
    "liars_dice": ("LiarsDice-v0", 3),
    "werewolves": ("SecretMafia-v0", 6),
}
TALK = "I think we should keep an open mind."


# ----------------------------------------------------------------------------- workers
def play_random(env, rng: random.Random, mode: str) -> int:
    """One episode of the benchmark's agents on a reset env: uniform random legal actions, as
    text (the grammar's sample) or, in ``index`` mode, as indices into the legal list where it
    is finite; the acting seat's observation rendered in ``render`` mode. The decisions taken."""
    observe = mode == "render"
    steps = 0
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last(observe=observe)
        if terminated or truncated:
            env.step(None)
            continue
        grammar = env.grammar(agent)
        legal = grammar.actions() if mode == "index" else None
        if legal is None:
            env.step(grammar.sample(rng).text)
        else:
            env.step_index(rng.randrange(len(legal)))
        steps += 1
    return steps


def socialgym_job(game: str, mode: str, seconds: float, seed: int) -> dict:
    """Episodes of random legal play (or resets) until ``seconds`` have passed."""
    import socialgym_env
    steps = episodes = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while not episodes or time.perf_counter() - start < seconds:     # at least one episode
        episode_seed = seed + episodes
        env = socialgym_env.make(game, log_observations=mode == "render")
        if mode == "index" and not hasattr(env, "step_index"):
            return {"unsupported": "this engine has no step_index"}     # an older engine
        env.reset(seed=episode_seed)
        episodes += 1
        if mode != "reset":
            steps += play_random(env, random.Random(episode_seed), mode)
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu_start, "steps": steps,
            "episodes": episodes}


FLOOR_STEPS = 10     # decisions an episode of the floor env (Prisoner's Dilemma has 10)


def _floor_env_class():
    """The floor env: the game's seats, the AEC bookkeeping (rewards, cumulative rewards,
    terminations, truncations, infos, agent selection), a constant observation, and the end
    after FLOOR_STEPS actions."""
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import AgentSelector

    from socialgym_env.aec import begin_aec_step, start_aec_episode

    class FloorEnv(AECEnv):
        metadata = {"name": "aec_floor"}

        def __init__(self, players: int):
            super().__init__()
            self.possible_agents = [f"player_{i}" for i in range(players)]

        def observation_space(self, agent):
            return spaces.Text(100)

        def action_space(self, agent):
            return spaces.Text(100)

        def reset(self, seed=None, options=None):
            start_aec_episode(self)
            self._selector = AgentSelector(self.agents)
            self.agent_selection = self._selector.next()
            self._steps = 0

        def observe(self, agent):
            return {"text": "your move"}

        def step(self, action):
            if begin_aec_step(self, action) is None:
                return
            self._steps += 1
            if self._steps >= FLOOR_STEPS:
                for other in self.agents:
                    self.terminations[other] = True
                    self.rewards[other] = 1.0
            self.agent_selection = self._selector.next()
            self._accumulate_rewards()

    return FloorEnv


def floor_job(game: str, mode: str, seconds: float, seed: int) -> dict:
    """The PettingZoo AEC protocol alone, in the same loop as ours: an env with the game's
    seats that keeps the AEC bookkeeping, returns a constant observation and ends after
    FLOOR_STEPS random actions (:func:`_floor_env_class`). No engine can be faster than this
    and stay an AEC env."""
    import socialgym_env

    FloorEnv = _floor_env_class()
    players = socialgym_env.game_class(game).info.num_players
    observe = mode == "render"      # index: a constant action, like the text modes
    steps = episodes = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while not episodes or time.perf_counter() - start < seconds:     # at least one episode
        env = FloorEnv(players)
        env.reset(seed=seed + episodes)
        episodes += 1
        if mode == "reset":
            continue
        rng = random.Random(seed + episodes)
        for _agent in env.agent_iter():
            _, _, terminated, truncated, _ = env.last(observe=observe)
            if terminated or truncated:
                env.step(None)
                continue
            env.step(rng.choice(("cooperate", "defect")))
            steps += 1
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu_start, "steps": steps,
            "episodes": episodes}


def no_views_job(game: str, mode: str, seconds: float, seed: int) -> dict:
    """``socialgym_job`` with observation text and decision views stubbed out (this worker
    process only)."""
    from socialgym_env.views import Views
    Views.render_observation = lambda self, agent: "(observation)"
    Views.decision_view = lambda self, agent, acting=None: {"game": self.game_info.id}
    Views.frozen_decision_view = lambda self, agent, acting=None: lambda: {"game": self.game_info.id}
    return socialgym_job(game, mode, seconds, seed)


def textarena_action(env, game: str, player: int, rng: random.Random) -> str:
    """A random legal move of the TextArena game for ``player`` now."""
    core = env
    while hasattr(core, "env"):
        core = core.env
    state = core.state.game_state
    if game in ("prisoners_dilemma", "stag_hunt"):
        if state["phase"] == "conversation":
            return TALK
        return rng.choice(["[Cooperate]", "[Defect]"] if game == "prisoners_dilemma" else ["[Stag]", "[Hare]"])
    if game == "rock_paper_scissors":
        return rng.choice(["[rock]", "[paper]", "[scissors]"])
    if game == "liars_dice":
        bid = state["current_bid"]
        if bid["quantity"] > 0 and rng.random() < 0.3:
            return "[Call]"
        if bid["face_value"] >= 6 or rng.random() < 0.5:
            return f"[Bid: {bid['quantity'] + 1}, {max(1, bid['face_value'])}]"
        return f"[Bid: {max(1, bid['quantity'])}, {rng.randint(max(1, bid['face_value']) + 1, 6)}]"
    if game == "werewolves":
        phase = core.phase.name if hasattr(core.phase, "name") else str(core.phase)
        if phase == "DAY_DISCUSSION":
            return TALK
        alive = [p for p in state["alive_players"] if p != player]
        return f"[{rng.choice(alive)}]"
    raise ValueError(f"no TextArena counterpart for {game}")


def textarena_job(game: str, mode: str, seconds: float, seed: int) -> dict:
    import textarena as ta
    env_id, players = TEXTARENA_GAMES[game]
    env_id = env_id if mode in ("render", "index") else env_id + "-raw"     # index: its text loop
    steps = episodes = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while not episodes or time.perf_counter() - start < seconds:     # at least one episode
        episode_seed = seed + episodes
        env = ta.make(env_id)
        env.reset(num_players=players, seed=episode_seed)
        episodes += 1
        if mode == "reset":
            continue
        rng = random.Random(episode_seed)
        done = False
        while not done:
            player, _observation = env.get_observation()
            done, _ = env.step(textarena_action(env, game, player, rng))
            steps += 1
        env.close()
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu_start, "steps": steps,
            "episodes": episodes}


def worker(kind: str) -> None:
    """Answer one JSON job per stdin line with one JSON result line."""
    job = {"socialgym": socialgym_job, "textarena": textarena_job, "floor": floor_job,
           "no-views": no_views_job}[kind]
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(job(**request)), flush=True)


# ----------------------------------------------------------------------------- driver
class Contender:
    def __init__(self, label: str, kind: str, python: str, src: Path | None = None):
        self.label, self.kind = label, kind
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = str(src)
        self.proc = subprocess.Popen([python, __file__, "--worker", kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=str(src or ROOT))

    def run(self, **job) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label} worker died (job {job})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def textarena_python(arg: str | None) -> str | None:
    """The Python the TextArena contender runs in: the one named (``arg``), else the benchmark's
    venv (or ``$TEXTARENA_PYTHON``), else this one; the first that imports textarena."""
    # imported here: the TextArena worker runs this file in a venv without this project
    from socialgym_benchmarks.perf.textarena_venv import BENCHMARK_VENV, venv_python
    candidates = [arg] if arg else [os.environ.get("TEXTARENA_PYTHON") or str(venv_python(BENCHMARK_VENV)), sys.executable]
    for candidate in candidates:
        try:
            if subprocess.run([candidate, "-c", "import textarena"], capture_output=True, timeout=120).returncode == 0:
                return candidate
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def summarise(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def fmt(values: list[float]) -> str:
    med, lo, hi = summarise(values)
    return f"{med:9.0f} [{lo:.0f}-{hi:.0f}]"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default=",".join(TEXTARENA_GAMES), help="comma-separated ids, or 'all'")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, from {MODES}")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--textarena-python", help="Python that imports textarena (default: the venv textarena_venv.py builds, else this one)")
    parser.add_argument("--no-textarena", action="store_true")
    parser.add_argument("--baseline-src", type=Path, help="folder holding an older socialgym_env, timed as 'before'")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="rates per wall-clock second, or per CPU second of the worker process "
                             "(steadier on a loaded machine: time spent waiting for a core is not counted)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the PettingZoo AEC protocol alone (a do-nothing env in the same loop)")
    parser.add_argument("--view-bound", action="store_true",
                        help="also time ours with observation text and infos stubbed out (an upper bound)")
    parser.add_argument("--worker", choices=["socialgym", "textarena", "floor", "no-views"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.error = parser.error
    return args


def contenders_for(args) -> list:
    """Ours, optionally an older copy of ours ('before'), and TextArena when it is set up."""
    contenders = [Contender("socialgym", "socialgym", sys.executable, ROOT)]
    if args.baseline_src:
        contenders.append(Contender("before", "socialgym", sys.executable, args.baseline_src.resolve()))
    ta_python = None if args.no_textarena else textarena_python(args.textarena_python)
    if ta_python:
        contenders.append(Contender("textarena", "textarena", ta_python))
    if args.view_bound:
        contenders.append(Contender("no-views", "no-views", sys.executable, ROOT))
    if args.floor:
        contenders.append(Contender("aec-floor", "floor", sys.executable, ROOT))
    elif not args.no_textarena:
        print("TextArena not found: comparison skipped. Build its venv with\n"
              "  python -m socialgym_benchmarks.perf.textarena_venv\n"
              "or pip install textarena (pip install 'socialgym[textarena]'), or pass --textarena-python.\n")
    return contenders


def measure(contenders, games, modes, reps: int, seconds: float) -> dict:
    """(mode, game, label) -> the runs, repetitions interleaved across contenders (A, B, A, B)."""
    results: dict = {}
    try:
        for rep in range(reps):
            for mode in modes:
                for game in games:
                    for contender in contenders:
                        if contender.kind == "textarena" and game not in TEXTARENA_GAMES:
                            continue
                        out = contender.run(game=game, mode=mode, seconds=seconds, seed=1000 * rep)
                        if "unsupported" not in out:       # an older engine may predate step_index
                            results.setdefault((mode, game, contender.label), []).append(out)
    finally:
        for contender in contenders:
            contender.close()
    return results


def print_table(results: dict, labels: list, games: list, mode: str, clock: str = "wall") -> None:
    unit = "resets/s" if mode == "reset" else "steps/s"
    per = "seconds" if clock == "wall" else "cpu"
    print(f"\n== {mode}: {unit}" + ("" if mode == "reset" else " (episodes/s)"))
    header = f"{'game':22s}" + "".join(f" {label + ' ' + unit:>30s}" for label in labels)
    header += "".join(f" {'ours/' + label:>15s}" for label in labels[1:])
    print(header)
    for game in games:
        row, medians = f"{game:22s}", {}
        for label in labels:
            runs = results.get((mode, game, label))
            if not runs:
                row += f" {'-':>30s}"
                continue
            key = "episodes" if mode == "reset" else "steps"
            rates = [r[key] / r[per] for r in runs]
            eps = statistics.median(r["episodes"] / r[per] for r in runs)
            medians[label] = statistics.median(rates)
            cell = fmt(rates) + ("" if mode == "reset" else f" ({eps:.0f})")
            row += f" {cell:>30s}"
        for label in labels[1:]:
            row += f" {medians['socialgym'] / medians[label]:14.2f}x" if label in medians else f" {'-':>15s}"
        print(row)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker)
        return {}
    sys.path.insert(0, str(ROOT))
    import socialgym_env
    games = socialgym_env.game_ids() if args.games == "all" else args.games.split(",")
    modes = args.modes.split(",")
    bad = [g for g in games if g not in socialgym_env.game_ids()] + [m for m in modes if m not in MODES]
    if bad:
        args.error(f"unknown game or mode {bad}; games: {', '.join(socialgym_env.game_ids())}; modes: {MODES}")
    contenders = contenders_for(args)
    results = measure(contenders, games, modes, args.reps, args.seconds)
    print(f"{args.reps} interleaved repetitions of {args.seconds:g} s each; median [min-max] per "
          f"{'wall-clock' if args.clock == 'wall' else 'CPU'} second. Random legal agents. Shared machine: expect noise.")
    for mode in modes:
        print_table(results, [c.label for c in contenders], games, mode, args.clock)
    if args.json:
        from socialgym_env.atomic import atomic_write_text
        atomic_write_text(args.json, json.dumps([{"mode": m, "game": g, "contender": c, "runs": r}
                                                 for (m, g, c), r in results.items()], indent=1))
    return results


if __name__ == "__main__":
    main()
