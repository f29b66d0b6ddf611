#!/usr/bin/env bash
# GPU smoke test (docs/training/gpu.md): does the training and play path run on `cuda`?
# Each check prints PASS, FAIL (its log named) or SKIP; the script exits 1 when any check failed.
#
#   bash socialgym_benchmarks/perf/gpu_smoke.sh [OUT]            # on a machine with a CUDA GPU (about 5 minutes)
#   DRY_RUN=1 bash socialgym_benchmarks/perf/gpu_smoke.sh OUT    # print each check's command, run nothing (CPU)
#
# Checks: the GPU is visible; a local policy loads on it; a 2-step multi-turn GRPO with HF
# generation; the same with vLLM generation (colocated on the training GPU; SKIP without the
# vllm package); a 2-step SFT under `accelerate launch` with socialgym_training/accelerate/single_gpu.yaml;
# a 4-episode tournament with the model on cuda; then the same SFT and the HF-generation GRPO in
# 2 processes under `accelerate launch` with multi_gpu.yaml (each process on its own GPU; SKIP
# with fewer than 2 GPUs). Env: PYTHON (default python), ACCELERATE (default accelerate),
# SOCIALGYM (default socialgym).
set -uo pipefail
OUT=${1:-runs/gpu_smoke}
PY=${PYTHON:-python}
ACC=${ACCELERATE:-accelerate}
SG=${SOCIALGYM:-socialgym}
mkdir -p "$OUT"
failed=0

check() {            # check NAME COMMAND...: run it, its output to OUT/NAME.log, print the verdict
    local name=$1; shift
    if [ -n "${DRY_RUN:-}" ]; then
        printf 'DRY %s:' "$name"; printf ' %q' "$@"; printf '\n'
        return 0
    fi
    if "$@" > "$OUT/$name.log" 2>&1; then
        echo "PASS $name"
    else
        echo "FAIL $name (see $OUT/$name.log)"
        failed=1
    fi
}

GRPO=(socialgym_training/grpo_games.py --game rock_paper_scissors --seat player_0 --opponents scripted:constant:rock
      --rounds 1 --steps 2 --episodes_per_step 1 --num_generations 4 --max_new_tokens 12 --temperature 1.5
      --eval_episodes 4 --eval_batch 4 --device cuda --threads 0)

check cuda_visible "$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name(0))"
check policy_on_cuda "$PY" -c "from socialgym_agents.registry import make_policy; p = make_policy('smollm2?device=cuda'); \
assert p.backend.device.type == 'cuda', p.backend.device; print('smollm2 on', p.backend.device)"
check grpo_hf "$PY" "${GRPO[@]}" --out "$OUT/grpo_hf"          # the policy's own prompts (--prompt turns)
if [ -n "${DRY_RUN:-}" ] || "$PY" -c "import vllm" > /dev/null 2>&1; then
    check grpo_vllm "$PY" "${GRPO[@]}" --use_vllm true --vllm_mode colocate --out "$OUT/grpo_vllm"   # the policy's prompts
else
    echo "SKIP grpo_vllm (the vllm package is not installed: pip install vllm)"
fi
check hrd_data "$PY" -m socialgym_training.socialmaze data --out "$OUT/hrd" --sft 16 --dpo 4 --test 4 --seed 0
check sft_accelerate "$ACC" launch --config_file socialgym_training/accelerate/single_gpu.yaml -m socialgym_training.sft \
    --data "$OUT/hrd/sft" --out "$OUT/sft" --max_examples 16 --max_steps 2 --grad_accum 1 --batch_size 4 \
    --learning_rate 2e-4 --save_steps 100 --logging_steps 1 --device cuda --threads 0
SFT_SMALL=(--data "$OUT/hrd/sft" --max_examples 16 --max_steps 2 --grad_accum 1 --batch_size 4 --learning_rate 2e-4
           --save_steps 100 --logging_steps 1 --device cuda --threads 0)
GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2> /dev/null || echo 0)
if [ -n "${DRY_RUN:-}" ] || [ "$GPUS" -ge 2 ]; then
    check sft_2proc "$ACC" launch --config_file socialgym_training/accelerate/multi_gpu.yaml --num_processes 2 \
        -m socialgym_training.sft "${SFT_SMALL[@]}" --out "$OUT/sft_2proc"
    check grpo_hf_2proc "$ACC" launch --config_file socialgym_training/accelerate/multi_gpu.yaml --num_processes 2 \
        "${GRPO[@]}" --out "$OUT/grpo_hf_2proc"
else
    echo "SKIP sft_2proc grpo_hf_2proc ($GPUS GPU visible; 2 processes need 2)"
fi
check tournament_cuda "$SG" tournament --games rock_paper_scissors --episodes 4 --workers 1 --out "$OUT/tournament" \
    --agents "smollm2?device=cuda&max_new_tokens=24,scripted:random"
if [ -z "${DRY_RUN:-}" ]; then
    [ "$failed" = 0 ] && echo "gpu smoke: PASS" || echo "gpu smoke: FAIL"
fi
exit "$failed"
