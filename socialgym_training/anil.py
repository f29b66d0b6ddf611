"""ANIL (Almost No Inner Loop, Raghu et al. 2020) across hidden-role games, leave-one-game-out.

    python -m socialgym_training.anil --logs runs/detect_lm/logs --out runs/anil

A task is one game: its support set is a few labelled episodes, its query set a few others (one
cut point per episode, every player at that cut; ``socialgym_training.detection_data``). The inner loop
adapts only the linear head with a few SGD steps (written with ``torch.func.functional_call`` so
the adapted head stays a differentiable function of its initial weights); the outer loop trains
the head's initial weights and the encoder's LoRA weights on the query loss through the inner loop.

For every held-out game: meta-train on the other games, then adapt to the held-out game from
k = 1, 5, 10, 20 labelled episodes and test on a fixed set of its other episodes. Compared at the
same budget (the same outer steps on the same sampled episodes, the same adaptation steps):

- ``anil``: the meta-trained encoder and head initialisation, head adapted on the k episodes;
- ``scratch`` (a): the pretrained encoder (no training on other games), a fresh head trained on
  the k episodes;
- ``multitask`` (b): encoder and one head trained with plain supervised loss on the other games,
  then the head fine-tuned on the k episodes.

Writes ``curves.csv`` (held-out game, method, k, metric, mean and 95% t-interval over adaptation
seeds; written after every held-out game, and a rerun skips the games already there) and
``anil_<game>.png`` per held-out game (AUROC and top-1 vs k), plus ``anil_curves.png``
(AUROC, every held-out game), and ``<game>/anil_adapter`` + ``<game>/anil_head.pt`` (the
meta-trained body and head init).
"""
from __future__ import annotations

import csv
import json
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from socialgym_training.configs import EncoderArgs, RunArgs
from socialgym_env.atomic import atomic_dir, atomic_file, atomic_savefig, atomic_write_text

from socialgym_training.detection_data import Example, load_examples
from socialgym_training.detection_eval import METRICS, mean_interval, metric_values
from socialgym_training.detector import TextEncoder, base_model_dir

METHODS = ("anil", "scratch", "multitask")


@dataclass
class Config(RunArgs, EncoderArgs):
    held_out: str = ""
    """Comma-separated; empty = every game in the logs (leave-one-game-out)"""
    ks: str = "1,5,10,20"
    """Labelled episodes of the held-out game to adapt from"""
    seeds: int = 5
    """Adaptation draws per k (different k episodes each)"""
    test_episodes: int = 10
    """Fixed test episodes per held-out game"""
    meta_steps: int = 30
    """Outer steps (ANIL) = supervised steps (multitask)"""
    support_episodes: int = 3
    """Per meta-training task"""
    query_episodes: int = 3
    """Per meta-training task: episodes the adapted head is scored on"""
    inner_steps: int = 5
    """Head SGD steps in the meta-training inner loop"""
    inner_lr: float = 0.1
    """MiniLM features have norm ~5: larger steps overshoot"""
    adapt_steps: int = 20
    """Head SGD steps when adapting to the held-out game (every method)"""
    outer_lr: float = 5e-4
    """Learning rate of the outer (meta) steps on the encoder's LoRA and the head"""
    resume: bool = True
    """Keep held-out games already in OUT/curves.csv"""
    # defaults of this script (the options are documented in socialgym_training.configs)
    out: str = "runs/anil"
    lora_r: int = 8
    lora_alpha: int = 16
    max_length: int = 96


# ----------------------------------------------------------------------------- the ANIL core
def head_params(head: nn.Module) -> dict:
    return dict(head.named_parameters())


