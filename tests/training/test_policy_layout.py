"""Training sees the tokens the policy sees: the multi-turn GRPO rollout (``prompt=turns``) and
the LLM policy, playing the same episode (same seed, same replies, deterministic opponents),
build the same token ids at every decision -- the policy's ids taken from the local backend's
own prompt assembly (:meth:`HFBackend._prompt_ids`, prefilled reply prefix included)."""
import pytest

import socialgym_env
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.constraint import reply_grammar
from socialgym_agents.llm.policy import LLMPolicy
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs
from prompt_identity import MODEL_CONTEXT, RecordingBackend, pick
from socialgym_training.multiturn.episode import Episode, EpisodeSpec
from socialgym_training.multiturn.layouts import PolicyLayout
from socialgym_training.multiturn.rollout import play_episodes

SEED = 5


def policy_side(tokenizer, game, config, options):
    backend = RecordingBackend(tokenizer, parse_options(options))
    policy = LLMPolicy(backend, backend.config, "rec")
    records = run_jobs([EpisodeJob(game, SEED, ["rec", "scripted:heuristic"], config=dict(config))],
                       PolicyPool(prebuilt={"rec": policy}), log_path=None)
    assert not records[0].get("failed"), records[0].get("error")
    return backend.seen, [t["action"] for t in records[0]["turns"] if t["agent"] == "player_0"]


def grpo_side(tokenizer, game, config, options, split_replies=False):
    layout = PolicyLayout(tokenizer, MODEL_CONTEXT, options)
    seen = []

    def generate(contexts, infos):
        out = []
        for context, info in zip(contexts, infos):
            seen.append(list(context))
            text = pick(len(seen) - 1, reply_grammar(info).finite)[len(layout.reply_prefix(info)):]
            # split_replies: one token per character, a split the chat template never makes
            ids = [i for ch in text for i in tokenizer(ch, add_special_tokens=False)["input_ids"]] if split_replies \
                else tokenizer(text, add_special_tokens=False)["input_ids"]
            out.append(ids + [tokenizer.eos_token_id])
        return out

    spec = EpisodeSpec(game, SEED, "player_0", ("scripted:heuristic",), tuple(sorted(config.items())))
    episode = play_episodes([spec], generate, tokenizer, prompt="turns", layout=layout)[0]
    return seen, episode


GAMES = [("rock_paper_scissors", {"rounds": 3}, "max_new_tokens=24&max_retries=0"),
         ("prisoners_dilemma", {"rounds": 4}, ""),
         ("kuhn_poker", {}, "max_retries=1"),
         ("liars_dice", {"num_players": 2, "dice": 2}, "max_new_tokens=32")]


@pytest.mark.parametrize("game,config,options", GAMES, ids=[g for g, _, _ in GAMES])
def test_grpo_rollout_prompts_are_the_policy_s_token_for_token(tokenizer, game, config, options):
    expected, actions = policy_side(tokenizer, game, config, options)
    seen, episode = grpo_side(tokenizer, game, config, options)
    assert len(seen) == len(expected) >= 1
    assert seen == expected                              # every decision's ids, prefix included
    assert [a.split('"')[3] for a in episode.actions] == [a.split(" ")[0] for a in actions]
    check_row(seen, episode)
    if game != "liars_dice":        # Liar's Dice re-rolls each round: the policy starts its chat over
        assert episode.outside_row == 0


def check_row(seen, episode):
    """The row is append-only up to the policy's first restart (a prompt that does not extend
    the one before): each decision's context before it is the start of the row, none after it
    is, and those decisions are counted outside the row."""
    restart = next((k for k in range(1, len(seen)) if seen[k][:len(seen[k - 1])] != seen[k - 1]), len(seen))
    row = episode.prompt_ids + episode.completion_ids
    assert all(row[:len(ids)] == ids for ids in seen[:restart])
    assert not any(row[:len(ids)] == ids for ids in seen[restart:])
    assert episode.outside_row == len(seen) - restart
    assert sum(episode.env_mask) > 0 and len(episode.env_mask) == len(episode.completion_ids)
    return restart


def test_trimmed_history_gives_the_same_prompts_and_stops_the_row_at_the_restart(tokenizer):
    """A context too small for the whole chat: the policy drops the oldest history and starts
    the chat over; the rollout follows it (same ids), and its row holds the decisions before."""
    options = "max_new_tokens=24&max_retries=0&context=1000"
    expected, _ = policy_side(tokenizer, "prisoners_dilemma", {"rounds": 10}, options)
    seen, episode = grpo_side(tokenizer, "prisoners_dilemma", {"rounds": 10}, options)
    assert seen == expected and len(seen) == 10
    assert 1 < check_row(seen, episode) < 10          # some decisions appended, then a restart


def test_score_mode_prompts_end_in_the_candidates_common_prefix(tokenizer):
    expected, _ = policy_side(tokenizer, "kuhn_poker", {}, "mode=score")
    layout = PolicyLayout(tokenizer, MODEL_CONTEXT, "mode=score")
    env = socialgym_env.make("kuhn_poker")
    env.reset(seed=SEED)
    agent = env.agent_selection
    seat = layout.seat(Episode(None), ("k", agent), SEED)
    ids, prefix = seat.prompt(env.infos[agent], env.prompt_parts(agent))
    assert prefix == '{"action_type": "' and ids == expected[0]


def test_a_reply_split_unlike_the_template_is_kept_as_the_next_prompt_holds_it(tokenizer):
    seen, episode = grpo_side(tokenizer, "rock_paper_scissors", {"rounds": 3}, "max_retries=0", split_replies=True)
    expected, _ = policy_side(tokenizer, "rock_paper_scissors", {"rounds": 3}, "max_retries=0")
    assert seen == expected                    # the policy re-encodes the reply text: so does the row
    assert check_row(seen, episode) == len(seen)
    # the earlier replies hold the template's ids; the last has no later prompt and keeps its
    # sampled (split) ids, EOS included, all in the loss
    last = episode.replies[-1][len('{"action_type": "'):]
    split = [i for ch in last for i in tokenizer(ch, add_special_tokens=False)["input_ids"]] + [tokenizer.eos_token_id]
    assert episode.completion_ids[-len(split):] == split and episode.env_mask[-len(split):] == [1] * len(split)
    whole = tokenizer(episode.replies[0][len('{"action_type": "'):], add_special_tokens=False)["input_ids"]
    first = episode.completion_ids[:len(whole)]
    assert first == whole and episode.env_mask[:len(whole) + 1] == [1] * (len(whole) + 1)


def test_layouts_that_are_not_one_token_sequence_are_refused(tokenizer):
    with pytest.raises(ValueError, match="prompt=turns"):
        PolicyLayout(tokenizer, MODEL_CONTEXT, "prompt=single")
    with pytest.raises(ValueError, match="reply prefix"):
        play_episodes([], lambda c, i: [], tokenizer, prompt="turns", layout=PolicyLayout(tokenizer, 8192),
                      reply_prefix='{"a')
