"""Stand-ins for the heavy modules TextArena's consumers import but these tests never use
(vLLM, Ray, tinker, tinker-cookbook, weave), and a way to import one module of an installed
package without running the package's ``__init__`` (UnstableBaselines' and SPIRAL's import
their whole training stacks). Used only inside the consumer venv's subprocess."""
import importlib.util
import sys
import types


class Remote:
    """``@ray.remote`` run in-process: ``f.remote(...)`` calls ``f``; a class's ``.remote``
    builds it; ``.options(...)`` is ignored."""

    def __init__(self, target):
        self.target = target

    def remote(self, *args, **kwargs):
        return self.target(*args, **kwargs)

    def options(self, **_):
        return self

    def __call__(self, *args, **kwargs):
        return self.target(*args, **kwargs)


def _ray_remote(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return Remote(args[0])
    return Remote


def module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)
    return mod


def bare_package(name: str) -> None:
    """Make ``name`` importable as a package without executing its ``__init__``."""
    spec = importlib.util.find_spec(name)
    mod = module(name)
    mod.__path__ = list(spec.submodule_search_locations)
    mod.__spec__ = spec


class _Anything:
    """A stand-in class: takes any arguments, has any attribute."""

    def __init__(self, *args, **kwargs):
        self.__dict__.update(kwargs)

    @classmethod
    def empty(cls):
        return cls()


def stub_ray_and_vllm() -> None:
    module("ray", remote=_ray_remote, get=lambda ref: ref, wait=None)
    module("ray.exceptions", RayActorError=type("RayActorError", (Exception,), {}),
           RayTaskError=type("RayTaskError", (Exception,), {}))
    module("vllm", EngineArgs=_Anything, LLMEngine=_Anything, SamplingParams=_Anything)
    module("vllm.lora")
    module("vllm.lora.request", LoRARequest=_Anything)


def stub_tinker() -> None:
    types_mod = types.ModuleType("tinker.types")
    types_mod.ModelInput = _Anything
    module("tinker", ModelInput=_Anything, types=types_mod, SamplingClient=_Anything)
    sys.modules["tinker.types"] = types_mod
    module("weave", op=lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f)))
    module("tinker_cookbook")
    module("tinker_cookbook.completers", StopCondition=list, TinkerMessageCompleter=_Anything)
    module("tinker_cookbook.rl")
    module("tinker_cookbook.rl.types", Action=list, Env=object, EnvGroupBuilder=object, Metrics=dict,
           Observation=object, StepResult=_Anything, Trajectory=_Anything, TrajectoryGroup=_Anything)
    module("tinker_cookbook.renderers", Message=dict, Renderer=object, Role=str, get_renderer=None)
    module("tinker_cookbook.tokenizer_utils", Tokenizer=object, get_tokenizer=None)
