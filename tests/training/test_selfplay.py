"""socialgym_training.selfplay: rows and roles from self-play episodes (two-player and a hidden-role
team game), scoring-mode decisions, LoRA checkpoint swaps, and a 2-step smoke run."""
import json
import random

import pytest

import socialgym_env
from socialgym_agents.selfplay import CURRENT, CheckpointPool, seat_assignment
from socialgym_env.game import TEAM, Game, GameInfo
from socialgym_env.patterns import exile_by_vote, vote_phase
from socialgym_training.multiturn.layouts import reply_to_action
from socialgym_training.selfplay import cli, credit, decisions, evaluation, rollout, trainer
from socialgym_training.selfplay.config import Config, layout_options


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
def vote_spy(monkeypatch):
    from socialgym_agents import baselines
    from socialgym_agents.scripted import RandomPolicy
    socialgym_env.register_game(VoteSpy)
    # the evaluation plays scripted:heuristic, refused in a game without a baseline: random play, said so here
    monkeypatch.setitem(baselines._REGISTERED, "vote_spy", RandomPolicy)
    yield "vote_spy"
    socialgym_env.unregister_game("vote_spy")


def first_legal(tokenizer, choose=lambda k, options: options[0], seen=None):
    """A model stand-in: the legal reply ``choose`` picks (default the first) for the k-th
    decision; returns what the real decider returns (``seen`` collects the contexts)."""
    seen = [] if seen is None else seen

    def decide(contexts, infos, prefixes, keys=None):
        out = []
        for context, info, prefix in zip(contexts, infos, prefixes):
            seen.append(list(context))
            option = choose(len(seen) - 1, decisions.candidates(info, prefix))
            ids = tokenizer(option, add_special_tokens=False)["input_ids"]
            out.append((ids, prefix + option, reply_to_action(prefix + option, info)))
        return out
    return decide


def test_self_play_prompts_are_the_scoring_policy_s_token_for_token(tokenizer):
    """Both Kuhn seats played by the trainer and by the LLM policy in scoring mode (the options
    of ``layout_options``), same deal and replies: every decision's ids are the same, and each
    seat's row holds them (its replies in the loss, the rest outside)."""
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.policy import LLMPolicy
    from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
    from prompt_identity import MODEL_CONTEXT, RecordingBackend, pick
    from socialgym_training.multiturn.layouts import PolicyLayout
    config = Config(game="kuhn_poker")
    options = layout_options(config)
    backend = RecordingBackend(tokenizer, parse_options(options))
    policy = LLMPolicy(backend, backend.config, "rec")
    record = run_jobs([EpisodeJob("kuhn_poker", 3, ["rec", "rec"])], PolicyPool(prebuilt={"rec": policy}),
                      log_path=None)[0]
    seen = []
    games = rollout.play([(3, {"player_0": CURRENT, "player_1": CURRENT})],
                          {"model": first_legal(tokenizer, pick, seen), "pool": None}, tokenizer, config,
                          layout=PolicyLayout(tokenizer, MODEL_CONTEXT, options))
    env = games[0]["env"]
    assert [t["action"] for t in env.episode_record()["turns"]] == [t["action"] for t in record["turns"]] == \
        ["check", "bet", "call"]
    assert seen == backend.seen
    rows = rollout.collect_rows(games, config, limit=10)
    assert [r.learner for r in rows] == ["player_0", "player_1"]
    # player_0 decided twice (seen[0], seen[2]), player_1 once (seen[1])
    whole = rows[0].prompt_ids + rows[0].completion_ids
    assert rows[0].prompt_ids == seen[0] and whole[:len(seen[2])] == seen[2] and rows[1].prompt_ids == seen[1]
    assert "Here is the description of the game" in tokenizer.decode(rows[0].prompt_ids)
    # the loss covers player_0's two replies ("check", "call") and nothing else
    in_loss = [t for t, m in zip(rows[0].completion_ids, rows[0].env_mask) if m]
    assert tokenizer.decode(in_loss) == 'check", "argument": ""}' + 'call", "argument": ""}'


