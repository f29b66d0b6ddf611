"""The decision head: its update learns a planted effect and not a null one, it starts as the
base scoring policy, it plays only legal replies and the same seed gives the same choices."""
import json

import numpy as np
import pytest

from socialgym_agents.llm.decision_head import DecisionHead
from socialgym_training.decision_head import Decisions, HeadTraining, advantages, update_head

from head_fakes import HIDDEN, play_werewolves

OPTIONS = 4


def toy_decision(rng):
    """One decision: random log-probabilities and hidden features; hidden column 2 is 1 on one
    reply (the planted mark) and 0 elsewhere. Returns (features, index of the marked reply)."""
    features = np.concatenate([rng.normal(-2, 1, (OPTIONS, 1)), rng.normal(0, 1, (OPTIONS, HIDDEN))], axis=1)
    marked = int(rng.integers(OPTIONS))
    features[:, 1 + 2] = 0.0
    features[marked, 1 + 2] = 1.0
    return features, marked


def marked_rate(head, seed: int, n: int = 400) -> float:
    """Mean probability the head's softmax puts on the marked reply, over fresh decisions."""
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(n):
        features, marked = toy_decision(rng)
        z = head.logits(features)
        p = np.exp(z - z.max())
        total += p[marked] / p.sum()
    return total / n


def train_toy(reward_of, iterations: int = 12, episodes: int = 64, seed: int = 0) -> DecisionHead:
    """On-policy iterations: each episode is one decision drawn from the head, rewarded by
    ``reward_of(chose_marked, rng)``; the head is updated on the batch's cached features."""
    rng = np.random.default_rng(seed)
    head = DecisionHead.fresh(HIDDEN)
    for _ in range(iterations):
        batch = Decisions()
        for e in range(episodes):
            features, marked = toy_decision(rng)
            z = head.logits(features)
            p = np.exp(z - z.max())
            pick = int(rng.choice(OPTIONS, p=p / p.sum()))
            batch.add((f"ep{e}", "seat"), 0, features, pick)
            batch.rewards.append(reward_of(pick == marked, rng))
        update_head(head, batch, HeadTraining(learning_rate=0.3, epochs=20))
    return head


def test_planted_feature_is_learned():
    base = marked_rate(DecisionHead.fresh(HIDDEN), seed=99)
    head = train_toy(lambda won, rng: 1.0 if won else -1.0)
    assert base < 0.35                      # the log-probabilities know nothing of the mark
    assert marked_rate(head, seed=99) > 0.85
    assert abs(head.weights[1 + 2]) == max(abs(head.weights[1:]))   # the mark's weight leads


def test_random_rewards_teach_nothing_beyond_noise():
    """Rewards that ignore the choice: each run's head wanders (RL on 64 episodes a batch is
    noisy) but with no direction: the mean over seeds stays near the base, every run far below
    the planted one."""
    base = marked_rate(DecisionHead.fresh(HIDDEN), seed=99)
    planted = marked_rate(train_toy(lambda won, rng: 1.0 if won else -1.0), seed=99)
    null = [marked_rate(train_toy(lambda won, rng: float(rng.choice([-1.0, 1.0])), seed=seed), seed=99)
            for seed in range(4)]
    assert abs(np.mean(null) - base) < 0.1
    assert max(null) < planted - 0.4


def test_equal_rewards_leave_the_head_unchanged():
    rng = np.random.default_rng(1)
    head = DecisionHead.fresh(HIDDEN)
    batch = Decisions()
    for e in range(8):
        batch.add((f"ep{e}", "seat"), 0, toy_decision(rng)[0], 0)
    batch.rewards = [1.0] * 8
    before = head.weights.copy()
    update_head(head, batch)
    assert np.array_equal(head.weights, before)


def test_baseline_is_the_other_episodes_mean_each_episode_once():
    batch = Decisions()
    for episode, reward, turns in (("a", 1.0, 3), ("b", -1.0, 1), ("c", -1.0, 2)):
        for t in range(turns):
            batch.add((episode, "w"), t, np.zeros((2, 3)), 0)
            batch.rewards.append(reward)
    adv = advantages(batch)
    assert adv[0] == pytest.approx(1.0 - (-1.0))          # a: others' mean is -1, whatever their turns
    assert adv[3] == pytest.approx(-1.0 - 0.0)            # b: mean of a (+1) and c (-1)


def test_fresh_head_is_the_scoring_policy_and_files_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    features = toy_decision(rng)[0]
    head = DecisionHead.fresh(HIDDEN)
    assert np.allclose(head.logits(features), features[:, 0])
    head.weights[3] = 0.5
    head.save(tmp_path / "h.json")
    again = DecisionHead.load(tmp_path / "h.json")
    assert np.array_equal(again.weights, head.weights) and np.array_equal(again.logits(features), head.logits(features))
    (tmp_path / "bad.json").write_text(json.dumps({"kind": "other"}))
    with pytest.raises(ValueError, match="decision-head"):
        DecisionHead.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="not a readable"):
        DecisionHead.load(tmp_path / "absent.json")


