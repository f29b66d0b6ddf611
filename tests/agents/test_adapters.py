"""A trained PEFT LoRA adapter on the local backend: ``smollm2?adapter=DIR`` (socialgym_agents.llm.adapters)."""
from pathlib import Path

import pytest

from socialgym_agents import make_policy
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs


@pytest.fixture(scope="module")
def random_adapter(smollm2_available, tmp_path_factory):
    """A tiny LoRA adapter with random (non-zero) weights, saved like a training run saves one."""
    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    from socialgym_agents.llm.hf_backend import load_model
    base, _ = load_model("smollm2")
    torch.manual_seed(0)
    lora = LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft_model = get_peft_model(copy.deepcopy(base), lora)
    folder = tmp_path_factory.mktemp("adapter")
    peft_model.save_pretrained(folder)
    return folder


def _logits(model, tokenizer):
    import torch
    ids = tokenizer("Imagine you are playing the game as Alice.", return_tensors="pt").input_ids
    with torch.inference_mode():
        return model(input_ids=ids).logits[0, -1]


def test_adapter_changes_the_model_and_leaves_the_base_untouched(random_adapter):
    import torch
    base_policy = make_policy("smollm2?max_new_tokens=8")
    before = _logits(base_policy.backend.model, base_policy.backend.tokenizer).clone()
    tuned = make_policy(f"smollm2?adapter={random_adapter}&max_new_tokens=8")
    assert tuned.backend.model is not base_policy.backend.model
    after = _logits(tuned.backend.model, tuned.backend.tokenizer)
    assert not torch.allclose(before, after, atol=1e-3)
    # The shared base model is not modified by loading the adapter.
    assert torch.equal(before, _logits(base_policy.backend.model, base_policy.backend.tokenizer))
    assert tuned.policy_id == f"smollm2?adapter={random_adapter}&max_new_tokens=8"


def test_the_adapted_copy_shares_the_weights_the_merge_left_unchanged(random_adapter):
    """The merge changes only the LoRA's target layers (q_proj, v_proj here): every other weight of
    the adapted model is the base copy's own tensor, the changed ones are its own, and the logits
    are those of an unshared merged copy."""
    import copy

    import torch
    from socialgym_agents.llm.loading import share_unchanged
    from socialgym_agents.llm.loading import load_model
    tuned = make_policy(f"smollm2?adapter={random_adapter}&max_new_tokens=8").backend.model
    base, tokenizer = load_model("smollm2")
    base_params = dict(base.named_parameters())
    for name, param in tuned.named_parameters():
        shared = param.data_ptr() == base_params[name].data_ptr()
        assert shared == ("q_proj" not in name and "v_proj" not in name), name
    assert tuned.get_output_embeddings().weight is tuned.get_input_embeddings().weight     # still tied
    unshared = copy.deepcopy(tuned)
    assert torch.equal(_logits(unshared, tokenizer), _logits(tuned, tokenizer))
    assert share_unchanged(unshared, base) > 0.7 * sum(p.numel() * p.element_size() for p in base.parameters())


def test_an_int8_adapted_copy_is_quantised_from_the_merge_and_shares_the_layers_it_left(random_adapter):
    """dtype=int8 with an adapter: the merged float32 weights are quantised (the LoRA's layers then
    differ from the int8 base's), every other int8 layer, embedding and norm is the int8 base's
    own tensor, and the logits are those of an unshared copy."""
    import copy

    import torch
    from socialgym_agents.llm.int8 import int8_linears
    from socialgym_agents.llm.loading import load_model
    tuned = make_policy(f"smollm2?adapter={random_adapter}&max_new_tokens=8&dtype=int8").backend.model
    base, tokenizer = load_model("smollm2", "int8")
    layers, base_layers = int8_linears(tuned), int8_linears(base)
    assert set(layers) == set(base_layers) and not any(isinstance(m, torch.nn.Linear) for m in tuned.modules())
    for name, layer in layers.items():
        shared = layer is base_layers[name]
        assert shared == ("q_proj" not in name and "v_proj" not in name), name
        assert shared or not torch.equal(layer.qweight, base_layers[name].qweight)
    assert all(p is dict(base.named_parameters())[name] for name, p in tuned.named_parameters())
    assert torch.equal(_logits(copy.deepcopy(tuned), tokenizer), _logits(tuned, tokenizer))
    assert not torch.allclose(_logits(tuned, tokenizer), _logits(base, tokenizer), atol=1e-3)


