"""Running planned tournament episodes: local processes or Ray actors, resumable.

Jobs are grouped into one shard per game with one log file per shard
(``OUT/logs/<game>.jsonl``), so no two processes append to one file. ``backend="local"`` runs
shards on a process pool (``workers`` processes; 1 = in this process); ``backend="ray"`` sends
chunks of episodes to Ray actors (each holds one ``PolicyPool``, so a model loads once per
actor) and the driver appends the returned records. Every start first collects the episode ids
already in ``OUT/logs`` and plays only the others, so a killed run resumes with no episode lost
or duplicated (``socialgym_agents.runner.run_jobs`` also skips logged ids). Locally, the turns of
the episodes in play are journaled (``OUT/logs/<game>.journal``, :mod:`socialgym_env.journal`) and
a resume continues them from their last journaled tick; each decision's wall time goes to
``OUT/logs/<game>.timing``. Ray actors return whole episodes: a killed Ray run loses the turns of
the chunks in flight (``chunk_size`` episodes per actor).
"""
from __future__ import annotations

import concurrent.futures as cf
import importlib
import os
import sys
from pathlib import Path
from typing import Iterable, Optional

import socialgym_env
from socialgym_agents.runner import PolicyPool, run_jobs
from socialgym_env.registry import outside_registrations, restore_registrations
from .progress import ProgressEstimate, in_play, planned_episodes, random_play_turns
from socialgym_env.journal import JOURNAL_SUFFIX, append_timing, journal_path, read_journal, timing_path
from socialgym_env.logs import append_episode, completed_episode_ids, failed_episode_ids


def shard_log(log_dir: Path, game: str) -> Path:
    return Path(log_dir) / f"{game}.jsonl"


def logged_ids(log_dir: Path, retry_failed: bool = True) -> set:
    """Ids of the episodes a resume skips (failed ones too unless ``retry_failed``)."""
    done = set()
    for path in sorted(Path(log_dir).glob("*.jsonl")):
        done |= completed_episode_ids(path, retry_failed=retry_failed)
    return done


def in_flight_turns(log_dir: Path) -> tuple:
    """(episodes, turns) the journals under ``log_dir`` hold for episodes still in play."""
    chains = [chain for path in sorted(Path(log_dir).glob(f"*{JOURNAL_SUFFIX}")) for chain in read_journal(path).values()]
    return len(chains), sum(chain[-1]["after"] for chain in chains)


def failed_ids(log_dir: Path) -> set:
    return set().union(*(failed_episode_ids(p) for p in sorted(Path(log_dir).glob("*.jsonl"))))


def _die_with_parent() -> None:
    """Worker initializer: on Linux, a worker gets SIGKILL when the tournament process dies, so a
    killed run leaves no orphan still appending to the logs."""
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
        if os.getppid() == 1:           # the parent died before prctl
            os._exit(1)
    except Exception:
        pass


def _start_worker(registrations: dict) -> None:
    """Worker initializer: die with the parent, and register the games the parent registered
    from outside the package (a spawned process starts with the built-in catalogue only)."""
    _die_with_parent()
    restore_registrations(registrations)


def _check_games_known(jobs) -> None:
    """Raise, before playing, if this process does not know a job's game: a shard of episodes
    logged as failed with UnknownGameError would otherwise be counted as played."""
    for game in sorted({job.game for job in jobs}):
        socialgym_env.game_class(game)


def _journal_of(log_dir: Path):
    return lambda job: journal_path(shard_log(log_dir, job.game))


def _timing_to(log_dir: Path):
    """``on_timing`` for the runner: each finished episode's decision times beside its log."""
    return lambda record, timing: append_timing(timing_path(shard_log(log_dir, record["game"])),
                                                record["episode_id"], timing)


def _run_shard(jobs: list, log_path: str, pool_seed: int) -> int:
    _check_games_known(jobs)
    log_dir = Path(log_path).parent
    records = run_jobs(jobs, pool=PolicyPool(seed=pool_seed), log_path=log_path, resume=True,
                       journal=_journal_of(log_dir), on_timing=_timing_to(log_dir))
    return len(records)


