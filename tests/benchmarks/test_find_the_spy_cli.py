"""Find the Spy data sets: generation (rule-based and model describers), resume, evaluation per
perspective, and the ``socialgym spy`` commands."""
import json

import typer
from typer.testing import CliRunner

from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.config import LLMConfig
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_agents.runner import PolicyPool
from socialgym_benchmarks.studies import find_the_spy as F
from socialgym_env.socialmaze.spy import always_civilian_answer, read_instances


class EchoBackend:
    """Says its word (to be masked) and how many descriptions it saw."""
    kind, model_name = "fake", "fake"

    def __init__(self):
        self.prompts = []

    def complete(self, items):
        self.prompts += [i.messages[0]["content"] for i in items]
        return [Reply("It is a " + i.messages[0]["content"].split('Your secret word is "')[1].split('"')[0]) for i in items]


def test_generate_resumes_and_keeps_a_quarter_spy(tmp_path):
    out = tmp_path / "spy.jsonl"
    first = F.generate(out, 8, seed=1)
    assert sum(i.player1_role == "Spy" for i in first) == 2
    again = F.generate(out, 8, seed=1)
    assert [i.to_dict() for i in again] == [i.to_dict() for i in first]
    assert len(out.read_text().splitlines()) == 8


def test_model_describer(tmp_path):
    backend = EchoBackend()
    pool = PolicyPool(prebuilt={"fake": LLMPolicy(backend, LLMConfig(), "fake")})
    [inst] = F.generate(tmp_path / "llm.jsonl", 1, seed=0, describer="fake", pool=pool)
    assert inst.describer == "fake" and len(backend.prompts) == 12
    assert all(text == "It is a ___" for row in inst.descriptions for text in row)
    assert "Round 1, Player 1: It is a ___" in backend.prompts[1]


def test_evaluate_splits_by_perspective(tmp_path):
    data = F.generate(tmp_path / "spy.jsonl", 12, seed=2)
    report = F.evaluate(data, always_civilian_answer)
    assert report["Spy"]["n"] == 3 and report["Civilian"]["n"] == 9 and report["all"]["n"] == 12
    assert report["Spy"]["accuracy"] == 0.0 and report["Civilian"]["role"] == 1.0
    lo, hi = report["all"]["accuracy_ci"]
    assert 0.0 <= lo <= report["all"]["accuracy"] <= hi <= 1.0


def test_cli(tmp_path):
    app = typer.Typer()
    F.register(app)
    runner = CliRunner()
    out = tmp_path / "d.jsonl"
    ok = runner.invoke(app, ["spy", "generate", "--n", "4", "--out", str(out)])
    assert ok.exit_code == 0 and "1 Spy, 3 Civilian" in ok.output
    assert json.loads(out.read_text().splitlines()[0])["describer"] == "hints"
    ev = runner.invoke(app, ["spy", "evaluate", str(out), "--solver", "odd_one_out"])
    assert ev.exit_code == 0 and "odd_one_out all: n=4" in ev.output
    bad = runner.invoke(app, ["spy", "evaluate", str(out), "--solver", "scripted:random"])
    assert bad.exit_code == 2 and "valid solvers: odd_one_out" in bad.output
    shown = runner.invoke(app, ["spy", "show", str(out), "--index", "0", "--answer"])
    assert shown.exit_code == 0 and "Answer: Spy: Player" in shown.output
    assert len(read_instances(out)) == 4