def test_silent_talk_is_played_alike_by_the_trainer_and_the_policy(tokenizer):
    """--talk pass (Resistance, every seat the current policy): talk turns are passed without a
    model call by the trainer and by the LLM policy with ``talk=pass`` (``layout_options``); the
    decisions left have the same prompt ids in both, and no row holds a talk turn."""
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.policy import LLMPolicy
    from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
    from prompt_identity import MODEL_CONTEXT, RecordingBackend, pick
    from socialgym_env.patterns import is_talk_turn
    from socialgym_training.multiturn.layouts import PolicyLayout
    config = Config(game="resistance", talk="pass")
    options = layout_options(config)
    assert "talk=pass" in options
    backend = RecordingBackend(tokenizer, parse_options(options))
    policy = LLMPolicy(backend, backend.config, "rec")
    record = run_jobs([EpisodeJob("resistance", 3, ["rec"] * 5)], PolicyPool(prebuilt={"rec": policy}),
                      log_path=None)[0]
    seen, infos = [], []

    def decide(contexts, decided_infos, prefixes, keys=None):
        infos.extend(decided_infos)
        return first_legal(tokenizer, pick, seen)(contexts, decided_infos, prefixes)

    games = rollout.play([(3, {a: CURRENT for a in socialgym_env.make("resistance").possible_agents})],
                          {"model": decide, "pool": None}, tokenizer, config,
                          layout=PolicyLayout(tokenizer, MODEL_CONTEXT, options))
    turns = games[0]["env"].episode_record()["turns"]
    talk = [t for t in turns if t["phase"] == "discussion"]
    assert talk and all(t["action"] == "pass" for t in talk)
    assert [t["action"] for t in turns] == [t["action"] for t in record["turns"]]
    assert infos and not any(is_talk_turn(info) for info in infos)
    assert len(seen) == len(turns) - len(talk) and seen == backend.seen
    assert all(t["agent_meta"].get("silent") for t in record["turns"] if t["phase"] == "discussion")
    rows = rollout.collect_rows(games, config, limit=10)
    replies = tokenizer.decode([t for r in rows for t, m in zip(r.completion_ids, r.env_mask) if m])
    assert "pass" not in replies and "say" not in replies


def test_every_current_seat_is_a_row_with_its_role_in_a_team_game(vote_spy, tokenizer):
    config = Config(game=vote_spy)
    plan = [(1, {a: CURRENT for a in ("player_0", "player_1", "player_2")}),
            (2, {"player_0": CURRENT, "player_1": "scripted:random", "player_2": CURRENT})]
    from socialgym_agents.runner import PolicyPool
    games = rollout.play(plan, {"model": first_legal(tokenizer), "pool": PolicyPool(seed=0)}, tokenizer, config)
    rows = rollout.collect_rows(games, config, limit=100)
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
    assert len(rollout.collect_rows(games, config, limit=4)) == 4


def test_games_of_one_seed_keep_their_scripted_seats_apart_on_common_numbers(tokenizer):
    """Two matchups meet on the same deal (the evaluation's pairing): each game's scripted seat
    has its own state, both draw the same random numbers, and the seats are released at the end."""
    from socialgym_agents.base import BasePolicy, Decision

    class Counting(BasePolicy):
        policy_id = "counting"

        def __init__(self):
            super().__init__()
            self.turns, self.draws = {}, {}

        def act(self, observation, info, key=("", "")):
            self.turns[key] = self.turns.get(key, 0) + 1          # per-seat state
            self.draws.setdefault(key, []).append(self.rng(key).random())
            return Decision(info["legal_action_list"][0])

    policy = Counting()

    class Pool:
        def get(self, spec):
            return policy

    config = Config(game="rock_paper_scissors", game_config='{"rounds": 3}')
    seats = {"player_0": "scripted:counting", "player_1": "scripted:counting"}
    games = rollout.play([(7, seats), (7, seats)], {"model": None, "pool": Pool()}, tokenizer, config)
    assert all(g["env"].state.result is not None for g in games)
    assert len(policy.turns) == 4 and set(policy.turns.values()) == {3}          # 2 games x 2 seats, 3 rounds
    for agent in ("player_0", "player_1"):
        first, second = (policy.draws[(g["episode"], agent)] for g in games)
        assert first == second                                                   # common random numbers
    assert not policy._rngs                                                      # released


def test_two_player_rows_hold_each_seat_s_whole_chat(tokenizer):
    config = Config(game="kuhn_poker", prompt="compact")
    games = rollout.play([(3, {"player_0": CURRENT, "player_1": CURRENT})],
                          {"model": first_legal(tokenizer), "pool": None}, tokenizer, config)
    env = games[0]["env"]
    assert [t["action"] for t in env.episode_record()["turns"]] == ["check", "check"]   # first legal each time
    rows = rollout.collect_rows(games, config, limit=10)
    assert [r.learner for r in rows] == ["player_0", "player_1"]
    assert [r.role_key for r in rows] == [("kuhn_poker", "player_0"), ("kuhn_poker", "player_1")]
    assert rows[0].reward == env.state.result.scores["player_0"] == -rows[1].reward      # chips (auto)
    text = tokenizer.decode(rows[0].prompt_ids)
    card = env.state.g.cards["player_0"]
    assert f"Your card: {card}." in text and "Legal actions: check | bet" in text


