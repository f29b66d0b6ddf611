"""The model backends a spec can name: one registration per kind (``smollm2``, ``hf``, ``openai``
and any outside backend), looked up by :func:`socialgym_agents.llm.make_llm_policy` and the checks.

A backend is one module plus one registration. The registration names the backend's class (or
any factory ``(target, config) -> Backend``) and its check by ``"module:attr"`` references,
imported only when a spec of that kind is checked or built: looking a kind up never loads
torch or httpx. What :class:`~socialgym_agents.llm.policy.LLMPolicy` calls on a backend is the
:class:`Backend` protocol below.

Outside packages add backends through the ``socialgym.backends`` entry-point group, one entry per
kind, naming a :class:`BackendKind` (``"pkg.mod:BACKEND"``, or ``"pkg.mod"`` when the module sets
``BACKEND``), or call :func:`register_backend` (docs: "Adding a model backend")::

    [project.entry-points."socialgym.backends"]
    echo = "my_package.echo_backend:BACKEND"
"""
from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Callable, Optional, Protocol, Sequence, Union, runtime_checkable

from .backend import Completion, Reply

BACKEND_GROUP = "socialgym.backends"
unavailable_backends: dict = {}      # entry-point name -> why it could not be loaded


@runtime_checkable
class Backend(Protocol):
    """What :class:`~socialgym_agents.llm.policy.LLMPolicy` needs of every backend."""

    kind: str               # recorded in each decision's meta as ``backend``
    model_name: str         # recorded as ``model``

    def complete(self, items: Sequence[Completion]) -> list[Union[Reply, BaseException]]:
        """One :class:`Reply` per :class:`Completion`, in order; a request that failed (after the
        backend's own retries) is the exception in its place, so one bad request fails one seat."""


@runtime_checkable
class MeasuresPrompts(Protocol):
    """Optional: a context budget. Without ``fits`` every prompt fits."""

    def fits(self, messages: list, share: float = 1.0) -> bool:
        """Whether ``messages`` take at most ``share`` of the prompt budget."""


@runtime_checkable
class CachesSeats(Protocol):
    """Optional: per-seat state (a KV cache) to forget when a seat's episode ends."""

    def release(self, key: tuple) -> None: ...


@runtime_checkable
class ScoresReplies(Protocol):
    """Optional: ``mode=score``. Without ``score`` the policy generates instead."""

    def score(self, items: Sequence[Completion], candidates: Sequence[Sequence[str]]) -> list:
        """Per item, the log-probability of each candidate reply after its prompt (or the exception)."""


@runtime_checkable
class TakesFeedback(Protocol):
    """Optional: told whether a reply kept to the constraint it was sent under."""

    def feedback(self, reply: Reply, legal: bool) -> None: ...


# A "module:attr" reference, resolved on first use, or the object itself.
Reference = Union[str, Callable]


@dataclass(frozen=True)
class BackendKind:
    """One backend's registration.

    ``factory(target, config) -> Backend`` builds it (``target``: the spec's name, e.g. the
    model folder or ``model@url``, or the kind itself when it takes none); ``check(target,
    config)`` raises ValueError (one line) for a target that could not be built, without
    loading or connecting; ``takes_target``: the spec names a model after ``kind:`` (else it
    takes none: ``smollm2``); ``local_weights``: its weights are on this machine, so an
    ``adapter=`` may be merged in; ``prompt_fits(target, config)`` gives a ``fits(messages,
    share)`` that measures prompts as the backend does without loading weights (None: no
    limit), for rebuilding logged conversations (:mod:`socialgym_agents.llm.transcript`);
    ``form`` is how a spec is written (error messages)."""

    kind: str
    factory: Reference
    check: Optional[Reference] = None
    takes_target: bool = True
    local_weights: bool = False
    prompt_fits: Optional[Reference] = None
    form: str = ""

    @property
    def written(self) -> str:
        """``form``, or the generic one."""
        return self.form or (f"{self.kind}:<model>[?options]" if self.takes_target else f"{self.kind}[?options]")

    def build(self, target: str, config) -> Backend:
        return resolve(self.factory)(target, config)

    def check_target(self, target: str, config) -> None:
        if self.check is not None:
            resolve(self.check)(target, config)

    def fits_for(self, target: str, config) -> Optional[Callable]:
        return None if self.prompt_fits is None else resolve(self.prompt_fits)(target, config)


def resolve(reference: Reference):
    """The object a ``"module:attr"`` reference names (imported now), or ``reference`` itself."""
    if not isinstance(reference, str):
        return reference
    module_name, _, attr = reference.partition(":")
    target = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


_BACKENDS: dict = {}
_entry_points_loaded = False


