"""The embedded SmolLM2 through the batched runner vs the naive loop (greedy => same actions)."""
import pytest

from agents import make_policy
from agents.base import Request
from agents.runner import EpisodeJob, PolicyPool, play_episode, run_jobs

OPTS = "max_new_tokens=20&max_retries=0"


@pytest.fixture(scope="module")
def policies(smollm2_available):
    return make_policy(f"smollm2?{OPTS}"), make_policy(f"smollm2?{OPTS}&mode=naive")


def _actions(record):
    return [(t["agent"], t["raw"], t["action"]) for t in record["turns"]]


def test_greedy_batched_runner_matches_the_naive_loop(policies):
    batched, naive = policies
    jobs = [EpisodeJob("prisoners_dilemma", 7, ["llm", "llm"], config={"rounds": 2}),
            EpisodeJob("rock_paper_scissors", 7, ["llm", "scripted:random"], config={"rounds": 2})]
    fast = run_jobs(jobs, PolicyPool(prebuilt={"llm": batched}), max_concurrent_episodes=2)
    slow = [play_episode(job, PolicyPool(prebuilt={"llm": naive})) for job in jobs]
    assert all(r["finished"] for r in fast)
    for a, b in zip(fast, slow):
        assert _actions(a) == _actions(b)
    llm_turns = [t for r in fast for t in r["turns"] if "agent_meta" in t]
    assert llm_turns and all(t["agent_meta"]["model"] == "smollm2" for t in llm_turns)
    # Round 2 prompts extend round 1 prompts: the seat's KV cache was reused.
    assert batched.backend.stats["reused_tokens"] > 0
    assert naive.backend.stats["reused_tokens"] == 0


def test_context_overflow_trims_history_instead_of_crashing(smollm2_available):
    import socialgym_env
    policy = make_policy("smollm2?max_new_tokens=8&max_retries=0&context=420")
    env = socialgym_env.make("prisoners_dilemma", rounds=2)
    env.reset(seed=0)
    agent = env.agent_selection
    parts = dict(env.prompt_parts(agent), history=[f"[R1] Moderator: filler line {i} " * 3 for i in range(60)])
    decision = policy.act_batch([Request(("ep", agent), env.observe(agent), env.infos[agent], parts)])[0]
    assert decision.error is None
    assert decision.meta["history_omitted"] > 0
    prompt = decision.meta["attempts"][0]["prompt"]
    assert f"[... {decision.meta['history_omitted']} earlier messages omitted ...]" in prompt
    assert decision.meta["attempts"][0]["usage"]["prompt_tokens"] <= policy.backend.prompt_budget()