def test_scoring_mode_distribution_is_the_policy_s_and_the_bridge_s(smollm2_base):
    """The distribution the bridge measures (policy_fn) is the one the rated policy samples
    from: the LLM policy in scoring mode, through the real local backend, at the same decision."""
    from socialgym_agents import openspiel_bridge as bridge
    from socialgym_agents.llm.config import parse_options
    from socialgym_agents.llm.hf_backend import HFBackend
    from socialgym_agents.llm.policy import LLMPolicy
    from socialgym_training.multiturn.layouts import PolicyLayout
    model, tokenizer = smollm2_base
    config = Config(game="kuhn_poker")
    options = layout_options(config)
    layout = PolicyLayout(tokenizer, model.config.max_position_embeddings, options)
    env = bridge.replay("kuhn_poker", ["K", "J"], ["check"])
    probs = evaluation.policy_fn(model, tokenizer, config, layout=layout)(env, "player_1")
    assert set(probs) == {"check", "bet"} and sum(probs.values()) == pytest.approx(1.0)
    policy = LLMPolicy(HFBackend("smollm2", parse_options(options)), parse_options(options), "smollm2")
    policy.reset(("e", "player_1"), 0)
    decision = policy.act(env.observe("player_1"), env.infos["player_1"], ("e", "player_1"),
                          env.prompt_parts("player_1"))
    scores = dict(decision.meta["attempts"][0]["scores"])
    theirs = bridge.softmax({bridge.reply_word(c, env.infos["player_1"]): x for c, x in scores.items()})
    assert theirs["bet"] == pytest.approx(probs["bet"], abs=2e-3)


def plain_scores(model, tokenizer, contexts, options, with_eos):
    """The reference: one plain forward over the whole of each (context, option) row."""
    import torch
    out = []
    for context, texts in zip(contexts, options):
        values = []
        for text in texts:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"] + ([tokenizer.eos_token_id] if with_eos else [])
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([list(context) + ids])).logits[0].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            values.append(sum(float(logprobs[len(context) - 1 + k, t]) for k, t in enumerate(ids)))
        out.append(values)
    return out


@pytest.mark.parametrize("with_eos", [True, False])
def test_cached_scoring_equals_a_plain_forward_per_reply(tiny_llama, monkeypatch, with_eos):
    """Contexts encoded once (their shared prefix once per call) and options scored on the cache
    give the log-probabilities of a plain forward over each whole row: through a LoRA that is
    not zero, with a context that is the shared prefix itself, a one-token context, an empty
    option, options of different lengths, and options split over several forward passes."""
    import torch
    from peft import get_peft_model
    from socialgym_agents.llm import scoring
    from socialgym_training.common import lora_config
    model, tokenizer = tiny_llama
    model = get_peft_model(model, lora_config(4, 8))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "lora_B" in name:
                weight.normal_(0, 0.5)
    rules = tokenizer("Rules: bid Q F or call liar on the last bid. You are Yusuf.")["input_ids"]
    contexts = [rules + tokenizer(" Your dice: 3.")["input_ids"], rules + tokenizer(" Your dice: 5, 5 and 2. Bid!")["input_ids"],
                rules, rules[:1]]
    options = [["bid 1 3", "liar", 'bid 2 6", "argument": ""}'], ["bid 1 2"], ["check", "", "bet a long way up"],
               ["call", "fold"]]
    monkeypatch.setattr(scoring, "SCORE_TOKENS", 8)         # a few option rows per forward pass
    monkeypatch.setattr(scoring, "CACHE_TOKENS", 60)        # and fewer where the context is long
    for picked in ([0, 1, 2, 3], [0, 1], [1]):            # shared prefix: the rules, the rules, none
        batch, replies = [contexts[i] for i in picked], [options[i] for i in picked]
        got = scoring.score_replies(model, tokenizer, batch, replies, with_eos)
        want = plain_scores(model, tokenizer, batch, replies, with_eos)
        assert [len(v) for v in got] == [len(v) for v in want]
        for mine, theirs in zip(got, want):
            assert mine == pytest.approx(theirs, abs=1e-3)
    assert scoring.score_replies(model, tokenizer, contexts[2:3], [["check"]], with_eos)[0][0] < 0
    assert scoring.common_length(contexts[:2]) > len(rules)              # " Your dice:" too
    assert scoring.common_length([rules, rules]) == len(rules) and scoring.common_length(contexts) == 1


