"""The embedded SmolLM2 through a CPU runtime (``smollm2?runtime=openvino|onnxruntime``,
socialgym_agents/llm/runtime_backend.py): the spec option's checks, every reply legal (talk and a
hidden-role game included), the same seed giving the same transcript, a seat's cache reused to the
same log-probabilities as a fresh encode, and the scoring mode's top choice agreeing with PyTorch."""
import importlib.util
import json

import numpy as np
import pytest

import socialgym_env
from helpers import require_runtimes
from socialgym_agents import make_policy
from socialgym_agents.base import Request
from socialgym_agents.llm import check_llm_spec, runtime_backend
from socialgym_agents.llm.backend import Completion
from socialgym_agents.llm.config import parse_options
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from socialgym_agents.specs import AgentSpec

RUNTIMES = ("openvino", "onnxruntime")
# free-text talk (battle_of_the_sexes "say"), a hidden-role game with one-word clues, talk and
# votes (chameleon); bets and bids in the naive/batched test (kuhn_poker)
GAMES = {"battle_of_the_sexes": {"rounds": 1}, "chameleon": {}}
FREE_TEXT_PHASES = ("talk", "clue", "discussion")
# A cache reused against a fresh encode of the same prompt, over the fresh encode's 20 likeliest next
# tokens (max) and the whole vocabulary (median): onnxruntime computes the same numbers (0 here);
# OpenVINO quantises activations per pass, so a pass of other tokens moves them (0.16 / 0.07 nat
# here). Dropping the prompt's first token, as a cache one position off would, moves them by 0.9 /
# 0.3 (onnxruntime 1.0 / 0.36).
REUSE_TOLERANCE_NATS = {"onnxruntime": (1e-3, 1e-4), "openvino": (0.4, 0.15)}


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request, smollm2_available):
    require_runtimes(request.param)
    return request.param


def _seats(game: str, config: dict) -> list:
    return ["llm"] * len(socialgym_env.make(game, **config).possible_agents)


def _play(spec: str, games: dict, seed: int = 0) -> list:
    policy = make_policy(spec)
    jobs = [EpisodeJob(game, seed, _seats(game, config), config=config) for game, config in games.items()]
    return run_jobs(jobs, PolicyPool(prebuilt={"llm": policy}))


# ----------------------------------------------------------------------------- the option
@pytest.mark.parametrize("options,message", [
    ("runtime=tensorrt", "option runtime='tensorrt': expected one of torch, openvino, onnxruntime, auto"),
    ("runtime=openvino&dtype=bfloat16", "option dtype=bfloat16 needs runtime=torch"),
    ("runtime=onnxruntime&dtype=int8", "option dtype=int8 needs runtime=torch"),
    ("runtime=openvino&adapter=runs/lora", "option adapter= needs runtime=torch"),
    ("runtime=auto&device=cuda:0", "option device=cuda:0 needs runtime=torch"),
    ("runtime=openvino&device_map=auto", "option device_map=auto needs runtime=torch"),
    ("runtime=openvino&mode=score&head=runs/head.npz", "option head= needs runtime=torch"),
])
def test_options_a_runtime_cannot_honour_are_refused_in_one_line(options, message):
    with pytest.raises(ValueError, match=message) as raised:
        parse_options(options)
    assert "\n" not in str(raised.value)


def test_dtype_auto_and_cpu_are_accepted_and_torch_is_the_default():
    assert parse_options("").runtime == "torch"
    config = parse_options("runtime=openvino&dtype=auto&device=cpu")
    assert (config.runtime, config.dtype) == ("openvino", "auto")


def test_runtime_is_for_smollm2_only():
    with pytest.raises(ValueError, match="option runtime=openvino is for smollm2 only"):
        check_llm_spec(AgentSpec.of("hf:some/folder?runtime=openvino"))
    with pytest.raises(ValueError, match="option runtime=onnxruntime is for smollm2 only"):
        check_llm_spec(AgentSpec.of("openai:m@http://localhost:1/v1?runtime=onnxruntime"))


def test_a_runtime_whose_package_is_missing_is_refused_at_the_check(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a))
    with pytest.raises(ValueError, match=r"runtime=openvino needs the openvino package, not installed"):
        check_llm_spec(AgentSpec.of("smollm2?runtime=openvino"))


def test_auto_falls_back_to_torch_with_one_line_when_openvino_does_not_import(monkeypatch, capsys, smollm2_available):
    import sys

    from socialgym_agents.llm import hf_backend
    built = []
    monkeypatch.setitem(sys.modules, "openvino", None)           # `import openvino` raises ImportError
    monkeypatch.setattr(runtime_backend, "auto_runtime", lambda flags="": "openvino")   # a CPU without bf16
    monkeypatch.setattr(hf_backend, "HFBackend", lambda target, config: built.append(config.runtime) or "torch")
    backend = runtime_backend.smollm2_backend("smollm2", parse_options("runtime=auto"))
    assert backend == "torch" and built == ["auto"]
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("smollm2 runtime=auto: playing through torch, openvino is unavailable")


