"""What a spec kind is comes from the registries: policy kinds with declared traits
(``registry.PolicyKind``) and model backends (``llm.backends``). The servers go by those traits,
never by a kind's name: a plugin kind that loads a model is built once and shared, and a
client cannot choose it; a cheap plugin kind is scripted. Server options are parsed as specs."""
import subprocess
import sys

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient   # noqa: E402

from socialgym_agents import registry   # noqa: E402
from socialgym_agents.llm import backends, check_llm_spec   # noqa: E402
from socialgym_agents.scripted import SCRIPTED   # noqa: E402
from socialgym_agents.serve import game_session   # noqa: E402
from socialgym_agents.serve.game_session import BadRequest, GameDefaults, GameSession   # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app   # noqa: E402
from socialgym_agents.specs import AgentSpec, PolicySpecError   # noqa: E402
from socialgym_env import cli   # noqa: E402
from tests.conftest import ROOT   # noqa: E402


@pytest.fixture
def plugin_kinds(monkeypatch):
    """Two plugin kinds for one test: ``heavy`` (declares loads_model, counts its builds) and
    ``plain`` (no traits: scripted)."""
    builds = []

    def heavy(spec, seed=0):
        builds.append(str(spec))
        return SCRIPTED["random"](seed=seed)

    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    registry.register_kind("heavy", heavy, loads_model=True)
    registry.register_kind("plain", lambda spec, seed=0: SCRIPTED["random"](seed=seed))
    return builds


# ---------------------------------------------------------------------- the registries
def test_policy_kinds_declare_their_traits():
    assert registry.policy_kind("scripted:random").scripted
    human = registry.policy_kind("human")
    assert human.interactive and not human.scripted and not human.loads_model
    for spec in ("smollm2", "hf:/m", "openai:m@http://h/v1"):
        kind = registry.policy_kind(spec)
        assert kind.loads_model and not kind.scripted and kind.name == AgentSpec.parse(spec).kind
    with pytest.raises(PolicySpecError, match=r"unknown policy spec 'nosuch:x'; valid forms: scripted:<name>, "
                                              r"smollm2\[\?options\], hf:<model>\[\?options\], "
                                              r"openai:<model>@<url>\[\?options\], human"):
        registry.policy_kind("nosuch:x")


def test_register_kind_refuses_built_ins_and_silent_replacement(plugin_kinds):
    with pytest.raises(PolicySpecError, match="'scripted' is a built-in policy kind"):
        registry.register_kind("scripted", lambda spec, seed=0: None)
    with pytest.raises(PolicySpecError, match="'heavy' is already registered; pass replace=True"):
        registry.register_kind("heavy", lambda spec, seed=0: None)
    replaced = registry.register_kind("heavy", lambda spec, seed=0: None, replace=True)
    assert registry.policy_kind("heavy:x") is replaced and not replaced.loads_model
    assert "heavy:..." in str(pytest.raises(PolicySpecError, registry.policy_kind, "nosuch").value)


def test_the_backend_registry_refuses_unknown_and_duplicate_kinds(monkeypatch):
    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))
    assert backends.backend_kind("nosuch") is None
    with pytest.raises(ValueError, match="unknown LLM kind 'nosuch'; registered: hf, openai, smollm2"):
        check_llm_spec(AgentSpec("nosuch"))
    with pytest.raises(ValueError, match="a backend 'hf' is already registered; pass replace=True"):
        backends.register_backend("hf", "elsewhere:Backend")
    with pytest.raises(ValueError, match="a backend kind is a name like 'echo'"):
        backends.register_backend("two words", "elsewhere:Backend")
    # Registered by reference: nothing is imported until a spec of the kind is built.
    backends.register_backend("ghost", "no_such_module_anywhere:Backend", takes_target=False)
    assert registry.check_spec("ghost") == AgentSpec("ghost")
    with pytest.raises(ModuleNotFoundError, match="no_such_module_anywhere"):
        registry.make_policy("ghost")