def test_seat_caches_encode_only_what_is_new_and_score_alike(tiny_llama, monkeypatch):
    """A seat's conversation grows turn by turn: with SeatCaches its next context is encoded from
    where its last one stopped (counted in the model's input tokens), the scores equal a plain
    forward's, a context that does not extend the cached one is encoded whole, and the store
    keeps to its budget, least recently used out first."""
    import torch
    from socialgym_agents.llm import scoring
    model, tokenizer = tiny_llama
    fed = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: fed.append(kwargs["input_ids"].numel()),
                                           with_kwargs=True)
    monkeypatch.setattr(scoring, "SCORE_TOKENS", 8)
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]      # noqa: E731
    turn1 = ids("Rules: vote out a wolf. You are Yusuf, a Werewolf. Night 1: kill whom?")
    turn2 = turn1 + ids(' kill Bea"} Day 1: Bea died. Vote?')
    turn3 = turn2 + ids(' vote Cyrus"} Night 2: kill whom?')
    options = [["kill Bea", "kill Cyrus", "kill a long name here"], ["vote Cyrus", "abstain"], ["kill Chidi"]]
    seats = scoring.SeatCaches(64)
    for context, replies in zip((turn1, turn2, turn3), options):
        fed.clear()
        got = scoring.score_replies(model, tokenizer, [context, turn1], [replies, ["pass"]], False, seats=seats,
                                    keys=["wolf", "other"])
        if context is not turn1:        # the wolf's new turn only, then "other" (turn1 again) whole
            assert fed[0] == len(context) - len(previous) and len(turn1) in fed[1:]
        want = plain_scores(model, tokenizer, [context, turn1], [replies, ["pass"]], False)
        for mine, theirs in zip(got, want):
            assert mine == pytest.approx(theirs, abs=1e-3)
        previous = context
    hook.remove()
    assert set(seats.entries) == {"wolf", "other"}
    tiny_budget = scoring.SeatCaches(0)
    scoring.score_replies(model, tokenizer, [turn1], [["pass"]], False, seats=tiny_budget, keys=["a"])
    assert not tiny_budget.entries                    # bigger than the budget: not kept
    assert seats.take("wolf", turn1) == (None, 0) and "wolf" not in seats.entries     # not an extension
    size = seats.entries["other"][2]
    two = scoring.SeatCaches(1)
    two.budget = 2 * size
    for key in ("a", "b", "c"):
        scoring.score_replies(model, tokenizer, [turn1], [["pass"]], False, seats=two, keys=[key])
    assert list(two.entries) == ["b", "c"] and torch.is_tensor(two.entries["c"][1].layers[0].keys)


def lora_weights(folder):
    from safetensors.torch import load_file
    return load_file(str(folder / "adapter_model.safetensors"))