def test_adapted_policy_plays_against_its_base(random_adapter):
    tuned = f"smollm2?adapter={random_adapter}&max_new_tokens=16&max_retries=0"
    base = "smollm2?max_new_tokens=16&max_retries=0"
    jobs = [EpisodeJob("prisoners_dilemma", 3, [tuned, base], config={"rounds": 1})]
    record = run_jobs(jobs, PolicyPool())[0]
    assert record["finished"] and not record.get("failed")
    policies = {t["agent_meta"]["policy"] for t in record["turns"] if "agent_meta" in t}
    assert policies == {tuned, base}


def test_bad_adapter_folder_is_a_clear_error(smollm2_available, tmp_path):
    from socialgym_agents.llm.loading import ModelNotAvailable
    with pytest.raises(ModelNotAvailable, match="adapter_config.json"):
        make_policy(f"smollm2?adapter={tmp_path}")
    with pytest.raises(ValueError, match="local models only"):
        make_policy("openai:gpt@http://localhost:1?adapter=x")


SHIPPED = str(Path(__file__).resolve().parents[2] / "socialgym_agents" / "adapters" / "smollm2_selfplay_liars_dice")


def as_trained() -> str:
    """The LLM options self-play trains and rates a checkpoint with (``rate_as``)."""
    from socialgym_training.selfplay.config import Config, layout_options
    return layout_options(Config())


def test_make_demo_rates_the_adapter_as_it_was_trained():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    options = next(line.split("=", 1)[1].strip() for line in makefile.splitlines()
                   if line.startswith("SELFPLAY_OPTIONS"))
    # the layout and sampling as trained; dtype, the K/V and seat-cache budgets and the decisions a
    # tick set only precision, memory and batching
    runtime = ("dtype=", "batch_kv_mb=", "cache_mb=", "batch_size=")
    assert sorted(o for o in options.split("&") if not o.startswith(runtime)) == sorted(as_trained().split("&"))
    assert "dtype=auto" in options.split("&")
    # the adapter and its base model, both as trained, are make demo's Liar's Dice roster
    assert '--roster "liars_dice=smollm2?$(SELFPLAY_OPTIONS),' in makefile
    assert "adapter=socialgym_agents/adapters/smollm2_selfplay_liars_dice&$(SELFPLAY_OPTIONS)" in makefile


def _opening_own_face_probability(spec: str, seeds) -> list:
    """Per seed, the probability the policy gives the opening bid 'bid 1 <its own face>' (always
    true with one die each) in two-player, one-die Liar's Dice: softmax of its scores at T = 1."""
    import math

    import socialgym_env
    from socialgym_agents.llm.parsing import parse_reply
    from socialgym_agents.openspiel_bridge import softmax
    policy = make_policy(spec)
    out = []
    for seed in seeds:
        env = socialgym_env.make("liars_dice", num_players=2, dice=1)
        env.reset(seed=seed)
        agent = env.agent_selection
        info = env.infos[agent]
        policy.reset(("own-face", agent), seed)
        decision = policy.act(env.observe(agent), info, ("own-face", agent), env.prompt_parts(agent))
        scores = {tuple(parse_reply(c, info)["argument"]): x for c, x in decision.meta["attempts"][0]["scores"]}
        assert len(scores) == 12 and all(math.isfinite(x) for x in scores.values())     # every opening bid
        out.append(softmax(scores)[(1, info["game_state"]["my_dice"][0])])
    return out


def test_the_shipped_self_play_adapter_learnt_to_open_on_its_own_face(smollm2_available):
    """The LoRA shipped for the demo is the trained one (docs/selfplay.md): at the opening of one
    deal per face it puts more probability than its base model on the bid that cannot lose a
    call, 'bid 1 <own face>', and most of it on average (the base model: a small share)."""
    import socialgym_env
    from socialgym_agents.registry import check_spec
    options = as_trained()
    check_spec(f"smollm2?adapter={SHIPPED}&{options}", ["liars_dice"])
    seeds, faces = [], set()
    for seed in range(200):                       # one deal per face of the opener's die
        env = socialgym_env.make("liars_dice", num_players=2, dice=1)
        env.reset(seed=seed)
        face = env.infos[env.agent_selection]["game_state"]["my_dice"][0]
        if face not in faces:
            faces.add(face)
            seeds.append(seed)
    assert len(seeds) == 6
    base = _opening_own_face_probability(f"smollm2?{options}", seeds)
    trained = _opening_own_face_probability(f"smollm2?adapter={SHIPPED}&{options}", seeds)
    assert all(t > b for t, b in zip(trained, base))
    assert sum(trained) / 6 > 0.5 > sum(base) / 6
