"""An agent spec is parsed once into an AgentSpec (kind, name, argument, options) that the CLI,
the checks, the pool and the workers pass on; its canonical string is what logs carry."""
import json

import pytest

from socialgym_agents import registry
from socialgym_agents.jobs import EpisodeJob, PolicyPool
from socialgym_agents.registry import is_model_spec
from socialgym_agents.specs import AgentSpec, PolicySpecError, parse_specs

# Every form the docs show, as written: each must print back byte for byte.
CANONICAL = ["scripted:random", "scripted:heuristic", "scripted:constant:defect", "scripted:constant:say hi?",
             "scripted:tit_for_tat", "smollm2", "smollm2?temperature=0.7&max_new_tokens=64",
             "smollm2?adapter=runs/sft/adapter", "hf:/models/m?context=512&dtype=bfloat16", "hf:model.gguf",
             "openai:gpt-4o-mini@https://api.openai.com/v1?timeout=30&concurrency=16",
             "openai:m@http://127.0.0.1:9/v1", "human", "planted:noise", "llm", "smollm2?device=cuda:0"]


@pytest.mark.parametrize("text", CANONICAL)
def test_parse_and_str_round_trip(text):
    spec = AgentSpec.parse(text)
    assert str(spec) == text
    assert AgentSpec.parse(str(spec)) == spec and hash(AgentSpec.parse(text)) == hash(spec)


@pytest.mark.parametrize("text, fields", [
    ("scripted:random", ("scripted", "random", "", ())),
    ("scripted:constant:ask?", ("scripted", "constant", "ask?", ())),      # no options: '?' is the action's
    ("smollm2?temperature=0.7", ("smollm2", "", "", (("temperature", "0.7"),))),
    ("smollm2?adapter=/a:b", ("smollm2", "", "", (("adapter", "/a:b"),))),  # ':' after '?' is the option's
    ("hf:/m?context=512&mode=naive", ("hf", "/m", "", (("context", "512"), ("mode", "naive")))),
    ("openai:gpt@http://h:8000/v1?timeout=3", ("openai", "gpt@http://h:8000/v1", "", (("timeout", "3"),))),
    ("human", ("human", "", "", ())),
])
def test_the_fields_of_a_spec(text, fields):
    spec = AgentSpec.parse(text)
    assert (spec.kind, spec.name, spec.argument, spec.options) == fields


@pytest.mark.parametrize("text, message", [
    ("", "empty policy spec"),
    ("   ", "empty policy spec"),
    (" scripted:random", "has spaces around it"),
    ("smollm2?adapter", "option 'adapter' needs a key and a value"),
    ("hf:/m?=3", "option '=3' needs a key and a value"),
    (None, "empty policy spec"),
])
def test_a_malformed_spec_is_one_line(text, message):
    with pytest.raises(PolicySpecError, match=message) as err:
        AgentSpec.parse(text)
    assert "\n" not in str(err.value)


def test_parse_specs_parses_each_entry_and_rejects_empty_ones():
    assert parse_specs("scripted:random, smollm2?temperature=0.5") == [
        AgentSpec("scripted", "random"), AgentSpec("smollm2", options=(("temperature", "0.5"),))]
    for text, message in ((",", "names no policy"), ("a,,b", "has an empty entry"), ("", "names no policy")):
        with pytest.raises(PolicySpecError, match=message):
            parse_specs(text)


def test_is_model_spec():
    assert [is_model_spec(t) for t in ("smollm2?x=1", "hf:/m", "openai:m@u", "scripted:random", "", "human")] == [
        True, True, True, False, False, False]


def test_a_job_parses_its_seats_once_and_logs_the_canonical_strings():
    job = EpisodeJob("prisoners_dilemma", 3, [AgentSpec("scripted", "tit_for_tat"), "scripted:random"])
    assert job.specs == (AgentSpec("scripted", "tit_for_tat"), AgentSpec("scripted", "random"))
    assert job.seats == ["scripted:tit_for_tat", "scripted:random"]
    assert job.episode_id == "prisoners_dilemma-3-scripted:tit_for_tat+scripted:random"
    from socialgym_agents.runner import run_jobs
    record = run_jobs([job])[0]
    assert [seat["policy"] for seat in record["roster"]] == job.seats


def test_the_pool_keys_policies_by_spec_and_takes_strings_at_its_edge():
    pool = PolicyPool(seed=1, prebuilt={"scripted:random": "prebuilt"})
    assert pool.get(AgentSpec("scripted", "random")) == "prebuilt" and pool.get("scripted:random") == "prebuilt"
    built = pool.get("scripted:constant:defect")
    assert pool.get(AgentSpec("scripted", "constant", "defect")) is built