def test_looking_up_and_checking_the_built_in_backends_imports_neither_torch_nor_httpx():
    probe = ("import sys; from socialgym_agents import registry; from socialgym_agents.llm import backends; "
             "backends.backend_kind('hf'); registry.policy_kind('hf:/m'); "
             "registry.check_spec('openai:m@http://127.0.0.1:9/v1'); "
             "backends.register_backend('hf2', 'socialgym_agents.llm.hf_backend:HFBackend'); "
             "registry.policy_kind('hf2:/m'); "
             "print(sorted(m for m in ('torch', 'transformers', 'httpx') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_backend_declares_whether_it_takes_a_target_and_adapters():
    for spec, words in (("smollm2:x", "smollm2 takes no target, only options"),
                        ("hf:", "hf spec needs a model: hf:<model>[?options]"),
                        ("openai:m@http://h/v1?adapter=runs/a", "option adapter= is for local models only")):
        with pytest.raises(PolicySpecError) as refused:
            registry.check_spec(spec)
        assert words in str(refused.value)


# ---------------------------------------------------------------------- the servers go by traits
def test_a_plugin_kind_that_loads_a_model_is_built_once_and_shared_not_per_session(plugin_kinds):
    defaults = GameDefaults(opponents=("heavy:x",))
    app = create_openenv_app(defaults)
    assert app.state.env_server.store._executor is not None          # played off the event loop
    shared = app.state.env_server.pool
    for seed in (0, 1):
        GameSession(defaults, shared).reset(seed=seed)
    assert plugin_kinds == ["heavy:x"]                             # one build for both sessions


def test_a_client_may_choose_a_cheap_plugin_kind_but_not_one_that_loads_a_model(plugin_kinds):
    session = GameSession(GameDefaults())
    observation = session.reset(seed=0, opponents="plain:x")["observation"]
    assert session.state()["opponents"] == ["plain:x"] and observation["seat"] == "player_0"
    for opponents in ("heavy:x", ["heavy:x"], "human", "smollm2"):
        with pytest.raises(BadRequest, match="refused: a client may choose scripted opponents only"):
            session.reset(seed=0, opponents=opponents)
    assert plugin_kinds == []


# ---------------------------------------------------------------------- _env_for's steps
def test_read_reset_fills_in_the_defaults_and_parses_the_opponents():
    defaults = GameDefaults(game="liars_dice", seat=1, opponents=("scripted:random",), config={"dice": 2})
    choice = game_session.read_reset({}, defaults)
    assert (choice.game, choice.seat, choice.seats, choice.config) == ("liars_dice", 1, None, {"dice": 2})
    assert choice.opponents == (AgentSpec("scripted", "random"),)
    given = game_session.read_reset({"game": "chicken", "seats": [0, "player_1"], "opponents":
                                     "scripted:heuristic,scripted:constant:swerve", "config": {"rounds": 3}}, defaults)
    assert given.seats == (0, "player_1") and given.opponents == (AgentSpec("scripted", "heuristic"),
                                                                  AgentSpec("scripted", "constant", "swerve"))
    assert given.key != choice.key and game_session.read_reset({}, defaults).key == choice.key


@pytest.mark.parametrize("options, words", [
    ({"seat": True}, "seat must be a seat id, a seat index or a role"),
    ({"seat": "x" * 200}, "seat must be a string of 1 to 128 characters"),
    ({"seat": 0, "seats": [0]}, "give seat (one) or seats (several), not both"),
    ({"seats": []}, "seats is a list of 1 to 64"),
    ({"seats": [0, 1.5]}, "seats holds seat ids or indices"),
    ({"opponents": "scripted:random,,scripted:random"}, "has an empty entry"),
    ({"opponents": ","}, "names no policy"),
    ({"opponents": ["scripted:random"] * 65}, "at most 64 specs"),
    ({"opponents": ",".join(["scripted:random"] * 65)}, "at most 64 specs"),
    ({"opponents": "scripted:" + "x" * 200}, "an opponent spec must be a string of 1 to 128 characters"),
    ({"opponents": [7]}, "an opponent spec must be a string"),
    ({"opponents": {"a": 1}}, "opponents must be a policy spec or a list"),
    ({"opponents": "scripted:nosuch"}, "unknown scripted policy 'nosuch'"),
    ({"config": [1]}, "a config is an object of game config keys"),
])
def test_each_reset_step_refuses_bad_input_with_one_line(options, words):
    with pytest.raises(BadRequest) as refused:
        game_session.read_reset(options, GameDefaults())
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_rebuild_keeps_the_env_while_the_choice_is_the_same():
    session = GameSession(GameDefaults())
    session.reset(seed=0)
    env = session.env
    session.reset(seed=1)
    assert session.env is env
    session.reset(seed=1, opponents="scripted:constant:defect")
    assert session.env is not env and session.state()["opponents"] == ["scripted:constant:defect"]
    with pytest.raises(BadRequest, match="has 2 seats"):               # the engine refuses: said, nothing kept
        session.reset(seed=1, opponents=["scripted:random", "scripted:random"])
    assert session._env_key is None


# ---------------------------------------------------------------------- the command line
@pytest.mark.parametrize("argv, words", [
    (["serve-env", "--opponents", "scripted:random,,scripted:random"], "has an empty entry"),
    (["serve-env", "--opponents", ","], "names no policy"),
    (["serve-env", "--opponents", "smollm2?x"], "option 'x' needs a key and a value"),
    (["arena", "--models", "smollm2,,smollm2"], "has an empty entry"),
    (["arena", "--models", "scripted:random"], "--models takes model specs"),
])
def test_server_options_are_parsed_as_specs_bad_text_is_one_line(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv + (["--log-dir", str(tmp_path / "logs")] if argv[0] == "arena" else []))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert stopped.value.code == 2 and len(lines) == 1 and words in lines[0], err


def test_an_operator_opponents_list_reaches_the_sessions_as_specs(monkeypatch):
    served = {}
    from socialgym_agents.serve import app as base
    monkeypatch.setattr(base, "serve", lambda app, **kwargs: served.setdefault("app", app))
    with pytest.raises(SystemExit) as stopped:
        cli.main(["serve-env", "--game", "chicken", "--opponents", "scripted:constant:swerve", "--port", "18731"])
    assert stopped.value.code == 0
    defaults = served["app"].state.env_server.defaults
    assert defaults.opponents == (AgentSpec("scripted", "constant", "swerve"),)
    with TestClient(served["app"]) as http:
        state = http.post("/reset", json={"seed": 2}).json()
        assert state["observation"]["game"] == "chicken"