def test_auto_plays_what_was_measured_fastest_on_each_cpu_type(monkeypatch, capsys):
    assert runtime_backend.auto_runtime("flags : fpu avx2 avx512f avx512_bf16") == "torch"
    assert runtime_backend.auto_runtime("flags : fpu avx2 amx_bf16") == "torch"
    monkeypatch.setattr(runtime_backend, "AUTO_WITHOUT_BF16", "onnxruntime")
    assert runtime_backend.auto_runtime("flags : fpu avx2 fma") == "onnxruntime"
    assert runtime_backend.auto_runtime("flags : fpu avx2 avx512_bf16") == "torch"
    from socialgym_agents.llm import hf_backend
    built = []
    monkeypatch.setattr(runtime_backend, "auto_runtime", lambda flags="": "torch")
    monkeypatch.setattr(hf_backend, "HFBackend", lambda target, config: built.append(config.dtype) or "torch")
    assert runtime_backend.smollm2_backend("smollm2", parse_options("runtime=auto&dtype=auto")) == "torch"
    assert built == ["auto"] and capsys.readouterr().err == ""     # a choice, not a fallback: nothing said


# ----------------------------------------------------------------------------- play
def test_every_reply_is_legal_on_the_first_try(runtime):
    records = _play(f"smollm2?runtime={runtime}&max_retries=0&max_new_tokens=16", GAMES)
    assert all(r["finished"] and not r.get("failed") for r in records)
    turns = [t for r in records for t in r["turns"] if "agent_meta" in t]
    assert turns and all(t["valid"] and t["agent_meta"]["valid"] for t in turns)
    assert all(len(t["agent_meta"]["attempts"]) == 1 for t in turns)
    assert {t["agent_meta"]["backend"] for t in turns} == {runtime}
    talk = [t["agent_meta"]["attempts"][0]["action"]["argument"] for t in turns if t["phase"] in FREE_TEXT_PHASES]
    assert {t["phase"] for t in turns} >= {"talk", "clue", "discussion", "vote"}
    assert talk and max(len(text) for text in talk) > 10                 # free text was written
    reused = [t["agent_meta"]["attempts"][0]["usage"]["reused_tokens"] for t in turns]
    assert sum(reused) > 0                                                # seat caches were used


def test_the_same_seed_gives_the_same_transcript_byte_for_byte(runtime):
    games = {"battle_of_the_sexes": {"rounds": 1}}
    spec = f"smollm2?runtime={runtime}&temperature=1.0&max_new_tokens=12&seed=3"
    first, again = (json.dumps(_play(spec, games), sort_keys=True, default=str) for _ in range(2))
    other = json.dumps(_play(spec.replace("seed=3", "seed=4"), games), sort_keys=True, default=str)
    assert first == again
    assert other != first                                                 # the seed is what was drawn from


def test_naive_and_batched_make_the_same_choices(runtime):
    games = {"prisoners_dilemma": {"rounds": 2}, "kuhn_poker": {}}
    runs = {mode: _play(f"smollm2?runtime={runtime}&mode={mode}", games) for mode in ("naive", "batched")}
    moves = {mode: [(t["agent"], t["action"]) for r in records for t in r["turns"]] for mode, records in runs.items()}
    assert moves["naive"] == moves["batched"]
    usage = {mode: [a["usage"] for r in records for t in r["turns"] if "agent_meta" in t
                    for a in t["agent_meta"]["attempts"]] for mode, records in runs.items()}
    assert sum(u["reused_tokens"] for u in usage["naive"]) == 0 < sum(u["reused_tokens"] for u in usage["batched"])


# ----------------------------------------------------------------------------- numbers
def _request(game: str, config: dict, seed: int) -> Request:
    env = socialgym_env.make(game, **config)
    env.reset(seed=seed)
    agent = env.agent_selection
    return Request((game, agent), env.observe(agent), env.infos[agent], env.prompt_parts(agent))


def test_a_reused_seat_cache_gives_the_log_probabilities_of_a_fresh_encode(runtime):
    backend = make_policy(f"smollm2?runtime={runtime}").backend
    messages = [{"role": "user", "content": "You play rock, paper, scissors against a friend. " * 8}]
    first = backend._new_row(0, Completion(("t", "p"), messages))
    state, _, reused = backend._prefill(first)
    assert reused == 0
    backend._keep(first.key, first.ids, state)
    longer = messages + [{"role": "assistant", "content": "paper"}, {"role": "user", "content": "Again: your move?"}]
    row = backend._new_row(1, Completion(("t", "p"), longer))
    _, from_cache, reused = backend._prefill(row)
    assert reused > len(first.ids) // 2                       # the seat's cache was the start
    fresh = backend.forward.start(row.ids)[1]
    gap = np.abs(from_cache - fresh)
    top_most, median_most = REUSE_TOLERANCE_NATS[runtime]
    assert gap[np.argsort(-fresh)[:20]].max() < top_most and np.median(gap) < median_most
    assert int(np.argmax(from_cache)) == int(np.argmax(fresh))


def test_the_scoring_modes_top_choice_agrees_with_torch_float32(runtime):
    torch_policy = make_policy("smollm2?mode=score&dtype=float32")
    policy = make_policy(f"smollm2?runtime={runtime}&mode=score")
    requests = [_request(game, config, seed) for game, config, seed in
                (("rock_paper_scissors", {"rounds": 1}, 5), ("prisoners_dilemma", {"rounds": 1}, 1),
                 ("liars_dice", {"dice": 1}, 2), ("kuhn_poker", {}, 3))]
    picks = {}
    for name, chosen in (("torch", torch_policy), (runtime, policy)):
        decisions = [chosen.act_batch([request])[0] for request in requests]
        picks[name] = [d.meta["attempts"][0]["reply"] for d in decisions]
        assert all(len(d.meta["attempts"][0]["scores"]) >= 2 for d in decisions)
    assert picks[runtime] == picks["torch"]