class _LineCounter:
    """Counts complete lines appended to a set of files since it started (progress polling)."""

    def __init__(self, paths: Iterable[Path]):
        self.offsets = {Path(p): (Path(p).stat().st_size if Path(p).exists() else 0) for p in paths}
        self.lines = {p: 0 for p in self.offsets}

    def poll(self) -> int:
        for path, offset in self.offsets.items():
            if not path.exists():
                continue
            size = path.stat().st_size
            if size > offset:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read(size - offset)
                cut = chunk.rfind(b"\n") + 1
                self.lines[path] += chunk[:cut].count(b"\n")
                self.offsets[path] = offset + cut
        return sum(self.lines.values())


# Our own ETA goes in the status line (socialgym_benchmarks.tournament.progress): tqdm's, from the gaps
# between bursts of finished episodes, reads hours on a run of minutes.
OWN_ETA_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


def _bars(total_episodes: int, total_games: int, enabled: bool, already: int = 0, own_eta: bool = False):
    """The episode bar counts the whole plan, starting at the episodes already logged, so it
    reads as the logs do (a resumed run does not start at 0 of what is left)."""
    if not enabled:
        return None, None
    from tqdm import tqdm
    episodes = tqdm(total=total_episodes + already, initial=already, desc="episodes", unit="ep", position=0,
                    dynamic_ncols=True, bar_format=OWN_ETA_FORMAT if own_eta else None)
    games = tqdm(total=total_games, desc="games   ", unit="game", position=1, dynamic_ncols=True,
                 bar_format=OWN_ETA_FORMAT if own_eta else None)
    return episodes, games


def _progress_callback(ep_bar, game_bar, shards: dict, estimate: Optional[ProgressEstimate] = None):
    left = {game: len(jobs) for game, jobs in shards.items()}

    def on_record(record):
        if estimate is not None:
            estimate.finished(record["game"], len(record.get("turns") or ()), record.get("episode_id"))
        if ep_bar:
            ep_bar.update(1)
            if estimate is not None:
                ep_bar.set_postfix_str(estimate.status(), refresh=False)
            ep_bar.refresh()            # redraw now: update() alone waits out tqdm's mininterval
        left[record["game"]] -= 1
        if game_bar and left[record["game"]] == 0:
            game_bar.update(1)
            game_bar.refresh()
    return on_record


def _tick_callback(ep_bar, estimate: ProgressEstimate, every_s: float = 0.5):
    """The episode bar's status line inside long episodes (decisions, their rate, the games in
    play, the ETA), redrawn at most every ``every_s`` seconds so the elapsed time moves too."""
    import time
    last = [float("-inf")]

    def on_tick(live, decisions):
        estimate.tick(live, decisions)
        now = time.monotonic()
        if ep_bar is None or now - last[0] < every_s:
            return
        last[0] = now
        ep_bar.set_postfix_str(estimate.status(), refresh=True)
    return on_tick


HORIZON_ORDER = {"open_ended": 0, "fixed_rounds": 1, "single_round": 2}


def _expected_length(game: str, jobs: int) -> tuple:
    """Sort key, longest first: open-ended games before fixed rounds, more seats first, then the
    bigger shard. Started last, a long game would run on alone at the end; started first, it
    overlaps the short ones."""
    info = socialgym_env.game_class(game).info
    return HORIZON_ORDER.get(info.horizon, 1), -info.num_players, -jobs


