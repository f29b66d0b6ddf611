"""The training scripts' options, composed from shared dataclasses the way TRL's scripts compose
``ModelConfig``, ``ScriptArguments`` and a ``*Config``: each group of options is written and
documented here once, and a script's ``Config`` inherits the groups it uses and adds only its own
fields. A script that wants another default re-declares the field with the new default and no
docstring (its ``--help`` line still comes from here: :func:`socialgym_env.docgen.field_help`
reads the whole class hierarchy).

    @dataclass
    class Config(RunArgs, ModelArgs, LoraArgs, TrainerArgs, DataArgs):
        beta: float = 0.1
        \"\"\"DPO temperature\"\"\"
"""
from __future__ import annotations

from dataclasses import dataclass

from socialgym_training.common import ATTENTION, lora_config


@dataclass
class RunArgs:
    """Where a run writes and how it is seeded."""
    out: str = "runs/out"
    """Output folder (the script's description says what it writes there)"""
    seed: int = 0
    """Seed of everything random in the run: data sample, deals, adapter initialisation, sampling"""


@dataclass
class ThreadArgs:
    threads: int = 2
    """Torch CPU threads (0 = torch's default)"""


@dataclass
class ModelArgs(ThreadArgs):
    """The base causal LM and where it runs."""
    model: str = "smollm2"
    """Base model: smollm2 (the embedded SmolLM2-135M), hf:<folder or .gguf>, or a local transformers folder"""
    device: str = "auto"
    """auto (a GPU when one is visible), cpu or cuda; under accelerate launch each process takes its own GPU"""


@dataclass
class LoraRankArgs:
    lora_r: int = 16
    """LoRA rank"""
    lora_alpha: int = 32
    """LoRA scaling (alpha / r multiplies the update)"""


@dataclass
class LoraArgs(LoraRankArgs):
    """The LoRA adapter a causal-LM script trains."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input"""
    lora_targets: str = ATTENTION
    """LoRA target modules: all-linear, or a comma-separated list such as q_proj,v_proj"""

    def peft_config(self):
        return lora_config(self.lora_r, self.lora_alpha, self.lora_dropout, self.lora_targets)


@dataclass
class OptimArgs:
    """The optimiser and the training loop's display."""
    learning_rate: float = 5e-6
    """AdamW learning rate (LoRA needs more than a full fine-tune)"""
    progress: bool = True
    """Show a progress bar (steps, ETA) and the logged loss (and reward); --progress false for quiet logs"""


@dataclass
class TrainerArgs(OptimArgs):
    """A transformers Trainer's schedule and checkpoints (the SFT and DPO scripts)."""
    epochs: float = 2.0
    """Passes over the training rows"""
    max_steps: int = -1
    """Optimiser steps; > 0 overrides epochs"""
    lr_scheduler: str = "cosine"
    """Transformers scheduler name: cosine, linear, constant..."""
    warmup_ratio: float = 0.1
    """Share of the steps spent warming up the learning rate"""
    batch_size: int = 1
    """Examples per device and step"""
    grad_accum: int = 8
    """Steps whose gradients are summed before one optimiser update"""
    gradient_checkpointing: bool = False
    """Saves memory on big models, costs ~30% more compute"""
    logging_steps: int = 5
    """Log loss and learning rate every this many steps"""
    save_steps: int = 50
    """Write a checkpoint every this many steps"""
    resume: bool = True
    """Continue from the last checkpoint in out/checkpoints"""


@dataclass
class RLArgs(OptimArgs):
    """An on-policy loop: optimiser steps over freshly sampled replies."""
    steps: int = 20
    """Optimiser steps (one rollout batch each)"""
    temperature: float = 1.0
    """Sampling temperature of the learner's replies"""


@dataclass
class DataArgs:
    """The rows a trainer reads."""
    data: str = "runs/data"
    """Dataset folder (save_to_disk with a train split, as socialgym export writes) or a JSONL file"""
    max_examples: int = 2000
    """Rows used (0 = all; else a seeded sample)"""
    max_length: int = 0
    """Tokens per row; 0 = what the longest row needs, at most --max_length_cap. A longer row is
    shortened on the prompt side as the policy trims its context (oldest history lines first,
    head and current status/actions kept), never in the
    completion; a row that cannot fit is named in the log and left out"""
    max_length_cap: int = 2048
    """Memory cap on the length --max_length 0 chooses (the activation memory grows with it)"""


@dataclass
class EvalArgs:
    """The held-out evaluation before and after training."""
    eval_before: bool = True
    """Evaluate the base model first (--steps 0: only that)"""


@dataclass
class PlayArgs(EvalArgs):
    """A learner seat playing a game: the view it reads, its reply budget, the evaluation games."""
    game: str = "rock_paper_scissors"
    """Game id (socialgym games lists them)"""
    prompt: str = "turns"
    """The learner's view: turns (the LLM policy's own prompts: what a rated adapter reads), or the
    env-text layouts no policy plays: full (observation text) / compact (~half the tokens)"""
    policy_options: str = ""
    """With --prompt turns: LLM options of the spec that will rate the adapter, e.g. 'context=2048'
    (they set its trimming budget)"""
    reply_prefix: str = ""
    """full / compact: forced start of every reply, e.g. '{"action_type": "' (never in the loss); turns
    prefills what the policy's backend does (the legal replies' common prefix)"""
    max_new_tokens: int = 24
    """Reply budget of the learner (tokens)"""
    max_turns: int = 32
    """Learner decisions per episode before it is cut"""
    eval_episodes: int = 100
    """Held-out seeded episodes of each evaluation matchup"""


@dataclass
class EncoderArgs(LoraRankArgs, ThreadArgs):
    """A text encoder with a LoRA adapter read over game logs (the detectors)."""
    logs: str = "runs/detect_lm/logs"
    """A log file or a folder of them"""
    base: str = "minilm"
    """Minilm | smollm2 | a local HF model folder"""
    max_length: int = 128
    """Tokens; the transcript is truncated from the left (oldest lines go)"""
