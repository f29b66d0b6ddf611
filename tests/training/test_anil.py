"""ANIL: the inner loop touches only the head, the outer gradient reaches LoRA, meta-learning helps
on a task family with planted shared structure, and a smoke run saves what it trains."""
import csv
import random

import pytest
import torch
from torch import nn

from socialgym_training import anil
from socialgym_training.detector import TextEncoder, base_model_dir


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(0)
    return TextEncoder(base_model_dir("minilm"), lora_r=4, lora_alpha=8, max_length=32)


TEXTS = ["[R1 clue] TARGET: kitchen", "[R1 clue] TARGET: recipe", "[R1 vote] Moderator: Votes: TARGET → Ana",
         "[R1 say] TARGET: I am a Villager", "[R1 say] TARGET: trust me", "[R1 say] TARGET: I saw nothing"]


def test_inner_loop_changes_only_head_parameters(encoder):
    head = nn.Linear(encoder.hidden_size, 1)
    body_before = {n: p.detach().clone() for n, p in encoder.named_parameters()}
    head_before = {n: p.detach().clone() for n, p in head.named_parameters()}
    features = encoder(TEXTS[:4])
    adapted = anil.adapt_head(head, anil.head_params(head), features, torch.tensor([1., 0., 0., 1.]),
                              steps=3, lr=0.5, create_graph=True)
    assert set(adapted) == {"weight", "bias"}
    assert all(not torch.equal(adapted[n], head_before[n]) for n in adapted)
    # the inner loop is functional: neither the body nor the module's own head weights moved
    assert all(torch.equal(p, body_before[n]) for n, p in encoder.named_parameters())
    assert all(torch.equal(p, head_before[n]) for n, p in head.named_parameters())


def test_outer_gradient_reaches_lora_weights_and_head_init(encoder):
    head = nn.Linear(encoder.hidden_size, 1)
    encoder.zero_grad()
    loss = anil.anil_loss(encoder, head, TEXTS[:3], torch.tensor([1., 0., 0.]), TEXTS[3:],
                          torch.tensor([0., 1., 0.]), inner_steps=2, inner_lr=0.5)
    loss.backward()
    lora_b = [p for n, p in encoder.model.named_parameters() if "lora_B" in n]
    assert lora_b and all(p.grad is not None and p.grad.abs().sum() > 0 for p in lora_b)
    assert all(p.grad is None or p.grad.abs().sum() == 0
               for n, p in encoder.model.named_parameters() if "lora_" not in n)   # the base stays frozen
    assert head.weight.grad.abs().sum() > 0


def _planted_family(dim=24, shared=2, seed=0):
    """Tasks share one hidden 2-d subspace of a 24-d input; each task is a random direction in it."""
    basis = torch.linalg.qr(torch.randn(dim, shared, generator=torch.Generator().manual_seed(seed)))[0]

    def task(rng, n):
        angle = rng.uniform(0, 6.283)
        w = basis @ torch.tensor([torch.cos(torch.tensor(angle)), torch.sin(torch.tensor(angle))])
        x = torch.randn(n, dim, generator=torch.Generator().manual_seed(rng.randrange(10**9)))
        return x, (x @ w > 0).float()
    return task


def test_anil_adapts_better_than_scratch_at_k5_on_planted_structure():
    torch.manual_seed(0)
    task = _planted_family()
    rng = random.Random(0)

    def sample():
        x, y = task(rng, 30)
        return x[:5], y[:5], x[5:], y[5:]

    body, head = nn.Linear(24, 8), nn.Linear(8, 1)
    scratch_body, scratch_head = nn.Linear(24, 8), nn.Linear(8, 1)
    scratch_body.load_state_dict(body.state_dict())
    scratch_head.load_state_dict(head.state_dict())
    losses = anil.meta_train(body, head, sample, steps=200, inner_steps=5, inner_lr=0.5, outer_lr=0.01,
                             body_params=list(body.parameters()))
    assert losses[-50:] and sum(losses[-50:]) / 50 < sum(losses[:50]) / 50

    def accuracy(b, h, seed):
        test_rng, correct = random.Random(seed), []
        for _ in range(40):
            x, y = task(test_rng, 205)
            with torch.no_grad():
                feats = b(x)
            params = anil.fit_head(h, anil.head_params(h), feats[:5], y[:5], steps=5, lr=0.5)
            logits = torch.func.functional_call(h, params, (feats[5:],)).squeeze(-1)
            correct.append(((logits > 0).float() == y[5:]).float().mean().item())
        return sum(correct) / len(correct)

    meta, scratch = accuracy(body, head, 1), accuracy(scratch_body, scratch_head, 1)
    print(f"k=5 accuracy: ANIL {meta:.3f}, scratch {scratch:.3f}")
    assert meta > scratch + 0.1, (meta, scratch)


def test_smoke_run_writes_curves_and_a_reloadable_meta_trained_body(detection_log_dir, tmp_path):
    cfg = anil.Config(logs=str(detection_log_dir), out=str(tmp_path), held_out="spyfall", ks="1,2", seeds=2,
                      test_episodes=2, meta_steps=2, support_episodes=1, query_episodes=1, inner_steps=1,
                      adapt_steps=2, max_length=32, threads=1)
    rows = anil.main(cfg)
    assert {(r["method"], r["k"]) for r in rows} == {(m, k) for m in anil.METHODS for k in (1, 2)}
    with open(tmp_path / "curves.csv") as handle:
        assert len(list(csv.DictReader(handle))) == len(rows) == 3 * 2 * 3
    assert (tmp_path / "anil_spyfall.png").stat().st_size > 0 and (tmp_path / "anil_curves.png").is_file()
    reloaded = TextEncoder(base_model_dir("minilm"), max_length=32, adapter_dir=str(tmp_path / "spyfall" / "anil_adapter"))
    assert any(p.abs().sum() > 0 for n, p in reloaded.model.named_parameters() if "lora_B" in n)
    head = nn.Linear(reloaded.hidden_size, 1)
    head.load_state_dict(torch.load(tmp_path / "spyfall" / "anil_head.pt"))
