"""Training on logged trajectories (dataset export, SFT, DPO, RLVR/GRPO, LoRA detector, ANIL).

Each script reads the JSONL episode logs written by ``agents.runner`` / ``socialgym tournament``
(schema ``socialgym.episode/1``, see ``socialgym_env.logs``).

| module | does |
|--------|------|
| ``training.export`` | decision rows, SFT / DPO (cross-episode) / GRPO datasets, episode splits, ``restore_env`` |
| ``training.cli`` | ``socialgym export sft|dpo|grpo LOGS... --out DIR`` |
| ``training.branching`` | verifiable DPO pairs from K candidates x M rollouts of env clones |
| ``training.sft``, ``training.dpo`` | LoRA SFT / DPO with TRL (CleanRL-style scripts) |
| ``training.socialmaze`` | the SocialMaze HRD recipe: data and held-out accuracy |
| ``training.common`` | what the two trainers share (base model, LoRA config, data, outputs) |
"""