def test_two_step_smoke_run(tmp_path, tiny_llama):
    """The real trainer (TRL's GRPO with the RAE advantages, PEFT), 2 steps of one episode on a
    tiny model: the adapter moved, the loss is finite, only the seats' replies are in the loss."""
    import copy
    import math
    untrained = copy.deepcopy(tiny_llama[0])
    metrics = cli.main(["--steps", "2", "--episodes_per_step", "1", "--rows_per_step", "2",
                             "--snapshot_every", "2", "--eval_episodes", "1", "--tournament_episodes", "1",
                             "--learning_rate", "0.01", "--threads", "1", "--out", str(tmp_path)],
                            preloaded=tiny_llama)
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["step2"]
    trained = lora_weights(tmp_path / "adapter")
    lora_b = [w for name, w in trained.items() if "lora_B" in name]
    assert lora_b and any(float(w.abs().max()) > 0 for w in lora_b)      # B starts at zero: it moved
    assert len(metrics["loss"]) == 2 and all(math.isfinite(x) for x in metrics["loss"])
    rollouts = (tmp_path / "rollouts.csv").read_text().splitlines()
    assert rollouts[0].startswith("step,role,rows") and {line.split(",")[0] for line in rollouts[1:]} == {"0", "1"}
    assert sum(int(line.split(",")[2]) for line in rollouts[1:]) == 4                # 2 rows per step
    spans = json.loads((tmp_path / "mask_example.json").read_text())
    assert spans[0]["in_loss"] is False and spans[0]["text"].endswith('assistant\n{"action_type": "')
    assert "Here is the description of the game" in spans[0]["text"]            # the policy's own prompt
    replies = {'check", "argument": ""}', 'bet", "argument": ""}', 'call", "argument": ""}', 'fold", "argument": ""}'}
    assert all(s["text"] in replies for s in spans if s["in_loss"]) and any(s["in_loss"] for s in spans)
    assert set(metrics["exploitability"]) == {"step0", "step2"}
    assert all(0 < value < 2 for value in metrics["exploitability"].values())
    paired = "step2 minus step0 vs scripted:heuristic, paired by seed"
    assert set(metrics["evaluation"]) == {"step0 vs scripted:heuristic", "step2 vs scripted:heuristic",
                                          "step2 vs selfplay:step0", paired}
    assert all(v["win"]["n"] == 1 for k, v in metrics["evaluation"].items() if k != paired)
    assert metrics["evaluation"][paired]["pairs"] == 1 and metrics["evaluation"][paired]["test"].startswith("exact")
    records = [json.loads(line) for line in (tmp_path / "tournament.jsonl").read_text().splitlines()]
    assert len(records) == 3                                       # 3 entrants: 3 pairs x 1 episode
    assert {s["policy"] for r in records for s in r["roster"]} == {
        "selfplay:step0", "selfplay:step2", "scripted:heuristic"}
    assert metrics["rate_as"]["step2"] == f"smollm2?adapter={tmp_path / 'adapter'}&" + layout_options(
        Config()) and metrics["rate_as"]["step0"] == "smollm2?" + layout_options(Config())
    # --evaluate rates the saved checkpoints again, without training: the same policies
    again = cli.main(["--evaluate", str(tmp_path), "--eval_episodes", "1", "--tournament_episodes", "0",
                           "--threads", "1", "--out", str(tmp_path / "again")], preloaded=(untrained, tiny_llama[1]))
    assert again["exploitability"] == pytest.approx(metrics["exploitability"], abs=1e-9)
    assert (tmp_path / "again" / "metrics.json").is_file() and "loss" not in again
    # --eval_episodes 0: the round robin alone, no before/after matchups
    alone = cli.main(["--evaluate", str(tmp_path), "--eval_episodes", "0", "--tournament_episodes", "1",
                           "--threads", "1", "--out", str(tmp_path / "alone")], preloaded=(untrained, tiny_llama[1]))
    assert "evaluation" not in alone and not (tmp_path / "alone" / "evaluation.jsonl").exists()
    assert alone["tournament"]["episodes"] == 3


def test_bf16_autocasts_the_rollouts_and_the_training_passes(tmp_path, tiny_llama):
    """--bf16 true: the rollouts' scoring passes (no grad) and TRL's training passes (grad) both run
    under bfloat16 autocast, and a step still trains (finite loss, the adapter moved)."""
    import math
    import torch
    model, _ = tiny_llama
    seen = []

    def record(module, args, kwargs):
        seen.append((torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16,
                     torch.is_grad_enabled()))
    hook = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        metrics = cli.main(["--steps", "1", "--episodes_per_step", "1", "--rows_per_step", "2", "--bf16", "true",
                                 "--eval_before", "false", "--eval_episodes", "1", "--tournament_episodes", "0",
                                 "--learning_rate", "0.01", "--threads", "1", "--out", str(tmp_path)],
                                preloaded=tiny_llama)
    finally:
        hook.remove()
    assert (True, False) in seen and (True, True) in seen          # scoring and training under bf16
    assert all(math.isfinite(x) for x in metrics["loss"])
    assert any(float(w.abs().max()) > 0 for name, w in lora_weights(tmp_path / "adapter").items() if "lora_B" in name)


def test_team_game_one_step_trains_the_team_s_seats(tmp_path, tiny_llama, vote_spy):
    """A hidden-role team game through the real trainer: against a checkpoint the policy plays
    one whole team, and its rows are that team's seats, keyed by role."""
    metrics = cli.main(["--game", vote_spy, "--steps", "1", "--episodes_per_step", "2", "--rows_per_step", "3",
                             "--self_play", "0", "--snapshot_every", "5", "--eval_episodes", "1",
                             "--tournament_episodes", "0", "--eval_before", "false", "--learning_rate", "0.01",
                             "--threads", "1", "--out", str(tmp_path)], preloaded=tiny_llama)
    rows = [line.split(",") for line in (tmp_path / "rollouts.csv").read_text().splitlines()[1:]]
    # episode 0: the spies' team (1 spy) is the policy's, episode 1 the town (2 civilians)
    assert sorted((r[1], int(r[2])) for r in rows) == [("civilian", 2), ("spy", 1)]
    assert {r[6] for r in rows} == {"step0"}
    assert len(metrics["loss"]) == 1 and any(float(w.abs().max()) > 0 for name, w in
                                             lora_weights(tmp_path / "adapter").items() if "lora_B" in name)


