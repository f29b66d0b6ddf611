"""The human agent with an injected input stream."""
import io

from agents import make_policy
from agents.human import HumanPolicy
from agents.runner import EpisodeJob, PolicyPool, play_episode


def test_human_plays_from_the_input_stream():
    typed = io.StringIO("betray\ndefect\n{\"action_type\": \"cooperate\"}\n")
    shown = io.StringIO()
    human = HumanPolicy(input_stream=typed, output_stream=shown)
    pool = PolicyPool(prebuilt={"human": human})
    record = play_episode(EpisodeJob("prisoners_dilemma", 0, ["human", "scripted:constant:defect"],
                                     config={"rounds": 2}), pool)
    mine = [t for t in record["turns"] if t["agent"] == "player_0"]
    assert [t["action"] for t in mine] == ["defect", "cooperate"]
    assert all(t["valid"] for t in mine)
    text = shown.getvalue()
    assert "Prisoner" in text and "Legal actions:" in text
    assert "'betray' is not a legal action now" in text
    assert mine[0]["agent_meta"]["inputs"] == ["betray", "defect"]


def test_human_end_of_input_fails_the_episode_not_the_run():
    from agents.runner import run_jobs
    human = HumanPolicy(input_stream=io.StringIO(""), output_stream=io.StringIO())
    records = run_jobs([EpisodeJob("prisoners_dilemma", 0, ["human", "scripted:random"], config={"rounds": 1})],
                       PolicyPool(prebuilt={"human": human}))
    assert records[0]["failed"] and "EOFError" in records[0]["error"]


def test_human_spec():
    assert make_policy("human").policy_id == "human"