def run_local(shards: dict, log_dir: Path, workers: int = 1, pool_seed: int = 0,
              progress: bool = True, start_method: Optional[str] = None, already: int = 0) -> int:
    """Run ``{game: [jobs]}`` on a process pool (``workers`` > 1) or in this process.
    ``start_method``: the pool's multiprocessing start method (default: fork, or spawn once
    torch is loaded)."""
    # Before any worker starts: a game registered here that a worker cannot import is an error
    # now, not a run of failed episodes.
    registrations = outside_registrations(shards) if workers > 1 else {}
    total = sum(len(j) for j in shards.values())
    paths = [shard_log(log_dir, g) for g in shards]
    counter = _LineCounter(paths)
    bars = _bars(total, len(shards), progress, already, own_eta=workers == 1)
    order = sorted(shards, key=lambda game: _expected_length(game, len(shards[game])))
    if workers == 1:
        played = _run_in_process(shards, order, log_dir, pool_seed, progress, bars)
        _close(bars)
        return played
    executor = _executor(workers, start_method, registrations)
    try:
        return _run_on_pool(executor, shards, order, log_dir, pool_seed, bars, counter, total, already)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        _close(bars)


def _run_in_process(shards: dict, order: list, log_dir: Path, pool_seed: int, progress: bool, bars) -> int:
    """One process, one batched runner over every game: all pending LLM decisions of all games
    share each forward pass (the fastest way to run a local model)."""
    ep_bar, game_bar = bars
    jobs = [job for game in order for job in shards[game]]
    estimate = ProgressEstimate(planned_episodes(jobs), prior_turns=random_play_turns(shards) if progress else None)
    records = run_jobs(jobs, pool=PolicyPool(seed=pool_seed), resume=False, progress=False,
                       log_path=lambda record: shard_log(log_dir, record["game"]),
                       on_record=_progress_callback(ep_bar, game_bar, shards, estimate),
                       on_tick=_tick_callback(ep_bar, estimate),
                       journal=_journal_of(log_dir), on_timing=_timing_to(log_dir))
    return len(records)


def _executor(workers: int, start_method: Optional[str], registrations: dict) -> cf.Executor:
    """A process pool of ``workers`` (``workers`` > 1), else one thread."""
    if workers > 1:
        import multiprocessing
        # fork is quick; once torch (threads) is loaded in this process, spawn is the safe choice
        method = start_method or ("spawn" if "torch" in sys.modules else "fork")
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                                      initializer=_start_worker, initargs=(registrations,))
    return cf.ThreadPoolExecutor(max_workers=1)


def _run_on_pool(executor: cf.Executor, shards: dict, order: list, log_dir: Path, pool_seed: int, bars,
                 counter: "_LineCounter", total: int, already: int) -> int:
    """One shard a task, longest first; the bars follow the logs' line counts meanwhile."""
    ep_bar, game_bar = bars
    played = 0
    futures = {executor.submit(_run_shard, shards[g], str(shard_log(log_dir, g)), pool_seed): g for g in order}
    pending = set(futures)
    while pending:
        done, pending = cf.wait(pending, timeout=0.5, return_when=cf.FIRST_COMPLETED)
        for future in done:
            played += future.result()
            if game_bar:
                game_bar.update(1)
        if ep_bar:
            ep_bar.n = already + min(counter.poll(), total)
            ep_bar.set_postfix_str(f"not finished: {in_play(futures[f] for f in pending) or '-'}", refresh=False)
            ep_bar.refresh()
    return played


def _close(bars) -> None:
    for bar in bars:
        if bar:
            bar.close()


class _RayWorker:
    def __init__(self, pool_seed: int, registrations: dict):
        restore_registrations(registrations)
        self.pool = PolicyPool(seed=pool_seed)

    def run(self, jobs):
        _check_games_known(jobs)
        return run_jobs(jobs, pool=self.pool, log_path=None, resume=False)


def _repo_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _module_roots(registrations: dict) -> list:
    """The sys.path folders holding the top-level packages of outside games, so Ray workers
    import them too."""
    roots = []
    for reference in registrations.values():
        top = sys.modules.get(reference.partition(":")[0].split(".")[0])
        origin = getattr(top, "__file__", None)
        if origin:
            path = Path(origin).resolve()
            root = path.parent.parent if path.name == "__init__.py" else path.parent
            roots.append(str(root))
    return list(dict.fromkeys(roots))


