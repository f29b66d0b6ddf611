"""Training on logged trajectories (dataset export, SFT, DPO, RLVR/GRPO, LoRA detector, ANIL).

Each script reads the JSONL episode logs written by ``agents.runner`` / ``socialgym tournament``
(schema ``socialgym.episode/1``, see ``socialgym_env.logs``).

| module | does |
|--------|------|
| ``training.export`` | full-context decision rows (any seat), SFT / DPO (branching) / GRPO datasets, episode splits |
| ``training.cli`` | ``socialgym export sft|dpo|grpo LOGS... --out DIR`` |
| ``training.branching`` | DPO pairs from K candidates x M paired rollouts (``agents.branching``), max-gap permutation test |
| ``training.sft``, ``training.dpo`` | LoRA SFT / DPO with TRL (CleanRL-style scripts) |
| ``training.socialmaze`` | the SocialMaze HRD recipe: data and held-out accuracy |
| ``training.common`` | what the scripts share (options from config fields, devices, base model, LoRA, data, outputs) |
| ``training.grpo_games``, ``training.grpo_hrd`` | multi-turn and single-turn GRPO (HF or vLLM generation) |

Devices, accelerate and vLLM: docs/training/gpu.md; the rows and pairs: docs/training/data.md.
"""