def test_decisions_cache_round_trips(tmp_path):
    rng = np.random.default_rng(3)
    batch = Decisions()
    for e in range(3):
        batch.add((f"ep{e}", "player_1"), e, toy_decision(rng)[0][: 2 + e], e % 2)
    batch.rewards = [1.0, -1.0, 0.0]
    batch.save(tmp_path / "d.npz")
    again = Decisions.load(tmp_path / "d.npz")
    assert again.picks == batch.picks and again.seats == batch.seats and again.rewards == batch.rewards
    assert all(np.array_equal(a, b) for a, b in zip(again.features, batch.features))


def test_head_policy_plays_legal_replies_and_repeats_itself(tmp_path):
    head = DecisionHead.fresh(HIDDEN)
    head.weights[1:] = np.random.default_rng(4).normal(0, 1, HIDDEN)
    head.save(tmp_path / "h.json")
    record, seen = play_werewolves(tmp_path / "h.json", seed=7)
    wolves = {s["agent"] for s in record["roster"] if s["team"] == "werewolves"}
    mine = [t for t in record["turns"] if t["agent"] in wolves and (t.get("agent_meta") or {}).get("attempts")]
    assert mine and len(seen) == len(mine)
    assert all(t["valid"] and not t.get("fallback") for t in mine)
    assert all("head" in t["agent_meta"]["attempts"][0] for t in mine)
    again, _ = play_werewolves(tmp_path / "h.json", seed=7)
    assert [t["action"] for t in again["turns"]] == [t["action"] for t in record["turns"]]


def test_head_option_needs_score_mode():
    from socialgym_agents.llm.config import parse_options
    with pytest.raises(ValueError, match="mode=score"):
        parse_options("head=x.json")


def test_reply_features_match_a_plain_forward(tiny_llama):
    """Column 0 is the reply's log-probability as scoring computes it; the rest is the last
    hidden state over the reply's tokens, mean-pooled, as one plain forward over context + reply
    gives it; a seat's cached context gives the same rows as a fresh encoding."""
    import torch

    from socialgym_agents.llm.decision_head import reply_features
    from socialgym_agents.llm.scoring import SeatCaches, score_replies
    model, tokenizer = tiny_llama
    model.eval()
    context = tokenizer("The werewolves choose a victim tonight:", add_special_tokens=False)["input_ids"]
    options = [' "Alice"}', ' "Bob"}', ' "Charlotte the seer"}']
    rows = reply_features(model, tokenizer, context, options)
    assert rows.shape == (3, 1 + model.config.hidden_size)
    assert np.allclose(rows[:, 0], score_replies(model, tokenizer, [context], [options], with_eos=False)[0], atol=1e-4)
    for k, text in enumerate(options):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([context + ids]), output_hidden_states=True).hidden_states[-1][0]
        assert np.allclose(rows[k, 1:], hidden[len(context):].mean(0).numpy(), atol=1e-4)
    seats = SeatCaches(64)
    reply_features(model, tokenizer, context[:-3], options, seats, "seat")
    assert np.allclose(reply_features(model, tokenizer, context, options, seats, "seat"), rows, atol=1e-4)
    # a kept context whose tail differs (the last reply's forced start, tokenised apart) is used
    # up to where the two agree
    other = tokenizer(' "Bob', add_special_tokens=False)["input_ids"]
    reply_features(model, tokenizer, context[:-2] + other, options, seats, "seat2")
    assert seats.entries["seat2"][0] == context[:-2] + other
    assert np.allclose(reply_features(model, tokenizer, context, options, seats, "seat2"), rows, atol=1e-4)
    reply_features(model, tokenizer, context[:-2] + other, options, seats, "seat3")
    assert seats.take_common("seat3", context)[1] == len(context) - 2      # reused up to the fork


def test_a_bad_head_spec_is_refused_before_anything_loads(tmp_path):
    from socialgym_agents.llm import check_llm_spec
    from socialgym_agents.specs import AgentSpec
    with pytest.raises(ValueError, match="not a readable decision-head file"):
        check_llm_spec(AgentSpec.of(f"smollm2?mode=score&head={tmp_path / 'absent.json'}"))
    DecisionHead.fresh(HIDDEN).save(tmp_path / "h.json")
    with pytest.raises(ValueError, match="local model"):
        check_llm_spec(AgentSpec.of(f"openai:m@http://127.0.0.1:9/v1?mode=score&head={tmp_path / 'h.json'}"))
