"""The frozen-feature probe: the leak guard, a planted effect and a null on synthetic logs, the
resumable feature cache, SmolLM2's pooling and the command's bad input."""
import copy
import dataclasses
import random

import numpy as np
import pytest

from socialgym_env.logs import append_episode
from socialgym_training import probe
from socialgym_training.detection_data import episode_examples

FILLER = ["I was at the market this morning.", "The weather feels strange today.", "We should vote carefully.",
          "I trust the quiet ones less.", "Let us hear from everyone first.", "That answer sounded odd.",
          "I have nothing to hide.", "My guess is still open.", "Someone is rushing the vote.",
          "I agree with the last point.", "We need more questions.", "That was a fair question."]
NAMES = ["Ana", "Bo", "Cy", "Dee"]


def synthetic_record(template: dict, index: int, marker: str = "", shuffle_labels: bool = False) -> dict:
    """A four-seat Spyfall log of neutral filler talk over two rounds; the spy's lines end with
    ``marker``. ``shuffle_labels`` gives the spy's team to a seat drawn uniformly after the talk
    is written (a null: the same text, the label shuffled within the episode, so the marker is
    on the spy no more often than the base rate)."""
    rng = random.Random(index)
    spy = rng.randrange(4)
    agents = [f"player_{i}" for i in range(4)]
    record = copy.deepcopy(template)
    record.update(episode_id=f"spyfall|synthetic|e{index:04d}", turns=[], metrics={}, winners=[])
    record["roster"] = [dict(template["roster"][0], agent=a, name=NAMES[i], role="Spy" if i == spy else "Visitor",
                             team="spy" if i == spy else "locals") for i, a in enumerate(agents)]
    messages = [{"index": i, "step": 0, "round": 1, "phase": "", "sender": None, "visibility": "private",
                 "receivers": [a], "text": "You are the Spy." if i == spy else "You are not the Spy. The location is Farm."}
                for i, a in enumerate(agents)]
    transcript = []
    for rnd in (1, 2):
        messages.append({"step": 0 if rnd == 1 else 9, "round": rnd, "phase": "", "sender": None,
                         "visibility": "public", "receivers": agents, "text": f"Round {rnd} of 2 starts."})
        transcript.append(f"[R{rnd}] Moderator: Round {rnd} of 2 starts.")
        for i, a in enumerate(agents):
            text = rng.choice(FILLER) + (f" {marker}" if marker and i == spy else "")
            messages.append({"step": rnd * 4 + i, "round": rnd, "phase": "questioning", "sender": a,
                             "visibility": "public", "receivers": agents, "text": text})
            transcript.append(f"[R{rnd} questioning] {NAMES[i]}: {text}")
    for i, m in enumerate(messages):
        m["index"] = i
    record.update(messages=messages, transcript=transcript)
    if shuffle_labels:
        drawn = rng.randrange(4)
        for i, seat in enumerate(record["roster"]):
            seat["team"] = "spy" if i == drawn else "locals"
    return record


def write_logs(folder, records):
    folder.mkdir(parents=True, exist_ok=True)
    for record in records:
        append_episode(folder / "spyfall.jsonl", record)
    return folder


def minilm_config(tmp_path, logs, **overrides):
    return probe.Config(logs=str(logs), out=str(tmp_path / "out"), layers="", minilm=True, bootstrap=200,
                        inner_folds=3, cache=str(tmp_path.parent / "probe_cache"), threads=1, **overrides)


@pytest.fixture(scope="module")
def spy_template(detection_records):
    return detection_records["spyfall"][0]


# ----------------------------------------------------------------------------- leak guard
def test_guard_passes_every_scripted_game(detection_records):
    examples = probe.guarded_examples([r for records in detection_records.values() for r in records])
    assert examples and {ex.game for ex in examples} == set(detection_records)


def test_guard_catches_a_planted_role_line(detection_records):
    record = detection_records["spyfall"][0]
    spy = next(s for s in record["roster"] if s["team"] == "spy")
    role_line = next(m["text"] for m in record["messages"]
                     if m["visibility"] == "private" and spy["agent"] in m["receivers"])
    examples = [ex for ex in episode_examples(record) if ex.target == spy["agent"]]
    probe.assert_public_only(record, examples)                         # the builder's inputs are clean
    planted = dataclasses.replace(examples[0], text=examples[0].text + f"\n[R1] Moderator: {role_line}")
    with pytest.raises(probe.LeakError, match="not a public line"):
        probe.assert_public_only(record, [planted])
    # the role line pasted into a public line the target spoke is caught too
    first = examples[0].text.split("\n")[0]
    pasted = dataclasses.replace(examples[0], text=examples[0].text.replace(first, f"{first} {role_line}", 1))
    with pytest.raises(probe.LeakError):
        probe.assert_public_only(record, [pasted])


