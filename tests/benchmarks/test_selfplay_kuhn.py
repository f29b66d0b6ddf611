"""socialgym_benchmarks/studies/selfplay_kuhn.py: a short seeded run learns (exploitability falls well below the
uniform policy's 0.4583), reproduces itself, writes its curve and plot, and refuses bad options."""
import dataclasses

import pytest

from socialgym_benchmarks.studies import selfplay_kuhn
from socialgym_env.docgen import field_help


def test_short_run_learns_and_writes_the_curve(tmp_path):
    args = ["--iterations", "30", "--episodes", "64", "--eval_every", "10", "--cfr_iterations", "10",
            "--out", str(tmp_path)]
    final = selfplay_kuhn.main(args)
    assert final["average"] < 0.35 and final["last"] < 0.35          # uniform: 0.4583
    assert final["cfr"] < 0.1 and final["kept_rows"] <= final["rows"]
    lines = (tmp_path / "curve.csv").read_text().splitlines()
    assert lines[0] == "iteration,selfplay_last,selfplay_average,cfr" and len(lines) == 4
    assert (tmp_path / "curve.png").stat().st_size > 0
    assert selfplay_kuhn.main(args)["average"] == final["average"]        # same seed, same run


def test_own_reach_multiplies_the_seat_s_earlier_moves():
    legal_of = {("Q", (), ((),)): ["check", "bet"], ("Q", (), (("check", "bet"),)): ["call", "fold"]}
    logits = {("Q", (), ((),)): {"check": 0.0, "bet": 0.0}}
    # player_0's second decision: reached by its own check (probability 1/2), whatever player_1 did
    assert selfplay_kuhn.own_reach(logits, ("Q", (), (("check", "bet"),)), legal_of) == pytest.approx(0.5)
    assert selfplay_kuhn.own_reach(logits, ("Q", (), ((),)), legal_of) == 1.0


def test_bad_average_option_is_refused():
    with pytest.raises(SystemExit, match="linear or uniform"):
        selfplay_kuhn.main(["--average", "best", "--iterations", "1"])


def test_every_option_has_a_help_line_from_its_field_docstring(capsys):
    docs = field_help(selfplay_kuhn.Config)
    assert sorted(docs) == sorted(f.name for f in dataclasses.fields(selfplay_kuhn.Config))
    with pytest.raises(SystemExit):
        selfplay_kuhn.parse(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, line in docs.items():
        assert f"--{name}" in text and " ".join(line.split()[:4]) in text, name
