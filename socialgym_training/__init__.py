"""Training on logged trajectories (dataset export, SFT, DPO, RLVR/GRPO, LoRA detector, ANIL).

Each script reads the JSONL episode logs written by ``socialgym_agents.runner`` / ``socialgym tournament``
(schema ``socialgym.episode/1``, see ``socialgym_env.logs``).

| module | does |
|--------|------|
| ``socialgym_training.export`` | full-context decision rows (any seat), SFT / DPO (branching) / GRPO datasets, episode splits |
| ``socialgym_training.cli`` | ``socialgym export sft|dpo|grpo LOGS... --out DIR`` |
| ``socialgym_training.branching`` | DPO pairs from K candidates x M paired rollouts (``socialgym_agents.branching``), max-gap permutation test |
| ``socialgym_training.sft``, ``socialgym_training.dpo`` | LoRA SFT / DPO with TRL (CleanRL-style scripts) |
| ``socialgym_training.socialmaze`` | the SocialMaze HRD recipe: data and held-out accuracy |
| ``socialgym_training.common`` | what the scripts share (options from config fields, devices, base model, LoRA, data, outputs) |
| ``socialgym_training.grpo_games``, ``socialgym_training.grpo_hrd`` | multi-turn and single-turn GRPO (HF or vLLM generation) |
| ``socialgym_training.multiturn`` | whole-episode rollouts of a learner seat as one token sequence (episode, layouts, rollout, generation) |
| ``socialgym_training.selfplay`` | self-play RL of a LoRA policy (``python -m socialgym_training.selfplay``; cli, decisions, rollout, credit, trainer, evaluation) |

Devices, accelerate and vLLM: docs/training/gpu.md; the rows and pairs: docs/training/data.md.
"""