def test_make_llm_policy_takes_the_typed_spec_and_records_its_canonical_string():
    from socialgym_agents.llm import make_llm_policy
    text = "openai:m@http://127.0.0.1:1/v1?temperature=0.5&max_new_tokens=7&timeout=0.5"
    policy = make_llm_policy(AgentSpec.parse(text))
    assert policy.policy_id == text and policy.config.temperature == 0.5 and policy.config.max_new_tokens == 7
    assert registry.make_policy(text).policy_id == text                  # a string, parsed at the edge


def test_options_are_unquoted_as_parse_qsl_unquotes_them():
    from urllib.parse import parse_qsl

    from socialgym_agents.llm.config import parse_options
    query = "api_key_env=MY%5FKEY&adapter=a+b&temperature=0.25"
    spec = AgentSpec.parse("smollm2?" + query)
    config = parse_options(spec.options)
    expected = dict(parse_qsl(query))
    assert (config.api_key_env, config.adapter, config.temperature) == (
        expected["api_key_env"], expected["adapter"], float(expected["temperature"]))
    assert str(spec) == "smollm2?" + query                               # printed as written


def test_the_play_command_parses_each_agents_entry_once(monkeypatch, tmp_path):
    """From ``--agents`` to the workers, each entry is parsed exactly once (the check, the pool,
    the job and the runner take the AgentSpec)."""
    from socialgym_env import cli
    from socialgym_env.cli_errors import invoke_typer, run_command

    calls = []
    real_parse = AgentSpec.parse.__func__

    def counting_parse(cls, text):
        calls.append(text)
        return real_parse(cls, text)

    monkeypatch.setattr(AgentSpec, "parse", classmethod(counting_parse))
    log = tmp_path / "play.jsonl"
    argv = ["play", "prisoners_dilemma", "--agents", "scripted:tit_for_tat,scripted:heuristic", "--quiet",
            "--log", str(log)]
    assert run_command(lambda: invoke_typer(cli.app, argv, "socialgym"), "t") == 0
    assert sorted(calls) == ["scripted:heuristic", "scripted:tit_for_tat"]
    record = json.loads(log.read_text(encoding="utf-8"))
    assert [seat["policy"] for seat in record["roster"]] == ["scripted:tit_for_tat", "scripted:heuristic"]


def test_with_option_adds_an_option_unless_it_is_set():
    spec = AgentSpec.parse("smollm2?temperature=0.7")
    assert str(spec.with_option("max_new_tokens", 400)) == "smollm2?temperature=0.7&max_new_tokens=400"
    assert spec.with_option("temperature", 0) is spec
    assert str(AgentSpec.parse("hf:/m").with_option("stop_at_json", 0)) == "hf:/m?stop_at_json=0"


def test_short_names_tell_the_specs_of_one_model_apart_and_stay_unique():
    from socialgym_agents.specs import short_names
    trained = "mode=score&temperature=1.0&max_new_tokens=24&constrained=1&dtype=auto&batch_kv_mb=192"
    demo = ["smollm2?dtype=auto&temperature=0.7&context=2048", "scripted:heuristic", f"smollm2?{trained}",
            f"smollm2?adapter=socialgym_agents/adapters/smollm2_selfplay_liars_dice&{trained}"]
    names = short_names(demo)
    assert list(names) == demo
    assert list(names.values()) == ["smollm2 [temperature=0.7]", "scripted:heuristic", "smollm2 [mode=score]",
                                    "smollm2 [adapter=smollm2_selfplay_liars_dice]"]
    # one spec of a model: the model alone; options shared by all are not shown
    assert short_names(["smollm2?dtype=auto&temperature=0.7"]) == {"smollm2?dtype=auto&temperature=0.7": "smollm2"}
    assert list(short_names(["smollm2?a=1&b=2", "smollm2?a=1&b=3"]).values()) == ["smollm2 [b=2]", "smollm2 [b=3]"]
    # what no short name tells apart keeps its whole string: the same options in another order,
    # two adapters named alike in different folders, a string that does not parse
    alike = ["smollm2?a=1&b=2", "smollm2?b=2&a=1", "smollm2?adapter=x/lora", "smollm2?adapter=y/lora", "bad spec "]
    assert short_names(alike) == {text: text for text in alike}
    mixed = ["smollm2", "smollm2?temperature=0.7", "hf:org/m?context=512"]
    assert short_names(mixed) == {"smollm2": "smollm2", "smollm2?temperature=0.7": "smollm2 [temperature=0.7]",
                                  "hf:org/m?context=512": "hf:org/m"}