def test_before_after_is_paired_by_seed():
    """A planted effect (the trained checkpoint wins 30 deals the base lost, loses 5 it won) is
    found; the same outcomes are a null (p = 1, zero points); only seeds both played count."""
    before = {seed: int(seed % 2 == 0) for seed in range(100)}
    after = dict(before)
    flipped = [s for s in range(100) if s % 2 == 1][:30] + [s for s in range(100) if s % 2 == 0][:5]
    for seed in flipped:
        after[seed] = 1 - after[seed]
    planted = evaluation.paired_before_after(before, {**after, 500: 1})
    assert planted["pairs"] == 100 and planted["points"] == 25.0
    assert planted["p_value"] < 1e-3 and 0 < planted["interval"][0] < 25 < planted["interval"][1]
    null = evaluation.paired_before_after(before, before)
    assert null["points"] == 0 and null["p_value"] == 1.0 and null["interval"] == [0.0, 0.0]
    # 8 deals turned from losses into wins, none the other way: 50% -> 58%, whose unpaired Wilson
    # intervals overlap, while the paired test (8 of 8 discordant deals one way) finds it
    from socialgym_training.common import rate_with_interval
    small = {seed: (1 - v if seed in (1, 3, 5, 7, 9, 11, 13, 15) else v) for seed, v in before.items()}
    assert rate_with_interval(58, 100)["low"] < rate_with_interval(50, 100)["high"]
    assert evaluation.paired_before_after(before, small)["p_value"] < 0.01


def test_bad_arguments_exit_with_code_2(capsys):
    with pytest.raises(SystemExit) as raised:
        cli.main(["--no_such_option", "1"])
    assert raised.value.code == 2 and "--baseline_rate" in capsys.readouterr().err
    for bad, said in ((["--talk", "loud"], "--talk must be free or pass"), (["--cache_mb", "-1"], "--cache_mb")):
        with pytest.raises(SystemExit) as raised:
            cli.main(bad + ["--steps", "1"])
        assert raised.value.code == 2 and said in capsys.readouterr().err


def test_layout_exploitability_probe_reaches_uniform_play_at_a_high_temperature(tiny_llama):
    from socialgym_training import kuhn_llm_exploitability as probe
    out = probe.main(["--prompts", "turns,compact", "--temperatures", "1,1e6"], preloaded=tiny_llama)
    for prompt in ("turns", "compact"):
        assert out[f"{prompt} T=1e+06"]["exploitability"] == pytest.approx(0.4583, abs=1e-3)   # uniform play
        assert out[f"{prompt} T=1e+06"]["likelier_reply_probability"] == pytest.approx(0.5, abs=1e-3)
        assert 0.5 < out[f"{prompt} T=1"]["likelier_reply_probability"] <= 1.0


def test_a_game_without_a_heuristic_baseline_fails_before_training(tmp_path, capsys):
    """The evaluation plays scripted:heuristic: in a game without a baseline the script stops
    with one line before loading a model or training (not after the training, mid-evaluation)."""
    socialgym_env.register_game(VoteSpy)
    try:
        with pytest.raises(SystemExit) as stopped:
            cli.main(["--game", "vote_spy", "--out", str(tmp_path / "out")], preloaded=("no model", "no tokenizer"))
    finally:
        socialgym_env.unregister_game("vote_spy")
    assert stopped.value.code == 2
    assert "scripted:heuristic has no baseline for vote_spy" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("per_token", [False, True])
