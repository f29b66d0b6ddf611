"""Episode rollouts for multi-turn GRPO: chat assembly, loss masks, group construction."""
import json

import pytest

from socialgym_training.multiturn.episode import EpisodeSpec, episode_specs, rollout_output
from socialgym_training.multiturn.layouts import ChatAssembler, news_text, reply_to_action
from socialgym_training.multiturn.rollout import play_episodes

PAPER = '{"action_type": "paper"}'


def scripted_generate(tokenizer, texts):
    """A fake learner: the i-th call answers every live episode with texts[i] (then EOS)."""
    calls = []

    def generate(contexts, infos=None):
        calls.append([list(c) for c in contexts])
        text = texts[min(len(calls) - 1, len(texts) - 1)]
        return [tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for _ in contexts]

    return generate, calls


def test_turn_by_turn_assembly_is_the_chat_template_rendering(tokenizer):
    assert ChatAssembler(tokenizer).check_append_only(["first view", "news one", "news two"],
                                                      [PAPER, "rock, I think"])


def test_loss_mask_covers_exactly_the_learner_replies(tokenizer):
    generate, calls = scripted_generate(tokenizer, [PAPER, "scissors please", "rock"])
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:constant:rock"], [3, 4], {"rounds": 3})
    episodes = play_episodes(specs, generate, tokenizer)
    assert len(calls) == 3 and [len(c) for c in calls] == [2, 2, 2]
    for episode in episodes:
        ids, mask = episode.completion_ids, episode.env_mask
        assert len(ids) == len(mask) and mask[0] == 1 and mask[-1] == 1
        in_loss = tokenizer.decode([t for t, m in zip(ids, mask) if m])
        out_of_loss = tokenizer.decode([t for t, m in zip(ids, mask) if not m])
        assert in_loss == "".join(text + tokenizer.eos_token for text in [PAPER, "scissors please", "rock"])
        assert "Round 2 moves" not in in_loss and "Round 1 moves" in out_of_loss and "Round 2 of 3" in out_of_loss
        assert "paper" not in out_of_loss.split("Round 1 moves")[0]      # no reply text outside the mask
        # every turn's context was exactly prompt + completion so far
        context = calls[-1][episodes.index(episode)]
        assert context == (episode.prompt_ids + ids)[:len(context)] and len(context) > len(episode.prompt_ids)
    # paper beats rock, scissors loses, rock ties: 1 - 1 + 0 = 0 -> draw; "scissors please" is not an action
    assert [e.actions[1] for e in episodes] == ["scissors please"] * 2
    assert all(e.invalid_actions == 1 for e in episodes)
    out = rollout_output(episodes, invalid_penalty=0.5)
    assert out["env_mask"] == [e.env_mask for e in episodes]
    assert out["episode_reward"] == [e.reward - 0.5 for e in episodes]
    assert set(out) >= {"prompt_ids", "completion_ids", "logprobs"}


def test_groups_share_game_seed_and_role_and_see_identical_opponents(tokenizer):
    from trl.trainer.grpo_trainer import RepeatSampler

    from socialgym_training.grpo_games import Config, training_dataset
    config = Config(game="liars_dice", seat="player_1", opponents="scripted:random", rounds=0)
    dataset = training_dataset(config, n_rows=3)
    sampler = RepeatSampler(dataset, mini_repeat_count=4, batch_size=3, repeat_count=1, shuffle=True, seed=0)
    prompts = [dataset[i]["prompt"] for i in sampler]
    groups = [prompts[i:i + 4] for i in range(0, len(prompts), 4)]
    assert len(groups) == 3 and all(len(set(g)) == 1 for g in groups)
    assert len({EpisodeSpec.from_prompt(g[0]).seed for g in groups}) == 3
    # a group played with identical learner replies gives identical episodes (opponents seeded alike)
    generate, _ = scripted_generate(tokenizer, ['{"action_type": "liar"}'])
    episodes = play_episodes([EpisodeSpec.from_prompt(p) for p in groups[0]], generate, tokenizer)
    assert len({tuple(e.completion_ids) for e in episodes}) == 1 and len({e.reward for e in episodes}) == 1


