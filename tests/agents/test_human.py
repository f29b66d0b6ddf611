"""The terminal human agent and the terminal table of ``socialgym play`` (injected streams)."""
import io
import json

from typer.testing import CliRunner

from socialgym_agents import make_policy
from socialgym_agents.human import HumanPolicy, TerminalOutput, TerminalTable
from socialgym_agents.runner import EpisodeJob, PolicyPool, play_episode
from socialgym_env.cli import app

PD_RULES = "Each round both players choose at the same time"


def play_with_table(seats, typed, config, game="prisoners_dilemma", prebuilt=None):
    shown = io.StringIO()
    output = TerminalOutput(shown)
    human = HumanPolicy(input_stream=io.StringIO(typed), output=output)
    pool = PolicyPool(prebuilt={"human": human, **(prebuilt or {})})
    job = EpisodeJob(game, 0, seats, config=config)
    table = TerminalTable(dict(zip([f"player_{i}" for i in range(len(seats))], seats)), output)
    record = play_episode(job, pool, on_turn=table)
    return record, shown.getvalue()


def test_human_plays_from_the_input_stream():
    record, text = play_with_table(["human", "scripted:constant:defect"], 'betray\ndefect\n{"action_type": "cooperate"}\n',
                                   {"rounds": 2})
    mine = [t for t in record["turns"] if t["agent"] == "player_0"]
    assert [t["action"] for t in mine] == ["defect", "cooperate"]
    assert all(t["valid"] for t in mine)
    assert "'betray' is not a legal action now" in text
    assert mine[0]["agent_meta"]["inputs"] == ["betray", "defect"]


def test_rules_once_and_again_on_help_and_every_prompt_says_whose_turn():
    record, text = play_with_table(["human", "scripted:constant:defect"], "defect\nhelp\ncooperate\ndefect\n",
                                   {"rounds": 3})
    name = record["roster"][0]["name"]
    assert text.count(PD_RULES) == 2                 # the first turn, and the one help
    assert text.count(f"Your turn, {name} (player_0)") == 3
    assert [t["action"] for t in record["turns"] if t["agent"] == "player_0"] == ["defect", "cooperate", "defect"]
    # the board lines are each shown once, as they come (not the whole history every turn)
    assert text.count("Round 1 moves") == 1 and text.count("Round 2 moves") == 1


def test_the_table_says_who_is_thinking_and_shows_moves_without_revealing_them(make_fake_policy):
    model = make_fake_policy(['{"action_type": "cooperate"}'] * 2)
    # the model moves first in a simultaneous round: its choice must not show before the human's
    record, text = play_with_table(["fake", "human"], "defect\ndefect\n", {"rounds": 2}, prebuilt={"fake": model})
    model_name, human_name = record["roster"][0]["name"], record["roster"][1]["name"]
    thinking = f"... {model_name} (player_0, fake) is thinking"
    assert text.count(thinking) == 2
    first_prompt = text.index(f"Your turn, {human_name} (player_1)")
    assert text.index(thinking) < text.index(f"{model_name} (player_0, fake) has moved.") < first_prompt
    assert "Round 1 moves" not in text[:first_prompt]
    assert "Round 1 moves" in text[first_prompt:]


def test_scripted_seats_do_not_think_aloud_and_their_posted_moves_show():
    record, text = play_with_table(["human", "scripted:heuristic", "scripted:heuristic"], "bid 1 3\n" + "liar\nbid 1 6\n" * 6,
                                   {"dice": 1}, game="liars_dice")
    assert "is thinking" not in text
    others = {s["name"] for s in record["roster"][1:]}
    assert any(f"Moderator: {name} bids" in text for name in others) or "calls liar" in text


def test_play_fills_the_remaining_seats_with_the_last_spec(tmp_path):
    log = tmp_path / "play.jsonl"
    result = CliRunner().invoke(app, ["play", "liars_dice", "--agents", "human,scripted:heuristic", "-c", "dice=1",
                                      "--log", str(log)], input="liar\nbid 1 6\n" * 4)
    assert "seats: player_0 human, player_1 scripted:heuristic, player_2 scripted:heuristic" in result.output
    record = json.loads(log.read_text().splitlines()[-1])
    assert [s["policy"] for s in record["roster"]] == ["human", "scripted:heuristic", "scripted:heuristic"]
    result = CliRunner().invoke(app, ["play", "prisoners_dilemma", "--agents", "human,scripted:random,scripted:random",
                                      "--log", str(log)])
    assert result.exit_code == 2 and "2 seats" in result.output


def test_human_end_of_input_fails_the_episode_not_the_run():
    from socialgym_agents.runner import run_jobs
    human = HumanPolicy(input_stream=io.StringIO(""), output_stream=io.StringIO())
    records = run_jobs([EpisodeJob("prisoners_dilemma", 0, ["human", "scripted:random"], config={"rounds": 1})],
                       PolicyPool(prebuilt={"human": human}))
    assert records[0]["failed"] and "EOFError" in records[0]["error"]


def test_human_spec():
    assert make_policy("human").policy_id == "human"


def test_the_table_names_nobody_in_a_secret_phase():
    from socialgym_agents.scripted import RandomPolicy
    from socialgym_env.logs import restore_env

    class SlowRandom(RandomPolicy):      # a scripted seat that "thinks", like a model
        instant = False

    seats = ["human"] + ["slow"] * 5
    record, text = play_with_table(seats, "x\n" * 400, {}, game="werewolves", prebuilt={"slow": SlowRandom(seed=1)})
    raws = [t["raw"] for t in record["turns"]]
    public_moves, secret_moves = 0, 0
    for number, turn in enumerate(record["turns"]):
        if turn["agent"] == "player_0":
            continue
        env = restore_env(record["game"], record["config"], record["seed"], record["episode_id"], raws[:number])
        if env.actors_public():
            public_moves += 1
        else:
            secret_moves += 1
    assert secret_moves > 0 and public_moves > 0          # both kinds happened: the count can fail
    assert text.count(" is thinking") == public_moves