def head_loss(head: nn.Module, params: dict, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logits = functional_call(head, params, (features,)).squeeze(-1)
    return nn.functional.binary_cross_entropy_with_logits(logits, labels)


def adapt_head(head: nn.Module, params: dict, features: torch.Tensor, labels: torch.Tensor,
               steps: int, lr: float, create_graph: bool) -> dict:
    """The inner loop: ``steps`` SGD steps on the head parameters only (the features are fixed
    inputs here). With ``create_graph`` the result stays differentiable in ``params`` and in
    whatever produced ``features`` (the outer loop's path to the body)."""
    for _ in range(steps):
        loss = head_loss(head, params, features, labels)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
        params = {name: p - lr * g for (name, p), g in zip(params.items(), grads)}
    return params


def join(a, b):
    """Support and query inputs as one batch: texts (lists) or feature tensors."""
    return list(a) + list(b) if isinstance(a, list) else torch.cat([a, b])


def anil_loss(body: Callable, head: nn.Module, support_x, support_y, query_x, query_y,
              inner_steps: int, inner_lr: float) -> torch.Tensor:
    """Query loss after adapting the head on the support set: the outer objective."""
    features = body(join(support_x, query_x))   # one forward pass for both sets
    f_support, f_query = features[:len(support_x)], features[len(support_x):]
    adapted = adapt_head(head, head_params(head), f_support, support_y, inner_steps, inner_lr, create_graph=True)
    return head_loss(head, adapted, f_query, query_y)


def meta_train(body: nn.Module, head: nn.Module, sample_task: Callable, steps: int, inner_steps: int,
               inner_lr: float, outer_lr: float, body_params: Sequence[nn.Parameter]) -> list[float]:
    """ANIL outer loop: ``sample_task()`` -> (support_x, support_y, query_x, query_y)."""
    optimizer = torch.optim.Adam(list(body_params) + list(head.parameters()), lr=outer_lr)
    losses = []
    for _ in range(steps):
        loss = anil_loss(body, head, *sample_task(), inner_steps, inner_lr)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def multitask_train(body: nn.Module, head: nn.Module, sample_task: Callable, steps: int, lr: float,
                    body_params: Sequence[nn.Parameter]) -> list[float]:
    """The non-meta baseline: the same sampled tasks, support and query pooled, one shared head."""
    optimizer = torch.optim.Adam(list(body_params) + list(head.parameters()), lr=lr)
    losses = []
    for _ in range(steps):
        sx, sy, qx, qy = sample_task()
        loss = head_loss(head, head_params(head), body(join(sx, qx)), torch.cat([sy, qy]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def fit_head(head: nn.Module, init: dict, features: torch.Tensor, labels: torch.Tensor,
             steps: int, lr: float) -> dict:
    """Test-time adaptation (every method): head SGD from ``init`` on fixed features."""
    init = {n: p.detach().clone().requires_grad_(True) for n, p in init.items()}
    adapted = adapt_head(head, init, features.detach(), labels, steps, lr, create_graph=False)
    return {n: p.detach() for n, p in adapted.items()}


# ----------------------------------------------------------------------------- text tasks
def by_episode(examples: Sequence[Example]) -> dict:
    """game -> episode id -> cut -> examples."""
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for ex in examples:
        out[ex.game][ex.episode_id][ex.cut].append(ex)
    return out


def one_cut(cuts: dict, rng: random.Random) -> list[Example]:
    return cuts[rng.choice(sorted(cuts))]


def text_task_sampler(episodes: dict, games: Sequence[str], n_support: int, n_query: int,
                      rng: random.Random) -> Callable:
    """Samples a game, then support and query episodes (one random cut each, every player)."""
    def labels(examples):
        return torch.tensor([ex.label for ex in examples], dtype=torch.float32)

    def sample():
        game = rng.choice(list(games))
        ids = rng.sample(sorted(episodes[game]), min(len(episodes[game]), n_support + n_query))
        n_s = max(1, len(ids) * n_support // (n_support + n_query))
        support = [ex for e in ids[:n_s] for ex in one_cut(episodes[game][e], rng)]
        query = [ex for e in ids[n_s:] for ex in one_cut(episodes[game][e], rng)]
        return [ex.text for ex in support], labels(support), [ex.text for ex in query], labels(query)
    return sample


@torch.no_grad()
def embed(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 64) -> torch.Tensor:
    encoder.eval()
    return torch.cat([encoder(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)])


def evaluate_adaptation(head: nn.Module, init: dict, pool_feats: dict, pool_examples: dict,
                        test_feats: torch.Tensor, test_examples: Sequence[Example], ks: Sequence[int],
                        seeds: int, steps: int, lr: float, base_seed: int) -> list[dict]:
    """Adapt the head from ``init`` on k pool episodes (``seeds`` draws per k), score on test."""
    labels = np.array([ex.label for ex in test_examples])
    groups = defaultdict(list)
    for i, ex in enumerate(test_examples):
        groups[(ex.episode_id, ex.cut)].append(i)
    groups = [np.array(g) for g in groups.values()]
    pool_ids = sorted(pool_feats)
    rows = []
    for k in ks:
        if k > len(pool_ids):
            continue
        for s in range(seeds):
            ids = random.Random(f"{base_seed}|{k}|{s}").sample(pool_ids, k)   # same draw for every method
            feats = torch.cat([pool_feats[e] for e in ids])
            y = torch.tensor([ex.label for e in ids for ex in pool_examples[e]], dtype=torch.float32)
            params = fit_head(head, init, feats, y, steps, lr)
            with torch.no_grad():
                probs = torch.sigmoid(functional_call(head, params, (test_feats,)).squeeze(-1)).numpy()
            rows.append({"k": k, "seed": s, **metric_values(labels, probs, groups)})
    return rows


def summarize(rows: list[dict], game: str, method: str) -> list[dict]:
    out = []
    for k in sorted({r["k"] for r in rows}):
        for metric in METRICS:
            mean, low, high = mean_interval([r[metric] for r in rows if r["k"] == k])
            out.append({"held_out": game, "method": method, "k": k, "metric": metric, "mean": mean,
                        "low": low, "high": high, "n_seeds": sum(r["k"] == k for r in rows)})
    return out


# ----------------------------------------------------------------------------- outputs
def write_curves(rows: list[dict], out: Path) -> None:
    with atomic_file(out / "curves.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["held_out", "method", "k", "metric", "mean", "low",
                                                    "high", "n_seeds"])
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, **{c: f"{r[c]:.4f}" for c in ("mean", "low", "high")}})


def read_curves(path: Path) -> list[dict]:
    """Rows of a ``curves.csv`` written earlier (to resume a run game by game)."""
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return [{**r, "k": int(r["k"]), "n_seeds": int(r["n_seeds"]),
                 **{c: float(r[c]) for c in ("mean", "low", "high")}} for r in csv.DictReader(handle)]


def plot_curves(rows: list[dict], out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    games = sorted({r["held_out"] for r in rows})
    paths = []

    def draw(ax, game, metric):
        for method in METHODS:
            pts = sorted((r["k"], r["mean"], r["low"], r["high"]) for r in rows
                         if r["held_out"] == game and r["method"] == method and r["metric"] == metric)
            if not pts:
                continue
            k, mean, low, high = map(np.array, zip(*pts))
            ax.plot(k, mean, marker="o", label=method)
            ax.fill_between(k, low, high, alpha=0.2)
        ax.set_xscale("log")
        ax.set_xlabel("labelled episodes k")
        ax.set_ylabel(metric)
        ax.set_title(f"held out: {game}")

    for game in games:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        for ax, metric in zip(axes, ("auroc", "top1")):
            draw(ax, game, metric)
        axes[0].legend()
        fig.tight_layout()
        path = out / f"anil_{game}.png"
        atomic_savefig(fig, path, dpi=100)
        plt.close(fig)
        paths.append(path)
    cols = min(4, len(games))
    fig, axes = plt.subplots((len(games) + cols - 1) // cols, cols, figsize=(4 * cols, 3.2 * ((len(games) + cols - 1) // cols)),
                             squeeze=False)
    for ax, game in zip(axes.flat, games):
        draw(ax, game, "auroc")
    for ax in list(axes.flat)[len(games):]:
        ax.axis("off")
    axes.flat[0].legend()
    fig.tight_layout()
    atomic_savefig(fig, out / "anil_curves.png", dpi=100)
    plt.close(fig)
    return paths + [out / "anil_curves.png"]


# ----------------------------------------------------------------------------- main
def split_held_out(episodes: dict, n_test: int, seed: int) -> tuple[list, list]:
    """(pool ids, test ids) of a held-out game: a fixed seeded set of test episodes."""
    ids = sorted(episodes)
    random.Random(seed).shuffle(ids)
    n_test = min(n_test, len(ids) // 2)
    return ids[n_test:], ids[:n_test]


def run_held_out(cfg: Config, episodes: dict, game: str, ks: Sequence[int], model_dir: str, out: Path) -> list[dict]:
    """Meta-train and multitask-train without ``game``, then adapt every method to it."""
    train_games = [g for g in sorted(episodes) if g != game]
    pool_ids, test_ids = split_held_out(episodes[game], cfg.test_episodes, cfg.seed)
    pool_examples = {e: [ex for cut in episodes[game][e].values() for ex in cut] for e in pool_ids}
    test_examples = [ex for e in test_ids for cut in episodes[game][e].values() for ex in cut]

    def fresh(seed_offset: int):
        torch.manual_seed(cfg.seed + seed_offset)
        encoder = TextEncoder(model_dir, cfg.lora_r, cfg.lora_alpha, cfg.max_length)
        return encoder, nn.Linear(encoder.hidden_size, 1)

    def features(encoder):
        return ({e: embed(encoder, [ex.text for ex in pool_examples[e]]) for e in pool_ids},
                embed(encoder, [ex.text for ex in test_examples]))

    rows = []
    for method in METHODS:
        started = time.time()
        encoder, head = fresh(0)
        sampler = text_task_sampler(episodes, train_games, cfg.support_episodes, cfg.query_episodes,
                                    random.Random(f"{cfg.seed}|{game}"))   # same tasks for anil and multitask
        encoder.train()
        if method == "anil":
            losses = meta_train(encoder, head, sampler, cfg.meta_steps, cfg.inner_steps, cfg.inner_lr,
                                cfg.outer_lr, encoder.lora_parameters())
            with atomic_dir(out / game / "anil_adapter", marker="adapter_config.json") as folder:
                encoder.model.save_pretrained(str(folder))
            with atomic_file(out / game / "anil_head.pt", "wb") as handle:
                torch.save(head.state_dict(), handle)
        elif method == "multitask":
            losses = multitask_train(encoder, head, sampler, cfg.meta_steps, cfg.outer_lr, encoder.lora_parameters())
        else:
            losses = []          # the pretrained encoder and a fresh head
        pool_feats, test_feats = features(encoder)
        results = evaluate_adaptation(head, head_params(head), pool_feats, pool_examples, test_feats, test_examples,
                                      ks, cfg.seeds, cfg.adapt_steps, cfg.inner_lr, cfg.seed)
        rows.extend(summarize(results, game, method))
        print(f"  {game} {method}: {time.time() - started:.0f} s, last train losses "
              f"{np.round(losses[-5:], 3).tolist()}", flush=True)
    return rows


def main(cfg: Config) -> list[dict]:
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    ks = [int(k) for k in cfg.ks.split(",") if k]
    episodes, held_out = load_held_out(cfg)
    out.mkdir(parents=True, exist_ok=True)            # only once the input proved good
    model_dir = base_model_dir(cfg.base)
    started = time.time()
    # resume: held-out games already in OUT/curves.csv are kept, not rerun (same config assumed)
    rows = [r for r in read_curves(out / "curves.csv") if r["held_out"] in held_out] if cfg.resume else []
    done = {r["held_out"] for r in rows}
    for game in held_out:
        if game in done:
            print(f"  {game}: already in {out / 'curves.csv'}", flush=True)
            continue
        (out / game).mkdir(exist_ok=True)
        rows.extend(run_held_out(cfg, episodes, game, ks, model_dir, out))
        # an interrupted run keeps every finished game; games another run wrote here are kept too
        mine = {r["held_out"] for r in rows}
        write_curves([r for r in read_curves(out / "curves.csv") if r["held_out"] not in mine] + rows, out)
        plot_curves(read_curves(out / "curves.csv"), out)
    atomic_write_text(out / "anil.json", json.dumps({"config": asdict(cfg), "seconds": round(time.time() - started, 1),
                                                     "episodes": {g: len(e) for g, e in episodes.items()},
                                                     "curves": rows}, indent=2))
    for r in rows:
        if r["metric"] == "auroc":
            print(f"{r['held_out']:<18}{r['method']:<11}k={r['k']:<3} AUROC {r['mean']:.3f} "
                  f"[{r['low']:.3f}, {r['high']:.3f}]")
    print(f"done in {time.time() - started:.0f} s; curves in {out}")
    return rows


def load_held_out(cfg: Config) -> tuple:
    """(the logs' examples by game and episode, the games to hold out in turn); bad input (no
    logs, fewer than two games, a held-out game without episodes) is one line and exit 2."""
    from socialgym_training.common import fail
    if not Path(cfg.logs).exists():
        fail(f"no log file or folder at {cfg.logs}")
    episodes = by_episode(load_examples(cfg.logs))
    if len(episodes) < 2:
        fail(f"leave-one-game-out needs logs of at least two detection games in {cfg.logs}, found {sorted(episodes)}")
    held_out = [g for g in cfg.held_out.split(",") if g] or sorted(episodes)
    unknown = [g for g in held_out if g not in episodes]
    if unknown:
        fail(f"no episodes of {unknown} in {cfg.logs}; games there: {', '.join(sorted(episodes))}")
    return episodes, held_out


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    from socialgym_training.common import parse_config

    main_of(lambda: main(parse_config(Config)), "socialgym_training.anil")