def test_news_text_and_reply_parsing():
    info = {"new_messages": ["[R1] A: hi"], "action_types": ["rock", "paper"]}
    assert news_text("intro\n--- Now ---\nLegal actions:\n- rock", info) == "[R1] A: hi\n--- Now ---\nLegal actions:\n- rock"
    assert reply_to_action('sure: {"action_type": "Paper"}', info) == '{"action_type": "paper", "argument": ""}'
    assert reply_to_action("  paper \n", info) == "paper"
    assert reply_to_action('{"action_type": "rock", "argument": "sci', info) == '{"action_type": "rock", "argument": ""}'
    assert reply_to_action('{"action_type": "og", "argument', info) == '{"action_type": "og", "argument'  # env decides


def test_episode_spec_round_trips_through_the_prompt():
    spec = EpisodeSpec("werewolves", 7, "Seer", ("scripted:heuristic",), (("max_steps", 40),))
    assert EpisodeSpec.from_prompt(spec.prompt()) == spec
    with pytest.raises(ValueError):
        EpisodeSpec.from_prompt("not json")


def test_compact_prompt_is_shorter_and_keeps_what_the_seat_needs(tokenizer):
    generate, _ = scripted_generate(tokenizer, [PAPER])
    specs = episode_specs("werewolves", "Seer", ["scripted:heuristic"], [0], {"max_steps": 12})
    full = play_episodes(specs, generate, tokenizer)[0]
    compact = play_episodes(specs, generate, tokenizer, prompt="compact")[0]
    text = tokenizer.decode(compact.prompt_ids)
    assert len(compact.prompt_ids) < len(full.prompt_ids) * 0.6
    assert "role Seer" in text and "inspect " in text and "Legal actions:" in text
    assert sum(compact.env_mask) == sum(full.env_mask)          # the same replies are in the loss
    with pytest.raises(ValueError, match="full or compact"):
        play_episodes(specs, generate, tokenizer, prompt="short")


def test_reply_prefix_is_outside_the_loss_and_starts_every_reply(tokenizer):
    prefix = '{"action_type": "'
    generate, calls = scripted_generate(tokenizer, ['paper"}'])
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:constant:rock"], [1], {"rounds": 2})
    episode = play_episodes(specs, generate, tokenizer, reply_prefix=prefix)[0]
    assert episode.reward == 1.0 and episode.invalid_actions == 0
    assert episode.replies == [prefix + 'paper"}'] * 2
    assert tokenizer.decode(episode.prompt_ids).endswith("assistant\n" + prefix)
    in_loss = tokenizer.decode([t for t, m in zip(episode.completion_ids, episode.env_mask) if m])
    assert in_loss == ('paper"}' + tokenizer.eos_token) * 2
    assert all(context[-len(calls[0][0][-3:]):] == calls[0][0][-3:] for context in calls[1])   # prefix again


def test_constrained_rollouts_only_ever_play_legal_actions(smollm2_base):
    """Sampling hot (T=1.5) from the base model under the legal-reply grammar: every reply of
    every turn parses to a legal action, so no episode has an invalid action or a fallback."""
    from socialgym_training.multiturn.generation import hf_generate_fn
    model, tokenizer = smollm2_base
    prefix = '{"action_type": "'
    specs = episode_specs("rock_paper_scissors", "player_0", ["scripted:random"], range(8), {"rounds": 2})
    generate = hf_generate_fn(model, tokenizer, 12, temperature=1.5, seed=0, constrained=True, reply_prefix=prefix)
    episodes = play_episodes(specs, generate, tokenizer, prompt="compact", reply_prefix=prefix)
    replies = [reply for episode in episodes for reply in episode.replies]
    assert len(replies) == 16 and all(not e.truncated and e.invalid_actions == 0 for e in episodes)
    legal = {json.dumps({"action_type": move, "argument": ""}) for move in ("rock", "paper", "scissors")}
    assert {reply_to_action(r, {}) for r in replies} <= legal


def test_constrained_free_text_is_closed_within_the_token_budget(smollm2_base):
    """A describe phase (free text) under a budget of 8 new tokens: the processor closes the
    string before the budget runs out, so even cut-short talk is a legal action."""
    from socialgym_training.multiturn.generation import hf_generate_fn
    model, tokenizer = smollm2_base
    specs = episode_specs("undercover", "player_0", ["scripted:heuristic"], range(2), {"rounds": 1})
    generate = hf_generate_fn(model, tokenizer, 8, temperature=1.5, seed=1, constrained=True)
    episodes = play_episodes(specs, generate, tokenizer, prompt="compact", max_turns=20)
    assert all(not e.truncated and e.invalid_actions == 0 and e.replies for e in episodes)
    assert any('"argument": "' in reply for e in episodes for reply in e.replies)   # free text was written
