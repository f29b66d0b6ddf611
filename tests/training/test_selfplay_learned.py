"""socialgym_benchmarks/studies/selfplay_learned.py: choices by player, role and phase, counted from logs."""
import json

import pytest

from socialgym_benchmarks.studies import selfplay_learned


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


def test_against_keeps_only_the_episodes_a_policy_played_in(tmp_path):
    """The trained player's missions against the heuristic are counted apart from those against
    another opponent, so a before/after comparison sets like against like."""
    log = tmp_path / "evaluation.jsonl"
    other = record("selfplay:step9", "success")
    other["roster"][1]["policy"] = "selfplay:step0"
    log.write_text("".join(json.dumps(r) + "\n" for r in [record("selfplay:step9", "fail")] * 3 + [other]))
    mixed = {tuple(r[:3]): r[3:] for r in selfplay_learned.main([str(log), "--players", "selfplay:step9"])}
    assert mixed["Spy", "mission", "fail"] == [3, 0.75]
    matched = {tuple(r[:3]): r[3:] for r in selfplay_learned.main(
        [str(log), "--players", "selfplay:step9", "--against", "scripted:heuristic"])}
    assert matched["Spy", "mission", "fail"] == [3, 1.0] and ("Spy", "mission", "success") not in matched


def test_targets_count_an_action_by_the_role_of_the_player_it_names(tmp_path):
    """--targets: the trained wolf kills the Seer in 2 deals of 3 and once votes out its partner;
    those come out as "kill Seer" and "vote Werewolf", an action on nobody as its word alone."""
    roster = [{"agent": "player_0", "name": "Ines", "role": "Werewolf", "policy": "selfplay:step9"},
              {"agent": "player_1", "name": "Gael", "role": "Werewolf", "policy": "scripted:heuristic"},
              {"agent": "player_2", "name": "Elif", "role": "Seer", "policy": "scripted:heuristic"},
              {"agent": "player_3", "name": "Bea", "role": "Villager", "policy": "scripted:heuristic"}]
    records = [{"roster": roster, "turns": [{"agent": "player_0", "phase": "wolf_kill", "action": f"kill {kill}"},
                                            {"agent": "player_0", "phase": "day_vote", "action": vote}]}
               for kill, vote in (("Elif", "vote Gael"), ("Elif", "abstain"), ("Bea", "vote Bea"))]
    log = tmp_path / "evaluation.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    table = {tuple(r[:3]): r[3:] for r in selfplay_learned.main([str(log), "--players", "selfplay:step9", "--targets"])}
    assert table["Werewolf", "wolf_kill", "kill Seer"] == [2, 0.667]
    assert table["Werewolf", "wolf_kill", "kill Villager"] == [1, 0.333]
    assert table["Werewolf", "day_vote", "vote Werewolf"] == [1, 0.333]
    assert table["Werewolf", "day_vote", "abstain"] == [1, 0.333]
    plain = {tuple(r[:3]) for r in selfplay_learned.main([str(log), "--players", "selfplay:step9"])}
    assert ("Werewolf", "wolf_kill", "kill") in plain


def test_a_missing_log_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        selfplay_learned.main([str(tmp_path / "none.jsonl")])
    assert stopped.value.code == 2 and "no such log" in capsys.readouterr().err


def test_sizing_counts_turns_by_phase_and_the_side_s_wins():
    """socialgym_benchmarks/studies/selfplay_sizing.py on 6 Spyfall episodes: the phases add up to the
    turns, the side's wins are the episodes whose spy was rewarded (counted again here)."""
    from socialgym_agents.runner import EpisodeJob, run_jobs
    from socialgym_benchmarks.studies import selfplay_sizing
    out = selfplay_sizing.size("spyfall", {"rounds": 2}, "spy", 6, "scripted:heuristic")
    records = run_jobs([EpisodeJob("spyfall", seed, ["scripted:heuristic"] * 4, config={"rounds": 2})
                        for seed in range(6)], log_path=None)
    assert out["turns_per_episode"] == round(sum(len(r["turns"]) for r in records) / 6, 1)
    assert sum(out["by_phase"].values()) == pytest.approx(out["turns_per_episode"], abs=0.11)
    spy_won = sum(r["rewards"][next(s["agent"] for s in r["roster"] if s["role"] == "Spy")] > 0 for r in records)
    assert out["side_wins"] == spy_won and out["episodes"] == 6 and out["players"] == 4
    assert out["interval"][0] <= 100 * spy_won / 6 <= out["interval"][1]


def test_sizing_with_a_side_policy_counts_the_side_s_turns_and_talk():
    """--side_policy: the trained side's seats play it, the rest --policy; the side's turns and
    its talk turns (the phases whose only actions are say and pass) are counted again here."""
    import socialgym_env
    from socialgym_agents.runner import EpisodeJob, run_jobs
    from socialgym_benchmarks.studies import selfplay_sizing
    config = {"max_cycles": 3}
    out = selfplay_sizing.size("werewolves", config, "werewolves", 5, "scripted:heuristic", "scripted:random")
    env, jobs = socialgym_env.make("werewolves", **config), []
    for seed in range(5):
        env.reset(seed=seed)
        jobs.append(EpisodeJob("werewolves", seed, ["scripted:random" if env.state.team(a) == "werewolves"
                                                    else "scripted:heuristic" for a in env.possible_agents],
                               config=config))
    records = run_jobs(jobs, log_path=None)
    wolf_turns = [t for r in records for t in r["turns"]
                  if next(s["team"] for s in r["roster"] if s["agent"] == t["agent"]) == "werewolves"]
    assert out["side_policy"] == "scripted:random"
    assert out["side_turns_per_episode"] == round(len(wolf_turns) / 5, 1)
    talk = [t for t in wolf_turns if t["phase"] in ("night_talk", "day_talk")]
    assert out["side_talk_turns_per_episode"] == round(len(talk) / 5, 1) > 0
    assert out["side_wins"] == sum(any(s["team"] == "werewolves" and r["rewards"][s["agent"]] > 0
                                       for s in r["roster"]) for r in records)