def _shipped_modules(registrations: dict) -> list:
    """The folders (or single files) of the packages a cluster's workers import: the three that
    play episodes and the top-level packages of outside games. Training is not among them: no
    worker of a tournament imports it. Paths, not module objects: Ray Client pickles the
    runtime_env, and a module does not pickle."""
    tops = [r.partition(":")[0].split(".")[0] for r in registrations.values()]
    names = dict.fromkeys(["socialgym_env", "socialgym_agents", "socialgym_benchmarks", *tops])
    modules = [importlib.import_module(name) for name in names]
    return [str(Path(m.__file__).parent) if hasattr(m, "__path__") else m.__file__ for m in modules]


# Byte code is rebuilt on the workers; shipping it only makes the upload larger.
_NOT_SHIPPED = ["__pycache__/", "*.pyc"]


def _on_loopback(address: str) -> bool:
    host = address.removeprefix("ray://").rpartition(":")[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


def _keep_ray_on_loopback() -> None:
    """Before Ray starts or joins a cluster on this machine. Ray resolves even ``127.0.0.1`` to
    the machine's outward address (its servers then listen on every interface, and a driver
    looks for a loopback cluster there and hangs) unless its multi-node mode is off; and its
    usage reporting sends cluster facts to the Ray project. Both are off unless the user set
    them. Ray reads the first variable when it is imported: it takes effect where this module
    imports Ray first (the CLI)."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def ensure_ray(address: Optional[str] = None, num_cpus: Optional[int] = None, registrations: Optional[dict] = None):
    """Connect to a Ray cluster (``address``: ``HOST:PORT``, ``auto``, or ``ray://HOST:PORT``
    for Ray Client) or start a local instance on 127.0.0.1. On a cluster the three packages (and
    the packages of outside games in ``registrations``) travel with the job (``runtime_env
    py_modules``); their other dependencies must be installed on the nodes."""
    if not address or _on_loopback(address):
        _keep_ray_on_loopback()
    import ray
    if ray.is_initialized():
        return ray
    if address:
        ray.init(address=address, runtime_env={"py_modules": _shipped_modules(registrations or {}),
                                               "excludes": _NOT_SHIPPED})
    else:
        path = os.pathsep.join([_repo_root()] + _module_roots(registrations or {})
                               + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": path}})
    return ray


def run_ray(shards: dict, log_dir: Path, workers: int = 2, pool_seed: int = 0, progress: bool = True,
            address: Optional[str] = None, chunk_size: int = 4, already: int = 0) -> int:
    """Run ``{game: [jobs]}`` on Ray actors; the driver appends each returned record."""
    registrations = outside_registrations(shards)
    ray = ensure_ray(address, num_cpus=workers if not address else None, registrations=registrations)
    from ray.util import ActorPool
    worker_cls = ray.remote(num_cpus=1)(_RayWorker)
    actors = [worker_cls.remote(pool_seed, registrations) for _ in range(max(1, workers))]
    pool = ActorPool(actors)
    chunks = []
    for game in sorted(shards, key=lambda g: -len(shards[g])):
        jobs = shards[game]
        chunks.extend(jobs[i:i + chunk_size] for i in range(0, len(jobs), chunk_size))
    left = {g: len(j) for g, j in shards.items()}
    total = sum(left.values())
    ep_bar, game_bar = _bars(total, len(shards), progress, already)
    played = 0
    try:
        for records in pool.map_unordered(lambda actor, chunk: actor.run.remote(chunk), chunks):
            for record in records:
                append_episode(shard_log(log_dir, record["game"]), record)
                left[record["game"]] -= 1
                if left[record["game"]] == 0 and game_bar:
                    game_bar.update(1)
            played += len(records)
            if ep_bar:
                ep_bar.update(len(records))
    finally:
        for actor in actors:
            ray.kill(actor)
        for bar in (ep_bar, game_bar):
            if bar:
                bar.close()
    return played
