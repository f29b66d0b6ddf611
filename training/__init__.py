"""Training on logged trajectories (dataset export, SFT, DPO, RLVR/GRPO, LoRA detector, ANIL).

Each script reads the JSONL episode logs written by ``agents.runner`` / ``socialgym tournament``
(schema ``socialgym.episode/1``, see ``socialgym_env.logs``).
"""
