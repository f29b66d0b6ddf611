#!/usr/bin/env bash
# The SocialMaze HRD evidence run on a CPU (README "Training"): data, SFT and DPO LoRA adapters on
# SmolLM2, then held-out accuracy of base, SFT and DPO on the same puzzles. Sizes are the paper's
# recipe scaled down by flags (the defaults in training/sft.py and training/dpo.py are the paper's).
# Rerunning it continues: training resumes from its last checkpoint, finished evaluations are kept.
# Usage: bash training/recipes/hrd_cpu.sh [OUT] ; env SFT_N, DPO_N, TEST_N, LR override the sizes.
set -euo pipefail
OUT=${1:-runs/hrd_cpu}
SFT_N=${SFT_N:-48}; DPO_N=${DPO_N:-16}; TEST_N=${TEST_N:-40}; LR=${LR:-2e-4}
python -m training.socialmaze data --out "$OUT/data" --sft "$SFT_N" --dpo "$DPO_N" --test "$TEST_N" --seed 0
python -m training.sft --data "$OUT/data/sft" --out "$OUT/sft" --max_examples "$SFT_N" --epochs 1 \
    --learning_rate "$LR" --save_steps 2
python -m training.dpo --data "$OUT/data/dpo" --out "$OUT/dpo" --max_examples "$DPO_N" --epochs 1 \
    --grad_accum 4 --learning_rate "$LR" --save_steps 2
for which in base sft dpo; do     # a finished evaluation is kept (rerun the script to continue)
    adapter=""; [ "$which" = base ] || adapter="$OUT/$which/adapter"
    [ -f "$OUT/eval_$which.json" ] || python -m training.socialmaze evaluate --test "$OUT/data/test.jsonl" --adapter "$adapter" --out "$OUT/eval_$which.json"
done
