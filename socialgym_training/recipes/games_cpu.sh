#!/usr/bin/env bash
# The games check (README "Training"): SmolLM2 self-play with sampling on one game, an SFT LoRA
# adapter trained on the winning seats' legal decisions, then adapter vs base over N_DUEL seeded
# episodes (each side half the time, both sampling at DUEL_T: greedy play of a deterministic game
# would repeat one episode N_DUEL times) -> Elo and win rate with 95% intervals (OUT/duel).
# Usage: bash socialgym_training/recipes/games_cpu.sh [OUT] ; env GAME, ROUNDS, N_DATA, N_DUEL, SFT_N, LR, EPOCHS,
# DUEL_T, OPTS.
set -euo pipefail
OUT=${1:-runs/games_cpu}
GAME=${GAME:-prisoners_dilemma}; ROUNDS=${ROUNDS:-3}; N_DATA=${N_DATA:-40}; N_DUEL=${N_DUEL:-100}
SFT_N=${SFT_N:-64}; LR=${LR:-2e-4}; EPOCHS=${EPOCHS:-1}; DUEL_T=${DUEL_T:-0.7}
OPTS=${OPTS:-max_new_tokens=24&max_retries=0}
socialgym tournament --games "$GAME" -c "$GAME.rounds=$ROUNDS" --episodes "$N_DATA" --workers 1 --out "$OUT/selfplay" \
    --agents "smollm2?temperature=0.7&$OPTS,smollm2?temperature=1.0&$OPTS"
python -m socialgym_training.cli export sft "$OUT/selfplay/logs" --out "$OUT/data" --game "$GAME" --outcome win --legal-only
python -m socialgym_training.sft --data "$OUT/data" --out "$OUT/sft" --max_examples "$SFT_N" --epochs "$EPOCHS" --learning_rate "$LR" \
    --save_steps 2
socialgym tournament --games "$GAME" -c "$GAME.rounds=$ROUNDS" --episodes "$N_DUEL" --workers 1 --out "$OUT/duel" \
    --agents "smollm2?adapter=$OUT/sft/adapter&temperature=$DUEL_T&$OPTS,smollm2?temperature=$DUEL_T&$OPTS"
