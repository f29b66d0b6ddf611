#!/usr/bin/env bash
# The SocialMaze HRD evidence run on a CPU (README "Training"): data, SFT and DPO LoRA adapters on
# SmolLM2, then held-out accuracy of base, SFT and DPO on the same puzzles. Sizes are the paper's
# recipe scaled down by flags (the defaults in socialgym_training/sft.py and socialgym_training/dpo.py are the paper's).
# Rerunning it continues: training resumes from its last checkpoint, finished evaluations are kept.
# Usage: bash socialgym_training/recipes/hrd_cpu.sh [OUT] ; env SFT_N, DPO_N, EVAL_N, LR, THREADS override.
set -euo pipefail
OUT=${1:-runs/hrd_cpu}
SFT_N=${SFT_N:-16}; DPO_N=${DPO_N:-8}; EVAL_N=${EVAL_N:-24}; LR=${LR:-3e-4}; THREADS=${THREADS:-1}
python -m socialgym_training.socialmaze data --out "$OUT/data" --sft 48 --dpo 24 --test 40 --seed 0
python -m socialgym_training.sft --data "$OUT/data/sft" --out "$OUT/sft" --max_examples "$SFT_N" --epochs 1 --grad_accum 4 \
    --learning_rate "$LR" --save_steps 1 --logging_steps 1 --threads "$THREADS"
python -m socialgym_training.dpo --data "$OUT/data/dpo" --out "$OUT/dpo" --max_examples "$DPO_N" --epochs 1 --grad_accum 4 \
    --learning_rate "$LR" --save_steps 1 --logging_steps 1 --threads "$THREADS"
for which in base sft dpo; do     # a finished evaluation is kept (rerun the script to continue)
    adapter=""; [ "$which" = base ] || adapter="$OUT/$which/adapter"
    [ -f "$OUT/eval_$which.json" ] || python -m socialgym_training.socialmaze evaluate --test "$OUT/data/test.jsonl" \
        --n "$EVAL_N" --threads "$THREADS" --adapter "$adapter" --out "$OUT/eval_$which.json"
done
