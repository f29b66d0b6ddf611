"""Detector: metrics, baselines, a smoke run that saves and reloads, the detect command."""
import json

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from socialgym_training import detector as det
from socialgym_training.cli import register
from socialgym_training.detection_data import Example, load_examples, split_episodes
from socialgym_training.detection_eval import evaluate


def _examples(labels_by_episode):
    return [Example("g", f"ep{e}", f"p{i}", 5, "x", y)
            for e, labels in enumerate(labels_by_episode) for i, y in enumerate(labels)]


def test_metrics_of_perfect_and_inverted_scores():
    examples = _examples([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])
    labels = np.array([ex.label for ex in examples])
    perfect = evaluate(examples, labels * 0.8 + 0.1, n_boot=200)
    assert perfect["auroc"]["value"] == 1.0 and perfect["top1"]["value"] == 1.0
    assert perfect["accuracy"]["value"] == 1.0 and perfect["n_episodes"] == 4
    inverted = evaluate(examples, 1 - labels, n_boot=200)
    assert inverted["auroc"]["value"] == 0.0 and inverted["top1"]["value"] == 0.0
    assert inverted["accuracy"]["value"] == 0.0


def test_auroc_is_scikit_learns_with_ties_and_nan_with_one_class():
    from sklearn.metrics import roc_auc_score
    from socialgym_training.detection_eval import auroc
    rng = np.random.default_rng(3)
    for _ in range(50):
        labels, scores = rng.integers(0, 2, 40), np.round(rng.random(40), 1)     # rounding makes ties
        if 0 < labels.sum() < len(labels):
            assert auroc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert np.isnan(auroc(np.ones(5, dtype=int), rng.random(5)))


def test_paired_difference_is_zero_for_one_method_and_signed():
    from socialgym_training.detection_eval import paired_difference
    rng = np.random.default_rng(0)
    examples = _examples([list(rng.permutation([1, 0, 0, 0])) for _ in range(30)])
    labels = np.array([ex.label for ex in examples])
    noisy = labels + rng.normal(0, 0.8, len(labels))
    same = paired_difference(examples, noisy, noisy, n_boot=200)
    assert same == {"value": 0.0, "low": 0.0, "high": 0.0}
    better = paired_difference(examples, labels + rng.normal(0, 0.1, len(labels)), noisy, n_boot=200)
    assert 0 < better["low"] <= better["value"] <= better["high"]


def test_bootstrap_interval_brackets_the_estimate_and_resamples_episodes():
    rng = np.random.default_rng(0)
    examples = _examples([list(rng.permutation([1, 0, 0, 0])) for _ in range(30)])
    probs = rng.random(len(examples))
    result = evaluate(examples, probs, n_boot=300, seed=1)
    for metric in ("accuracy", "auroc", "top1"):
        assert result[metric]["low"] <= result[metric]["value"] <= result[metric]["high"]
        assert result[metric]["low"] < result[metric]["high"]


def test_baselines_on_the_same_split(detection_log_dir):
    train, test = split_episodes(load_examples(detection_log_dir), 0.3, seed=0)
    majority = det.majority_probs(train, len(test))
    assert len(set(majority.tolist())) == 1 and majority[0] < 0.5   # the hidden side is the minority
    probs = det.tfidf_logreg_probs(train, test)
    assert probs.shape == (len(test),) and ((0 <= probs) & (probs <= 1)).all()


@pytest.fixture(scope="module")
def trained_detector(detection_log_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("detector")
    cfg = det.Config(logs=str(detection_log_dir), out=str(out), games="spyfall,undercover", epochs=1,
                     batch_size=8, max_length=48, max_train_examples=24, bootstrap=50, threads=1)
    return cfg, det.main(cfg)


def test_smoke_run_saves_a_detector_that_reloads_to_the_same_predictions(trained_detector):
    cfg, results = trained_detector
    out = det.Path(cfg.out)
    for name in ("adapter/adapter_config.json", "head.pt", "detector.json", "metrics.json", "metrics.csv"):
        assert (out / name).is_file(), name
    assert set(results["methods"]) == {"majority", "tfidf_logreg", "lora_minilm"}
    _, test = split_episodes(load_examples(cfg.logs, ["spyfall", "undercover"]), cfg.test_fraction, cfg.seed)
    # each episode is drawn alone (the exports' split), so a game of six episodes may have no test one
    assert set(results["methods"]["lora_minilm"]) == {"all"} | {ex.game for ex in test} != {"all"}
    reloaded = det.predict(det.load_detector(out), [ex.text for ex in test])
    saved = json.loads((out / "metrics.json").read_text())["methods"]["lora_minilm"]["all"]
    assert det.evaluate(test, reloaded, 50, cfg.seed)["auroc"]["value"] == pytest.approx(saved["auroc"]["value"])
    # training moved the LoRA weights away from their zero init
    state = det.load_detector(out).encoder.model.state_dict()
    assert any(v.abs().sum() > 0 for k, v in state.items() if "lora_B" in k)


def test_detect_command_prints_per_player_suspicion(trained_detector, detection_log_dir):
    cfg, _ = trained_detector
    app = typer.Typer()
    register(app)

    @app.command("other")   # a second command keeps typer from collapsing the app into detect
    def other():
        pass

    log = detection_log_dir / "spyfall.jsonl"
    result = CliRunner().invoke(app, ["detect", str(log), "--model", cfg.out])
    assert result.exit_code == 0, result.output
    first = result.output.split("\n\n")[0]
    assert first.count("hidden side") >= 1 and "public messages" in first
    suspicions = [float(line.split()[1]) for line in result.output.splitlines() if line.startswith("  ")]
    assert suspicions and all(0 <= s <= 1 for s in suspicions)
    bad = CliRunner().invoke(app, ["detect", str(log), "--model", str(detection_log_dir)])
    assert bad.exit_code == 2 and "no trained detector" in bad.output
    missing = CliRunner().invoke(app, ["detect", str(log), "--model", cfg.out, "--episode", "nope"])
    assert missing.exit_code == 2 and "no episode 'nope'" in missing.output


def test_smollm2_body_takes_lora_and_a_head():
    encoder = det.TextEncoder(det.base_model_dir("smollm2"), lora_r=2, lora_alpha=4, max_length=16)
    detector = det.Detector(encoder)
    logits = detector(["[R1 say] TARGET: I am a Villager.", "[R1 vote] Moderator: Votes: TARGET → Ana"])
    assert logits.shape == (2,)
    logits.sum().backward()
    lora = {n: p for n, p in encoder.model.named_parameters() if "lora_B" in n}
    assert lora and any(n.endswith("q_proj.lora_B.default.weight") for n in lora)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in lora.values())
