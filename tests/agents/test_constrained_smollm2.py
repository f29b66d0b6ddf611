"""The embedded SmolLM2 with constrained decoding and in the scoring mode: every decision legal."""
import pytest

import socialgym_env
from socialgym_agents import make_policy
from socialgym_agents.base import Request
from socialgym_agents.llm.constraint import reply_grammar
from socialgym_agents.runner import EpisodeJob, PolicyPool, run_jobs

# free-text talk (battle_of_the_sexes "say"), numeric arguments (public_goods, bargaining),
# two-part arguments (liars_dice bids), plain choices (prisoners_dilemma)
GAMES = {"prisoners_dilemma": {"rounds": 1}, "battle_of_the_sexes": {"rounds": 1},
         "public_goods": {"rounds": 1}, "bargaining": {"rounds": 1}, "liars_dice": {"dice": 1}}


def _llm_turns(records):
    return [t for r in records for t in r["turns"] if "agent_meta" in t]


@pytest.mark.parametrize("options,seeds", [("max_new_tokens=20", 3), ("mode=score&max_new_tokens=20", 1)])
def test_constrained_smollm2_plays_with_no_invalid_action(smollm2_available, options, seeds):
    policy = make_policy(f"smollm2?{options}&max_retries=0")
    jobs = [EpisodeJob(game, seed, ["llm"] * len(socialgym_env.make(game).possible_agents), config=config)
            for game, config in GAMES.items() for seed in range(seeds)]
    records = run_jobs(jobs, PolicyPool(prebuilt={"llm": policy}))
    assert all(r["finished"] and not r.get("failed") for r in records)
    assert sum(sum(r["invalid_actions"].values()) for r in records) == 0
    turns = _llm_turns(records)
    assert turns and all(t["valid"] and t["agent_meta"]["valid"] for t in turns)
    assert all(len(t["agent_meta"]["attempts"]) == 1 for t in turns)      # legal on the first try
    talk = [t for t in turns if t["phase"] == "talk"]
    assert talk                                                           # free text was generated
    if "score" in options:
        scored = [t for t in turns if "scores" in t["agent_meta"]["attempts"][0]]
        assert scored and all(len(t["agent_meta"]["attempts"][0]["scores"]) >= 2 for t in scored
                              if t["phase"] != "talk")


def test_scoring_picks_the_argmax_of_independent_log_probabilities(smollm2_available):
    import torch
    policy = make_policy("smollm2?mode=score")
    backend = policy.backend
    env = socialgym_env.make("rock_paper_scissors", rounds=1)
    env.reset(seed=5)
    agent = env.agent_selection
    request = Request(("fixed", agent), env.observe(agent), env.infos[agent], env.prompt_parts(agent))
    decision = policy.act_batch([request])[0]
    record = decision.meta["attempts"][0]
    candidates = reply_grammar(request.info).finite
    prompt_ids = backend.encode([{"role": "user", "content": record["prompt"]}])
    independent = []
    with torch.inference_mode():
        for text in candidates:      # the full sequence, one plain forward pass, no cache
            reply_ids = backend.tokenizer.encode(text, add_special_tokens=False)
            logits = backend.model(input_ids=torch.tensor([prompt_ids + reply_ids])).logits[0].float()
            logprobs = torch.log_softmax(logits[len(prompt_ids) - 1:-1], dim=-1)
            independent.append(float(logprobs[torch.arange(len(reply_ids)), torch.tensor(reply_ids)].sum()))
    best = max(range(len(candidates)), key=lambda i: independent[i])
    assert record["reply"] == candidates[best]
    assert decision.action.replace(" ", "") == candidates[best].replace(" ", "")
    logged = dict(record["scores"])
    # same ranking; values agree up to the tokenization of the shared prefix
    assert sorted(candidates, key=lambda c: logged[c]) == sorted(candidates, key=lambda c: independent[candidates.index(c)])


def test_a_constrained_reply_stops_decoding_when_one_way_is_left(smollm2_available):
    """Once the grammar leaves one way to finish (``erate", "argument": ""}`` after ``coop``),
    that text is written, not decoded token by token: a choice costs one or two decode steps."""
    policy = make_policy("smollm2?max_retries=0")
    records = run_jobs([EpisodeJob("prisoners_dilemma", seed, ["llm", "llm"], config={"rounds": 2}) for seed in (0, 1)],
                       PolicyPool(prebuilt={"llm": policy}))
    turns = _llm_turns(records)
    assert len(turns) == 8 and all(t["valid"] for t in turns)
    for turn in turns:
        attempt = turn["agent_meta"]["attempts"][0]
        assert attempt["reply"].endswith('", "argument": ""}')
        assert 1 <= attempt["usage"]["new_tokens"] <= 2, attempt


def test_think_then_act_locally_reasons_within_its_budget_then_plays_a_legal_action(smollm2_available):
    """think=N: free reasoning (closed after N tokens by the grammar), then only a legal action,
    whatever the phase (choices, talk); the reasoning is logged with the turn and
    is in no public text."""
    policy = make_policy("smollm2?think=8&max_new_tokens=32&max_retries=0")
    games = {"prisoners_dilemma": {"rounds": 1}, "battle_of_the_sexes": {"rounds": 1}}
    jobs = [EpisodeJob(game, 0, ["llm"] * len(socialgym_env.make(game).possible_agents), config=config)
            for game, config in games.items()]
    records = run_jobs(jobs, PolicyPool(prebuilt={"llm": policy}))
    assert all(r["finished"] and not r.get("failed") for r in records)
    turns = _llm_turns(records)
    assert turns and all(t["valid"] and len(t["agent_meta"]["attempts"]) == 1 for t in turns)
    for turn in turns:
        meta = turn["agent_meta"]
        reply = meta["attempts"][0]["reply"]
        assert reply.startswith('{"reasoning": "') and '", "action": {"action_type": ' in reply
        assert meta["reasoning"] and 1 <= meta["reasoning_tokens"] <= 8
        assert meta["sampling"]["think"] == 8
    public = " ".join(" ".join(r["transcript"]) if isinstance(r["transcript"], list) else str(r["transcript"])
                      for r in records)
    long_reasonings = [t["agent_meta"]["reasoning"] for t in turns if len(t["agent_meta"]["reasoning"]) > 20]
    assert all(text not in public for text in long_reasonings)
