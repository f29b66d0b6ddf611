"""A model backend from another package is first-class: the ``picker`` backend of
``tests/agents/outside_backend/`` (the code on docs/adding-a-backend.md, byte for byte),
registered through its ``socialgym.backends`` entry point or by a direct call, plays episodes
through ``make_policy`` and through the env server, where it is a model opponent: built once,
the operator's choice only."""
import json
import re
import tomllib
import warnings
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from socialgym_agents.llm import backends
from socialgym_agents.registry import check_spec, make_policy, policy_kind
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode
from socialgym_agents.specs import PolicySpecError
from tests.conftest import ROOT

PACKAGE = Path(__file__).with_name("outside_backend")
PAGE = ROOT / "docs" / "adding-a-backend.md"


def code_blocks(language: str) -> list:
    """The page's fenced blocks of ``language``, their list-item indent removed."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", PAGE.read_text(encoding="utf-8"), re.M | re.S)
    return ["".join(line[len(indent):] + "\n" for line in body.splitlines()) for indent, body in found]


def test_the_page_shows_the_tested_code_and_entry_point():
    assert (PACKAGE / "socialgym_picker.py").read_text(encoding="utf-8") in code_blocks("python")
    assert (PACKAGE / "pyproject.toml").read_text(encoding="utf-8") in code_blocks("toml")


def entry_points_of_the_package():
    """The package's entry points, read from its pyproject.toml as an installer writes them."""
    groups = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]["entry-points"]
    return [EntryPoint(name, value, group) for group, entries in groups.items() for name, value in entries.items()]


@pytest.fixture
def clean_backends(monkeypatch):
    """The backend registry as a fresh process has it (entry points not yet read), restored after."""
    monkeypatch.syspath_prepend(str(PACKAGE))
    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))
    monkeypatch.setattr(backends, "unavailable_backends", {})
    monkeypatch.setattr(backends, "_entry_points_loaded", False)
    return monkeypatch


@pytest.fixture(params=["entry_point", "register_backend"])
def picker(request, clean_backends):
    if request.param == "entry_point":
        installed = entry_points_of_the_package()
        clean_backends.setattr(backends, "entry_points",
                               lambda group: [e for e in installed if e.group == group])
    else:
        clean_backends.setattr(backends, "entry_points", lambda group: [])
        import socialgym_picker
        backends.register_backend(socialgym_picker.BACKEND)
    return request.param


def test_an_outside_backend_plays_an_episode_through_make_policy(picker):
    policy = make_policy("picker:first")
    record = play_episode(EpisodeJob("prisoners_dilemma", 4, [policy.policy_id, "scripted:random"],
                                     config={"rounds": 3}), PolicyPool(prebuilt={"picker:first": policy}))
    assert record["finished"] and not record.get("failed")
    mine = [t for t in record["turns"] if t["agent"] == "player_0"]
    # "first": the first legal reply of the schema, cooperate, every round; its meta names it
    assert [t["action"] for t in mine] == ["cooperate"] * 3
    assert {t["agent_meta"]["backend"] for t in mine} == {"picker"}
    assert record["roster"][0]["policy"] == "picker:first" and policy.backend.requests == 3


def test_the_seeded_strategy_is_reproducible_and_uses_the_seed(picker):
    def moves(spec, seed):
        seats = [spec, "scripted:random", "scripted:random"]
        record = play_episode(EpisodeJob("liars_dice", seed, seats), PolicyPool())
        return [t["action"] for t in record["turns"] if t["agent"] == "player_0"]

    assert moves("picker:seeded", 1) == moves("picker:seeded", 1)
    assert moves("picker:seeded", 1) != moves("picker:first", 1)


def test_an_outside_backend_is_checked_before_play_and_named_in_messages(picker):
    assert policy_kind("picker:first").loads_model
    with pytest.raises(PolicySpecError, match=r"picker:nope: picker needs a strategy: picker:first, picker:seeded"):
        check_spec("picker:nope")
    with pytest.raises(PolicySpecError, match="adapter= is for local models only"):
        check_spec("picker:first?adapter=runs/x")
    with pytest.raises(PolicySpecError, match=r"valid forms: .*picker:first\|seeded\[\?options\]"):
        check_spec("nosuch")


def test_an_outside_backend_plays_through_the_env_server_as_a_model_opponent(picker):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from socialgym_agents.serve.game_session import GameDefaults
    from socialgym_agents.serve.openenv_app import create_openenv_app

    app = create_openenv_app(GameDefaults(game="prisoners_dilemma", opponents=("picker:first",),
                                          config={"rounds": 2}))
    with TestClient(app) as http:
        refused = http.post("/reset", json={"opponents": "picker:first"})
        assert refused.status_code == 400 and "a client may choose scripted" in refused.json()["detail"]
        for seed in (5, 6):                                    # two sessions, one picker policy
            result = http.post("/reset", json={"seed": seed}).json()
            keys = result["observation"]["session"]
            while not result["done"]:
                result = http.post("/step", json={"action": {"message": "defect"}, "session_id": keys["id"],
                                                  "session_token": keys["token"]}).json()
            state = http.get("/state", params={"session_id": keys["id"], "session_token": keys["token"]}).json()
            assert state["opponents"] == ["picker:first"] and state["done"]
            # defect against a picker that always cooperates: the temptation payoff, both rounds
            assert "cooperate" in result["observation"]["text"]
            assert result["reward"] == 1.0 and result["observation"]["info"]["outcome"] == "win"
    assert [str(spec) for spec in app.state.env_server.pool.policies] == ["picker:first"]


def test_a_broken_installed_backend_is_a_warning_not_a_broken_run(clean_backends):
    clean_backends.setattr(backends, "entry_points", lambda group: [
        EntryPoint("gone", "no_such_package_anywhere:BACKEND", group),
        EntryPoint("misnamed", "socialgym_picker:BACKEND", group)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert backends.backend_kind("gone") is None and backends.backend_kind("hf") is not None
    assert set(backends.unavailable_backends) == {"gone", "misnamed"}
    assert "named 'misnamed' but the backend's kind is 'picker'" in backends.unavailable_backends["misnamed"]
    assert len(caught) == 2 and "installed backend 'gone'" in str(caught[0].message)
    assert json.dumps(backends.unavailable_backends)                  # plain text, for a status page
