"""socialgym_benchmarks/selfplay_learned.py: choices by player, role and phase, counted from logs."""
import json

import pytest

from socialgym_benchmarks import selfplay_learned


def record(spy_policy: str, spy_action: str) -> dict:
    roster = [{"agent": "player_0", "role": "Spy", "policy": spy_policy},
              {"agent": "player_1", "role": "Resistance", "policy": "scripted:heuristic"}]
    turns = [{"agent": "player_1", "phase": "vote", "action": "approve"},
             {"agent": "player_0", "phase": "vote", "action": "approve"},
             {"agent": "player_0", "phase": "mission", "action": spy_action}]
    return {"roster": roster, "turns": turns}


def test_a_planted_change_of_choice_is_counted_per_player_role_and_phase(tmp_path, capsys):
    """The trained player fails 3 missions of 4 as a spy, the base 1 of 4: the counts and shares
    say so, and the phases the two play alike (the vote) come out equal."""
    log = tmp_path / "evaluation.jsonl"
    records = ([record("selfplay:step0", a) for a in ("fail", "success", "success", "success")]
               + [record("selfplay:step9", a) for a in ("fail", "fail", "fail", "success")])
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = selfplay_learned.main([str(log), "--players", "selfplay:step0,selfplay:step9"])
    table = {tuple(r[:3]): r[3:] for r in rows}
    assert table["Spy", "mission", "fail"] == [1, 0.25, 3, 0.75]
    assert table["Spy", "mission", "success"] == [3, 0.75, 1, 0.25]
    assert table["Spy", "vote", "approve"] == [4, 1.0, 4, 1.0]
    assert ("Resistance", "vote", "approve") not in table          # the heuristic's seats are not asked for
    assert "'selfplay:step9 as Spy': 4" in capsys.readouterr().out


def test_a_missing_log_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        selfplay_learned.main([str(tmp_path / "none.jsonl")])
    assert stopped.value.code == 2 and "no such log" in capsys.readouterr().err
