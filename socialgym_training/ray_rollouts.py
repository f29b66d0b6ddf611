"""Episode rollouts of a learner spread over Ray actors (evaluation and data collection at scale).

Each actor loads the learner once (base model plus an optional LoRA adapter, e.g. the
``adapter/`` folder a GRPO run saved) and plays its shards of episode specs with
:func:`socialgym_training.multiturn.rollout.play_episodes` (its opponents batched per tick as usual). The driver
gets back the :class:`socialgym_training.multiturn.episode.Episode` objects in spec order.

    from socialgym_training.ray_rollouts import ray_play_episodes
    episodes = ray_play_episodes(specs, model="smollm2", adapter="runs/grpo_rps/adapter",
                                 num_actors=8, address="auto")      # or a local Ray instance

Training-time rollouts need the *current* weights each step; at scale they go through TRL's
vLLM generation (``--use_vllm``, see docs/training/gpu.md), not through these actors.
"""
from __future__ import annotations

from typing import Optional, Sequence

from socialgym_training.multiturn.episode import EpisodeSpec
from socialgym_training.multiturn.generation import hf_generate_fn
from socialgym_training.multiturn.layouts import make_layout
from socialgym_training.multiturn.rollout import play_episodes


class RolloutActor:
    """One learner copy and its opponents' policy pool; plays shards of specs."""

    def __init__(self, model: str, adapter: Optional[str], max_new_tokens: int, temperature: float,
                 prompt: str = "full", reply_prefix: str = "", threads: int = 1, constrained: bool = False,
                 options: str = ""):
        from socialgym_agents.runner import PolicyPool
        from socialgym_training.common import load_base
        self.model, self.tokenizer = load_base(model, threads)
        if adapter:
            from peft import PeftModel
            self.model = PeftModel.from_pretrained(self.model, adapter).merge_and_unload()
        self.model.eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.prompt = prompt
        self.reply_prefix = reply_prefix
        self.constrained = constrained
        self.layout = make_layout(prompt, self.tokenizer, self.model, options)    # prompt=turns: the policy's
        self.pool = PolicyPool()

    def play(self, prompts: Sequence[str], seed: int) -> list:
        generate = hf_generate_fn(self.model, self.tokenizer, self.max_new_tokens, self.temperature, seed=seed,
                                  constrained=self.constrained,
                                  reply_prefix=self.layout.reply_prefix if self.layout else self.reply_prefix)
        return play_episodes([EpisodeSpec.from_prompt(p) for p in prompts], generate, self.tokenizer, pool=self.pool,
                             prompt=self.prompt, reply_prefix=self.reply_prefix, layout=self.layout)


def _ensure_ray(address: Optional[str], num_cpus: int):
    """Connect to ``address`` or start a local instance whose workers import this checkout; a
    local one listens on 127.0.0.1 only and sends no usage report (why: socialgym_benchmarks'
    ensure_ray)."""
    import os
    from pathlib import Path

    if not address:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    if not ray.is_initialized():
        root = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                 log_to_driver=False, _node_ip_address=None if address else "127.0.0.1",
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    return ray


def ray_play_episodes(specs: Sequence[EpisodeSpec], model: str = "smollm2", adapter: Optional[str] = None,
                      num_actors: int = 2, shard_size: int = 16, max_new_tokens: int = 24,
                      temperature: float = 1.0, seed: int = 0, address: Optional[str] = None,
                      prompt: str = "full", reply_prefix: str = "", constrained: bool = False,
                      options: str = "") -> list:
    """Play ``specs`` on ``num_actors`` Ray actors (a running cluster at ``address``, else a local
    instance); returns one Episode per spec, in order. Shard ``i`` samples with seed ``seed + i``,
    so the result does not depend on which actor ran which shard. ``options``: the policy layout's
    LLM options with ``prompt="turns"`` (:func:`socialgym_training.multiturn.layouts.policy_options`)."""
    ray = _ensure_ray(address, num_actors)
    from ray.util import ActorPool
    actor_cls = ray.remote(num_cpus=1)(RolloutActor)
    actors = [actor_cls.remote(model, adapter, max_new_tokens, temperature, prompt, reply_prefix, 1, constrained,
                               options)
              for _ in range(max(1, num_actors))]
    shards = [[s.prompt() for s in specs[i:i + shard_size]] for i in range(0, len(specs), shard_size)]
    try:
        results = list(ActorPool(actors).map(lambda actor, job: actor.play.remote(job[1], seed + job[0]),
                                             list(enumerate(shards))))
    finally:
        for actor in actors:
            ray.kill(actor)
    return [episode for shard in results for episode in shard]