def test_filtered_rows_leave_the_token_count_trl_divides_by(tmp_path, tiny_llama, monkeypatch, per_token):
    """TRL's default loss (``dapo``) divides by ``num_items_in_batch``, counted before the
    self-play override: a row whose advantage is zero must leave that count (and the loss mask),
    or it dilutes the token mean. The count the loss receives is the first row's reply tokens."""
    import trl
    rows_seen, divided_by = [], []

    def advantages(rows, config, baseline):
        rows_seen.extend(rows)
        if per_token:
            return [[0.5 * m for m in rows[0].env_mask], [0.0] * len(rows[1].env_mask)], {0}
        return [0.7, 0.0], {0}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        assert self.loss_type == "dapo"
        divided_by.append((int(inputs["num_items_in_batch"]),
                           int((inputs["completion_mask"] * inputs["tool_mask"]).sum())))
        return original(self, model, inputs, return_outputs, num_items_in_batch)

    original = trl.GRPOTrainer.compute_loss
    monkeypatch.setattr(trl.GRPOTrainer, "compute_loss", compute_loss)
    monkeypatch.setattr(trainer, "row_advantages", advantages)      # where the rollout looks it up
    cli.main(["--steps", "1", "--episodes_per_step", "1", "--rows_per_step", "2", "--self_play", "1",
                   "--eval_episodes", "0", "--eval_before", "false", "--tournament_episodes", "0",
                   "--threads", "1", "--out", str(tmp_path)], preloaded=tiny_llama)
    assert len(rows_seen) == 2 and divided_by
    kept_tokens = sum(rows_seen[0].env_mask)
    all_tokens = kept_tokens + sum(rows_seen[1].env_mask)
    assert 0 < kept_tokens < all_tokens
    # TRL splits the generation batch into shuffled pieces: the count spans it all, the mask the piece
    assert {count for count, _ in divided_by} == {kept_tokens}
    assert sum(in_loss for _, in_loss in divided_by) == kept_tokens


def test_apply_advantages_keeps_attention_and_masks_the_loss_per_token():
    """Per-token advantages: a zero turn leaves the loss mask (tool_mask) and the count, never the
    attention mask (completion_mask), which later tokens of the row still attend through."""
    import torch
    output = {"completion_mask": torch.ones(2, 4, dtype=torch.long),
              "tool_mask": torch.tensor([[1, 1, 0, 1], [1, 0, 1, 1]]),
              "advantages": torch.zeros(2), "num_items_in_batch": torch.tensor(6)}
    out = credit.apply_advantages(output, [[0.0, 0.0, 0.0, 2.0], [1.0, 0.0, -1.0]])
    assert out["completion_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 1]]
    assert out["tool_mask"].tolist() == [[0, 0, 0, 1], [1, 0, 1, 0]]
    assert int(out["num_items_in_batch"]) == 3
    assert out["advantages"].tolist() == [[0.0, 0.0, 0.0, 2.0], [1.0, 0.0, -1.0, 0.0]]


def test_groups_replay_one_deal_and_a_vote_is_one_batch(vote_spy, tokenizer):
    """--group_size 2: the step's episodes come in pairs of one seed (so one role deal) and one
    seating. The vote (a simultaneous phase: every seat at once) of all episodes is decided in
    one call of the model, with the info each seat would get from the batched tournament runner."""
    from socialgym_agents.runner import PolicyPool
    config = Config(game=vote_spy, episodes_per_step=4, group_size=2)
    plan = rollout.plan_episodes(config, 0, CheckpointPool(0, 1.0), random.Random(0))
    assert len(plan) == 4 and plan[0] == plan[1] and plan[2] == plan[3] and plan[0][0] != plan[2][0]
    batches = []

    def decide(contexts, infos, prefixes, keys=None):
        batches.append([info["step"] for info in infos])
        return first_legal(tokenizer)(contexts, infos, prefixes)

    games = rollout.play(plan, {"model": decide, "pool": PolicyPool(seed=0)}, tokenizer, config)
    assert len(batches) == 1 and batches[0] == [0, 1, 2] * 4          # 4 episodes x 3 voters, steps as dealt
    roles = [[g["env"].state.role(a) for a in g["env"].possible_agents] for g in games]
    assert roles[0] == roles[1] and roles[2] == roles[3]
    rows = rollout.collect_rows(games, config, limit=100)
    assert rows[0].deal == rows[3].deal != rows[6].deal and rows[0].turn_rewards == [rows[0].reward]


def test_frozen_seats_a_trained_team_and_a_scripted_opponent(tmp_path, tiny_llama, vote_spy):
    """One step where the policy plays only the spies (--train_teams) against the scripted
    baseline (--fixed_opponents, every episode), groups of 2 episodes on one deal, turn-level
    advantages: every row is a spy's, the opponents are the scripted baseline, the adapter moved."""
    metrics = cli.main(["--game", vote_spy, "--steps", "1", "--episodes_per_step", "4", "--group_size", "2",
                             "--rows_per_step", "2", "--self_play", "0", "--fixed_opponents", "scripted:heuristic",
                             "--fixed_share", "1", "--train_teams", "spies", "--advantage", "turn",
                             "--eval_episodes", "2", "--tournament_episodes", "0", "--learning_rate", "0.01",
                             "--threads", "1", "--out", str(tmp_path)], preloaded=tiny_llama)
    rows = [line.split(",") for line in (tmp_path / "rollouts.csv").read_text().splitlines()[1:]]
    assert [(r[1], r[2], r[6]) for r in rows] == [("spy", "2", "scripted:heuristic")]
    assert len(metrics["loss"]) == 1
    records = [json.loads(line) for line in (tmp_path / "evaluation.jsonl").read_text().splitlines()]
    for record in records:                     # evaluated as the side it trained: the spy's seat
        spy = next(s for s in record["roster"] if s["role"] == "spy")
        assert spy["policy"].startswith("selfplay:")


def test_n_player_games_without_teams_are_self_play_material(tmp_path, tokenizer, capsys):
    """A 5-player game without teams: every seat the policy's in self-play, one seat rotating
    against an opponent, one row per seat; --train_teams there is one line and exit 2."""
    from socialgym_agents.runner import PolicyPool
    config = Config(game="minority_game", game_config='{"rounds": 1}')
    env = socialgym_env.make("minority_game")
    env.reset(seed=0)
    agents = env.possible_agents
    seatings = [seat_assignment(agents, [""] * len(agents), False, "step0", e) for e in range(len(agents))]
    assert [[a for a, x in s.items() if x == CURRENT] for s in seatings] == [[a] for a in agents]
    plan = [(5, {a: CURRENT for a in agents}), (6, {a: ("scripted:random" if a != "player_2" else CURRENT)
                                                    for a in agents})]
    games = rollout.play(plan, {"model": first_legal(tokenizer), "pool": PolicyPool(seed=0)}, tokenizer, config)
    rows = rollout.collect_rows(games, config, limit=100)
    assert len(agents) == 5 and [r.learner for r in rows] == agents + ["player_2"]
    assert all(g["env"].state.result is not None for g in games)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--game", "minority_game", "--train_teams", "x", "--out", str(tmp_path / "o")],
                      preloaded=("no model", "no tokenizer"))
    assert stopped.value.code == 2 and "needs a team game" in capsys.readouterr().err


