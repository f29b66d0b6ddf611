"""training/selfplay.py: rows and roles from self-play episodes (two-player and a hidden-role
team game), scoring-mode decisions, LoRA checkpoint swaps, and a 2-step smoke run."""
import json

import pytest

import socialgym_env
from agents.selfplay import CURRENT
from socialgym_env.game import TEAM, Game, GameInfo
from socialgym_env.patterns import exile_by_vote, vote_phase
from training import selfplay
from training.multiturn import reply_to_action


class VoteSpy(Game):
    """3 seats, one spy (team spies) and two civilians (team town); one vote: town wins if the
    spy gets the plurality. A hidden-role team game with no talk, for fast tests."""

    info = GameInfo(id="vote_spy", name="Vote Spy", category="hidden_role", num_players=3,
                    information="hidden_roles", communication="structured", horizon="single_round",
                    iteration="1 vote", skills=("deception",), outcome=TEAM, max_steps=10,
                    roles=(("spy", 1, "spies"), ("civilian", 2, "town")), main_role="civilian", alt_role="spy",
                    description="Vote out the spy.")

    def phases(self):
        return [vote_phase("vote", self._vote)]

    def setup(self, state):
        state.goto("vote")

    def _vote(self, state, actions):
        exiled = exile_by_vote(state, actions)
        caught = exiled is not None and state.role(exiled) == "spy"
        state.finish("caught" if caught else "escaped",
                     winners=state.on_team("town" if caught else "spies", alive_only=False))


@pytest.fixture
def vote_spy():
    socialgym_env.register_game(VoteSpy)
    yield "vote_spy"
    socialgym_env.unregister_game("vote_spy")


def first_legal(tokenizer):
    """A model stand-in: always the first legal reply; returns what the real decider returns."""
    def decide(contexts, infos):
        out = []
        for info in infos:
            option = selfplay.candidates(info, '{"action_type": "')[0]
            ids = tokenizer(option, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            text = '{"action_type": "' + option
            out.append((ids, text, reply_to_action(text, info)))
        return out
    return decide


def test_every_current_seat_is_a_row_with_its_role_in_a_team_game(vote_spy, tokenizer):
    config = selfplay.Config(game=vote_spy)
    plan = [(1, {a: CURRENT for a in ("player_0", "player_1", "player_2")}),
            (2, {"player_0": CURRENT, "player_1": "scripted:random", "player_2": CURRENT})]
    from agents.runner import PolicyPool
    games = selfplay.play(plan, {"model": first_legal(tokenizer), "pool": PolicyPool(seed=0)}, tokenizer, config)
    rows = selfplay.collect_rows(games, config, limit=100)
    assert [(r.learner) for r in rows] == ["player_0", "player_1", "player_2", "player_0", "player_2"]
    for g in games:
        assert g["env"].state.result is not None
    for row, (g, agent) in zip(rows, [(games[0], "player_0"), (games[0], "player_1"), (games[0], "player_2"),
                                      (games[1], "player_0"), (games[1], "player_2")]):
        env = g["env"]
        assert row.role == env.state.role(agent) and row.role_key == (vote_spy, row.role)
        assert row.reward == env.state.result.rewards[agent]
        # the row is the seat's own view: its reply tokens in the loss, nothing else
        assert sum(row.env_mask) == len(row.env_mask) > 0
    assert len(selfplay.collect_rows(games, config, limit=4)) == 4


def test_two_player_rows_hold_each_seat_s_whole_chat(tokenizer):
    config = selfplay.Config(game="kuhn_poker")
    games = selfplay.play([(3, {"player_0": CURRENT, "player_1": CURRENT})],
                          {"model": first_legal(tokenizer), "pool": None}, tokenizer, config)
    env = games[0]["env"]
    assert [t["action"] for t in env.episode_record()["turns"]] == ["check", "check"]   # first legal each time
    rows = selfplay.collect_rows(games, config, limit=10)
    assert [r.learner for r in rows] == ["player_0", "player_1"]
    assert [r.role_key for r in rows] == [("kuhn_poker", "player_0"), ("kuhn_poker", "player_1")]
    assert rows[0].reward == env.state.result.scores["player_0"] == -rows[1].reward      # chips (auto)
    text = tokenizer.decode(rows[0].prompt_ids)
    card = env.state.g.cards["player_0"]
    assert f"Your card: {card}." in text and "Legal actions: check | bet" in text


def test_scoring_mode_distribution_matches_the_bridge(smollm2_base):
    """The decider and the bridge's policy_fn score the same candidates in the same context."""
    from agents import openspiel_bridge as bridge
    model, tokenizer = smollm2_base
    config = selfplay.Config(game="kuhn_poker")
    env = bridge.replay("kuhn_poker", ["K", "J"], ["check"])
    probs = selfplay.policy_fn(model, tokenizer, config)(env, "player_1")
    assert set(probs) == {"check", "bet"} and sum(probs.values()) == pytest.approx(1.0)
    chat = selfplay.SeatChat(selfplay.ChatAssembler(tokenizer), "compact",
                             tokenizer(config.reply_prefix, add_special_tokens=False)["input_ids"], "Kuhn Poker")
    context = chat.observe(env, "player_1")
    options = selfplay.candidates(env.infos["player_1"], config.reply_prefix)
    scores = selfplay.score_replies(model, tokenizer, [context], [options])[0]
    assert bridge.softmax(dict(zip(["check", "bet"], scores)))["bet"] == pytest.approx(probs["bet"], abs=1e-6)


def test_two_step_smoke_run(tmp_path, smollm2_copy):
    metrics = selfplay.main(["--steps", "2", "--episodes_per_step", "1", "--rows_per_step", "2",
                             "--snapshot_every", "2", "--eval_episodes", "1", "--tournament_episodes", "1",
                             "--out", str(tmp_path)], preloaded=smollm2_copy)
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["step2"]
    rollouts = (tmp_path / "rollouts.csv").read_text().splitlines()
    assert rollouts[0].startswith("step,role,rows") and {line.split(",")[0] for line in rollouts[1:]} == {"0", "1"}
    assert sum(int(line.split(",")[2]) for line in rollouts[1:]) == 4                # 2 rows per step
    spans = json.loads((tmp_path / "mask_example.json").read_text())
    assert spans[0]["in_loss"] is False and spans[1]["in_loss"] is True
    assert spans[0]["text"].endswith('assistant\n{"action_type": "')
    assert set(metrics["exploitability"]) == {"step0", "step2"}
    assert all(0 < value < 2 for value in metrics["exploitability"].values())
    assert set(metrics["evaluation"]) == {"step0 vs scripted:heuristic", "step2 vs scripted:heuristic",
                                          "step2 vs selfplay:step0"}
    assert all(v["win"]["n"] == 1 for v in metrics["evaluation"].values())
    records = [json.loads(line) for line in (tmp_path / "tournament.jsonl").read_text().splitlines()]
    assert len(records) == 3                                       # 3 entrants: 3 pairs x 1 episode
    assert {s["policy"] for r in records for s in r["roster"]} == {
        "selfplay:step0", "selfplay:step2", "scripted:heuristic"}


def test_bad_arguments_exit_with_code_2(capsys):
    with pytest.raises(SystemExit) as raised:
        selfplay.main(["--no_such_option", "1"])
    assert raised.value.code == 2 and "--baseline_rate" in capsys.readouterr().err