def register_backend(kind: Union[str, BackendKind], factory: Optional[Reference] = None, *, replace: bool = False,
                     **traits) -> BackendKind:
    """Add a backend: a :class:`BackendKind`, or its ``kind``, ``factory`` and traits
    (``check=``, ``takes_target=``, ``local_weights=``, ``prompt_fits=``, ``form=``). A kind
    already registered is ValueError unless ``replace=True``."""
    entry = kind if isinstance(kind, BackendKind) else BackendKind(kind, factory, **traits)
    if not entry.kind or not entry.kind.isidentifier():
        raise ValueError(f"a backend kind is a name like 'echo' (letters, digits, _), got {entry.kind!r}")
    if entry.kind in _BACKENDS and not replace:
        raise ValueError(f"a backend {entry.kind!r} is already registered; pass replace=True to replace it")
    _BACKENDS[entry.kind] = entry
    return entry


def unregister_backend(kind: str) -> None:
    """Remove a backend (tests use it to clean up)."""
    _BACKENDS.pop(kind, None)


def backend_kinds() -> dict:
    """``{kind: BackendKind}`` of every registered backend (the installed ones' entry points loaded once)."""
    _load_entry_point_backends()
    return dict(_BACKENDS)


def backend_kind(kind: str) -> Optional[BackendKind]:
    """The registration of ``kind``, or None."""
    return backend_kinds().get(kind)


def is_model_spec(spec) -> bool:
    """Whether ``spec`` (an AgentSpec, or a string: a request's opponent, a logged roster's
    policy) names a language model, a registered backend's kind; False for one that does not
    parse or names no backend."""
    from ..specs import AgentSpec, PolicySpecError
    try:
        return backend_kind(AgentSpec.of(spec).kind) is not None
    except PolicySpecError:
        return False


def _load_reference(reference: str) -> BackendKind:
    """The BackendKind an entry point names: "pkg.mod" (its ``BACKEND``) or "pkg.mod:attr"."""
    found = resolve(reference if ":" in reference else f"{reference}:BACKEND")
    if not isinstance(found, BackendKind):
        raise TypeError(f"{reference!r} is not a BackendKind")
    return found


def _load_entry_point_backends() -> None:
    """Register every installed backend of the ``socialgym.backends`` group, once. A broken
    one is reported (a warning, and ``unavailable_backends``) and breaks nothing else."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for entry in sorted(entry_points(group=BACKEND_GROUP), key=lambda e: e.name):
        try:
            found = _load_reference(entry.value)
            why = None if found.kind == entry.name else \
                f"the entry point is named {entry.name!r} but the backend's kind is {found.kind!r}"
            if why is None:
                register_backend(found)
        except (ImportError, AttributeError, TypeError, ValueError) as err:
            why = str(err)
        if why:
            unavailable_backends[entry.name] = why
            warnings.warn(f"socialgym: installed backend {entry.name!r} ({entry.value}) is not loaded: {why}",
                          stacklevel=2)


def _check_local(target: str, config) -> None:
    """A local model that could be loaded (ModelNotAvailable says why not); reads no weights."""
    from .loading import check_model
    _no_runtime(target, config)
    check_model(target)


def _check_smollm2(target: str, config) -> None:
    """The embedded model, and the package of the CPU runtime it names (imports nothing)."""
    from .runtime_backend import check_runtime
    check_runtime(config)
    _check_local(target, config)


def _no_runtime(target: str, config) -> None:
    """``runtime=`` is the embedded model's (its exports are of that model alone)."""
    if config.runtime != "torch" and target != "smollm2":
        raise ValueError(f"option runtime={config.runtime} is for smollm2 only (the CPU runtimes play "
                         f"its int8 export); {target} plays through {'PyTorch' if '@' not in target else 'its server'}")


def _check_server(target: str, config) -> None:
    """``model@url`` with an http(s) URL; connects to nothing."""
    from .openai_backend import parse_target
    _no_runtime(target, config)
    parse_target(target)


# The built-in backends, by reference: torch and httpx load only when such a spec is built.
register_backend("smollm2", "socialgym_agents.llm.runtime_backend:smollm2_backend", check=_check_smollm2, takes_target=False,
                 local_weights=True, prompt_fits="socialgym_agents.llm.transcript:token_fits", form="smollm2[?options]")
register_backend("hf", "socialgym_agents.llm.hf_backend:HFBackend", check=_check_local, local_weights=True,
                 prompt_fits="socialgym_agents.llm.transcript:token_fits", form="hf:<model>[?options]")
register_backend("openai", "socialgym_agents.llm.openai_backend:OpenAIBackend", check=_check_server,
                 prompt_fits="socialgym_agents.llm.transcript:char_fits", form="openai:<model>@<url>[?options]")
