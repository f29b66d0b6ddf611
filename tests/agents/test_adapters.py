"""A trained PEFT LoRA adapter on the local backend: ``smollm2?adapter=DIR`` (agents.llm.adapters)."""
import pytest

from agents import make_policy
from agents.runner import EpisodeJob, PolicyPool, run_jobs


@pytest.fixture(scope="module")
def random_adapter(smollm2_available, tmp_path_factory):
    """A tiny LoRA adapter with random (non-zero) weights, saved like a training run saves one."""
    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    from agents.llm.hf_backend import load_model
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


def test_adapted_policy_plays_against_its_base(random_adapter):
    tuned = f"smollm2?adapter={random_adapter}&max_new_tokens=16&max_retries=0"
    base = "smollm2?max_new_tokens=16&max_retries=0"
    jobs = [EpisodeJob("prisoners_dilemma", 3, [tuned, base], config={"rounds": 1})]
    record = run_jobs(jobs, PolicyPool())[0]
    assert record["finished"] and not record.get("failed")
    policies = {t["agent_meta"]["policy"] for t in record["turns"] if "agent_meta" in t}
    assert policies == {tuned, base}


def test_bad_adapter_folder_is_a_clear_error(smollm2_available, tmp_path):
    from agents.llm.hf_backend import ModelNotAvailable
    with pytest.raises(ModelNotAvailable, match="adapter_config.json"):
        make_policy(f"smollm2?adapter={tmp_path}")
    with pytest.raises(ValueError, match="local models only"):
        make_policy("openai:gpt@http://localhost:1?adapter=x")