def test_probe_inputs_hold_no_private_role_text(spy_template):
    records = [synthetic_record(spy_template, i, marker="crimson") for i in range(6)]
    examples = probe.guarded_examples(records)
    assert examples
    assert not any("You are" in ex.text or "Spy" in ex.text or "Farm" in ex.text for ex in examples)


# ----------------------------------------------------------------------------- planted effect and null
def test_a_planted_word_is_found_and_a_shuffled_label_is_not(spy_template, tmp_path):
    planted = write_logs(tmp_path / "planted", [synthetic_record(spy_template, i, "crimson") for i in range(24)])
    results = probe.main(minilm_config(tmp_path, planted))
    auroc = results["methods"]["probe_minilm"]["all"]["auroc"]
    assert auroc["value"] > 0.95 and auroc["low"] > 0.9, auroc
    assert results["selected"] == "minilm"
    # cross-fitted by episode: every example is tested once, by models that never saw its episode
    crossed = probe.main(minilm_config(tmp_path, planted, outer_folds=4))
    assert crossed["n_test"] == results["n_train"] + results["n_test"] and crossed["selected"] == ["minilm"] * 4
    assert crossed["methods"]["probe_selected"]["all"]["auroc"]["low"] > 0.9
    # the same talk with the spy's team given to a seat drawn at random: nothing to find
    null = write_logs(tmp_path / "null", [synthetic_record(spy_template, i, "crimson", shuffle_labels=True)
                                          for i in range(24)])
    results = probe.main(minilm_config(tmp_path, null))
    for method in ("probe_minilm", "tfidf_logreg", "stacked"):
        auroc = results["methods"][method]["all"]["auroc"]
        assert auroc["low"] < 0.5 < auroc["high"], (method, auroc)
    diff = results["paired_vs_tfidf"]["probe_selected"]["all"]
    assert diff["low"] <= diff["value"] <= diff["high"]


# ----------------------------------------------------------------------------- cache and resume
class CountingFeatures:
    layers = [1, 2]
    name = "counting"

    def __init__(self, fail_after=None):
        self.calls, self.fail_after = 0, fail_after

    def encode(self, texts):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("killed")
        lengths = np.array([[len(t)] for t in texts], dtype=np.float32)
        return {layer: lengths * layer for layer in self.layers}


def test_features_are_cached_and_a_killed_run_resumes(tmp_path):
    texts = [f"text {'x' * i}" for i in range(10)]
    cache = probe.FeatureCache(tmp_path, "digest", "counting")
    killed = CountingFeatures(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        probe.extract(killed, texts, cache, batch_size=2, chunk=2)
    resumed = CountingFeatures()
    out = probe.extract(resumed, texts, cache, batch_size=2, chunk=2)
    assert resumed.calls == 3                                        # 2 of the 5 chunks were already on disk
    for layer in (1, 2):
        assert out[layer][:, 0].tolist() == [len(t) * layer for t in texts]   # back in the examples' order
    again = CountingFeatures()
    assert probe.extract(again, texts, cache, batch_size=2, chunk=2)[2].tolist() == out[2].tolist()
    assert again.calls == 0 and not list(tmp_path.rglob("*.npz")) and not list(tmp_path.rglob("*.tmp"))


def test_input_digest_follows_the_texts(detection_records):
    examples = episode_examples(detection_records["spyfall"][0])
    changed = [dataclasses.replace(examples[0], text=examples[0].text + " ")] + examples[1:]
    assert probe.input_digest(examples) == probe.input_digest(list(examples))
    assert probe.input_digest(changed) != probe.input_digest(examples)


# ----------------------------------------------------------------------------- the real models
def test_smollm2_pooling_ignores_padding_and_checks_layers():
    features = probe.SmolLM2Features([0, 30], max_length=32)
    short = "[R1 say] TARGET: I am a Villager."
    alone = features.encode([short])
    batched = features.encode([short, short + " I saw Bo at night and I do not trust anyone here at all."])
    assert alone[30].shape == (1, 576) and batched[0].shape == (2, 576)
    for layer in (0, 30):
        np.testing.assert_allclose(alone[layer][0], batched[layer][0], atol=1e-4)
        assert not np.allclose(batched[layer][0], batched[layer][1])
    with pytest.raises(ValueError, match="layers 0..30"):
        probe.SmolLM2Features([31]).encode(["x"])


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "socialgym_training.probe", "--logs", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"error: no log file or folder at {tmp_path / 'none'}"]
    with pytest.raises(SystemExit) as err:
        probe.main(probe.Config(logs=str(tmp_path), out=str(tmp_path / "out"), layers="a,b"))
    assert err.value.code == 2
    assert not (tmp_path / "out").exists()