def test_a_run_in_two_pieces_equals_an_unbroken_one_step_for_step(tmp_path, tiny_llama):
    """4 steps unbroken, and as two pieces of 2 (--piece_steps 2 --resume true, the same command
    twice): the same rollouts (rows, rewards, baselines, opponents, step by step), the same
    losses and the same final adapter -- the optimizer, scheduler, RNGs, pool and baselines came
    back whole. A pool checkpoint is taken every step (2 kept) and self_play is 0.5, so the pool's
    draws and the baselines matter."""
    import copy
    import torch
    common = ["--steps", "4", "--episodes_per_step", "2", "--rows_per_step", "3", "--snapshot_every", "1",
              "--pool_size", "2", "--save_every", "2", "--eval_episodes", "0", "--eval_before", "false",
              "--tournament_episodes", "0", "--learning_rate", "0.05", "--threads", "1"]
    model, tokenizer = tiny_llama
    whole = cli.main(common + ["--out", str(tmp_path / "whole")], preloaded=(copy.deepcopy(model), tokenizer))
    piece = cli.main(common + ["--piece_steps", "2", "--resume", "true", "--out", str(tmp_path / "pieces")],
                          preloaded=(copy.deepcopy(model), tokenizer))
    assert piece["stopped_at"] == 2 and len(piece["loss"]) == 2 and not (tmp_path / "pieces" / "adapter").exists()
    # the same command again: the second piece, the last
    rest = cli.main(common + ["--piece_steps", "2", "--resume", "true", "--out", str(tmp_path / "pieces")],
                         preloaded=(copy.deepcopy(model), tokenizer))
    assert "stopped_at" not in rest
    assert rest["loss"] == whole["loss"] and len(whole["loss"]) == 4
    assert (tmp_path / "pieces" / "rollouts.csv").read_text() == (tmp_path / "whole" / "rollouts.csv").read_text()
    opponents = {line.split(",")[6] for line in (tmp_path / "whole" / "rollouts.csv").read_text().splitlines()[1:]}
    assert len(opponents) > 1                                     # the pool was drawn from
    a, b = lora_weights(tmp_path / "whole" / "adapter"), lora_weights(tmp_path / "pieces" / "adapter")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(float(w.abs().max()) > 0 for k, w in a.items() if "lora_B" in k)
