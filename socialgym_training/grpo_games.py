"""Multi-turn RLVR: GRPO with LoRA over whole game episodes, through TRL's ``rollout_func``.

    python socialgym_training/grpo_games.py --game rock_paper_scissors --seat player_0 \\
        --opponents scripted:constant:rock --rounds 3 --steps 20 --out runs/grpo_rps

One training example is one episode spec (game, config, seed, learner seat or role, fixed
opponents). TRL's sampler repeats each example ``num_generations`` times in a row, so a GRPO
group is ``num_generations`` episodes of the same game, seed and seat against the same
opponents (scripted, or a frozen model such as ``smollm2``), differing only in the learner's
sampled replies: advantages compare like with like. The rollout function
(:mod:`socialgym_training.multiturn`) plays all episodes of a batch together (opponents batched per tick
by :class:`socialgym_agents.single_agent.SingleAgentVecEnv`) and returns each episode as one sequence
whose ``env_mask`` marks the learner's reply tokens: TRL takes the loss on those only, across
every turn. Reward: the terminal outcome (+1 / 0 / -1) minus ``invalid_penalty`` per invalid
learner action.

Prompts (``--prompt``): ``turns`` (the default) builds every prompt with the LLM policy's own
code (:class:`socialgym_training.multiturn.layouts.PolicyLayout`: the Appendix-E first prompt, the turn messages,
trimming and the reply prefix the policy prefills), so the adapter is trained on the tokens it
reads when rated as ``metrics.json``'s ``rate_as`` spec (``socialgym tournament --agents
"<rate_as>,..."``); ``--policy_options`` gives that spec's other options (``context=``,
``max_retries=``: they set the trimming budget). ``full`` (the env's observation text) and
``compact`` (:func:`socialgym_training.multiturn.layouts.compact_first_text`, a short first view) are env-text
layouts that no policy plays: an adapter trained on them reads other tokens when rated.

Writes to ``--out``:

| file | holds |
|------|-------|
| ``adapter/`` | the LoRA adapter |
| ``reward_curve.csv`` / ``.png`` | per step: mean episode reward (TRL's log) |
| ``rollouts.csv`` | per step and learner role: mean outcome reward, episodes, invalid actions, learner/env token counts |
| ``mask_example.json`` | one episode of the first step as (text, in_loss) spans: what the loss sees |
| ``metrics.json`` | config, win rate over ``eval_episodes`` seeded episodes before/after with 95% Wilson intervals, timing |

``--env_server URL`` plays every episode (training rollouts and evaluation) through an
OpenEnv-protocol env server (``socialgym serve-env``; ``--env_server local`` starts one
in-process on 127.0.0.1): one WebSocket session per episode of a batch, the learner's seat only,
the opponents played server-side (``socialgym_agents.serve.client.RemoteVecEnv``).

Evaluation plays held-out seeds (``seed + 10_000`` on) with the same sampling temperature as
training, so the win rate is the rate of the policy that was trained.
"""
from __future__ import annotations

import contextlib
import csv
import functools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from socialgym_training.configs import LoraArgs, ModelArgs, PlayArgs, RLArgs, RunArgs
from socialgym_env.atomic import append_csv_rows, atomic_dir, atomic_file, atomic_write_text
from socialgym_training.multiturn.episode import episode_specs, role_summary, rollout_output
from socialgym_training.multiturn.generation import hf_generate_fn, vllm_generate_fn
from socialgym_training.multiturn.layouts import make_layout, policy_options
from socialgym_training.multiturn.rollout import play_episodes


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, RLArgs, PlayArgs):
    seat: str = "player_0"
    """A seat id, index or role (e.g. "werewolf")"""
    opponents: str = "scripted:constant:rock"
    """Comma-separated specs, one per other seat or one for all"""
    rounds: int = 3
    """Game config "rounds" (0 = the game's default)"""
    max_steps_per_episode: int = 0
    """Engine turn cap (0 = the game's own)"""
    episodes_per_step: int = 2
    """Distinct seeds per step"""
    num_generations: int = 6
    """Episodes per seed (one GRPO group)"""
    constrained: bool = True
    """Learner replies sampled under the grammar of its legal replies"""
    invalid_penalty: float = 0.0
    """Subtracted per invalid learner action"""
    eval_batch: int = 25
    """Episodes per generation batch (and per Ray shard)"""
    eval_actors: int = 0
    """> 0: evaluate on that many Ray actors (local instance)"""
    use_vllm: bool = False
    """Generate the learner's replies with TRL's vLLM engine (GPU; docs/training/gpu.md)"""
    vllm_mode: str = "server"
    """TRL's vLLM mode: server (trl vllm-serve on another GPU) or colocate"""
    env_server: str = ""
    """OpenEnv URL of a `socialgym serve-env` that plays every episode (training and evaluation);
    "local" starts one in-process"""
    # defaults of this script (the options are documented in socialgym_training.configs)
    out: str = "runs/grpo_games"
    learning_rate: float = 2e-4

def game_config(config: Config) -> dict:
    out = {}
    if config.rounds:
        out["rounds"] = config.rounds
    if config.max_steps_per_episode:
        out["max_steps"] = config.max_steps_per_episode
    return out


def check_config(config: Config) -> None:
    """Bad settings as one line and exit 2 before any model loads: the game, the seat, the
    opponents' specs, the prompt style, and vLLM's constraint (a JSON schema per reply, which
    cannot continue a forced reply prefix)."""
    from socialgym_training.common import fail
    if config.prompt not in ("turns", "full", "compact"):
        fail(f"--prompt must be turns, full or compact, got {config.prompt!r}")
    if config.num_generations < 2:      # GRPO's advantage is a reward's distance from its group's mean
        fail(f"--num_generations must be at least 2 (a GRPO group), got {config.num_generations}")
    for name in ("steps", "episodes_per_step", "max_new_tokens"):
        if getattr(config, name) < 1:
            fail(f"--{name} must be at least 1, got {getattr(config, name)}")
    _check_layout(config)
    _check_vllm(config)
    _check_game(config)


def _check_layout(config: Config) -> None:
    """The prompt layout's options: a reply prefix for the env-text layouts only, the policy's
    options for its own layout only."""
    from socialgym_training.common import fail
    if config.prompt == "turns" and config.reply_prefix:
        fail("--prompt turns takes the reply prefix the policy prefills; --reply_prefix is for full / compact")
    if config.env_server and (config.eval_actors or config.prompt != "full"):
        fail("--env_server plays the full prompt in process: drop --eval_actors, add --prompt full")
    if config.prompt != "turns" and config.policy_options:
        fail("--policy_options sets the policy's layout: it needs --prompt turns")
    try:
        policy_options(config.max_new_tokens, config.constrained, config.policy_options)
    except ValueError as err:
        fail(str(err))


def _check_vllm(config: Config) -> None:
    from socialgym_training.common import fail
    if not config.use_vllm:
        return
    if config.vllm_mode not in ("server", "colocate"):
        fail(f"--vllm_mode must be server or colocate, got {config.vllm_mode!r}")
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    if config.vllm_mode == "server" and processes > 1:
        # TRL creates the vLLM client on the main process only, and each learner turn is its own
        # request (per schema, per process): the other processes would have no client
        fail(f"--use_vllm --vllm_mode server runs in one process ({processes} launched): TRL gives only the "
             "main process a vLLM client; launch one process, or use --vllm_mode colocate")
    if config.constrained and config.reply_prefix:
        fail("--use_vllm with --constrained takes no --reply_prefix (vLLM's schema constrains whole replies)")


def _check_game(config: Config) -> None:
    """The game, its config, the seat and the opponents' specs, by building the env once."""
    from socialgym_agents.registry import check_spec
    from socialgym_agents.single_agent import make_single_agent_env
    from socialgym_training.common import fail
    try:
        for spec in config.opponents.split(","):
            check_spec(spec)
        make_single_agent_env(config.game, config.seat, ["scripted:random"], **game_config(config)).reset(
            seed=config.seed)
    except (KeyError, ValueError) as err:         # unknown game / seat / spec / config key
        fail(str(err).strip("'\""))


def vllm_args(config: Config) -> dict:
    """GRPOConfig's vLLM settings, with TRL's importance-sampling correction on (its default).

    The correction multiplies each token's loss by exp(log pi_trainer(y) - log p_vLLM(y)) to
    undo the gap between the vLLM sampler and the trained weights. Under a grammar mask vLLM's
    log-probability (TRL asks for ``processed_logprobs``) is of the masked, renormalised
    distribution, q(y) = pi(y) / Z, Z the policy's mass on the tokens the grammar allows there,
    while the trainer's is the unconstrained pi(y): the ratio would be Z <= 1 even with the
    weights in sync, down-weighting exactly the tokens where the model still puts mass on
    illegal ones. The like-for-like ratio, q_trainer(y) / q_vLLM(y), needs Z at every position
    under the same mask: a second forward pass, and a token mask equal to the one vLLM's
    grammar backend applied (its JSON schemas admit whitespace and tokenizations that our
    guide does not), which this script does not have. So the rollout marks each constrained
    reply's tokens as ones vLLM could not score (log-probability None,
    :func:`socialgym_training.multiturn.generation.vllm_generate_fn`); TRL 1.16 reads those as NaN, gives
    them ratio 1 (the weights are synced before every rollout, so the sampler is the policy up
    to the mask) and leaves them out of its divergence metrics and off-policy mask; the tokens
    of unconstrained replies (free text after a reply prefix, or ``--constrained false``) keep
    the full correction, in constrained runs too."""
    return {"use_vllm": config.use_vllm, "vllm_mode": config.vllm_mode, "vllm_importance_sampling_correction": True}


def training_dataset(config: Config, n_rows: int):
    from datasets import Dataset
    specs = episode_specs(config.game, config.seat, config.opponents.split(","),
                          range(config.seed, config.seed + n_rows), game_config(config))
    return Dataset.from_list([{"prompt": spec.prompt()} for spec in specs])


def episode_reward(completions, episode_reward, **kwargs) -> list:
    """The shaped terminal reward computed during the rollout (TRL forwards it)."""
    return [float(r) for r in episode_reward]


class RolloutLog:
    """Per step and role: mean outcome reward, invalid actions, tokens in and out of the loss."""

    def __init__(self, out: Path):
        self.path = out / "rollouts.csv"
        self.mask_path = out / "mask_example.json"
        self.mask_written = False
        out.mkdir(parents=True, exist_ok=True)
        with atomic_file(self.path, "w", newline="") as handle:
            csv.writer(handle).writerow(["step", "role", "mean_outcome_reward", "episodes", "invalid_actions",
                                         "learner_tokens", "env_tokens"])

    def add(self, step: int, episodes, tokenizer) -> None:
        rows = []
        for role, (mean, count) in role_summary(episodes).items():
            mine = [e for e in episodes if (e.role or "?") == role]
            rows.append([step, role, round(mean, 4), count, sum(e.invalid_actions for e in mine),
                         sum(sum(e.env_mask) for e in mine), sum(len(e.env_mask) - sum(e.env_mask) for e in mine)])
        append_csv_rows(self.path, rows)      # one write per step: a killed run leaves whole steps
        if not self.mask_written and episodes:       # the first episode of the run
            atomic_write_text(self.mask_path, json.dumps(mask_spans(episodes[0], tokenizer), indent=1) + "\n")
            self.mask_written = True


def mask_spans(episode, tokenizer) -> list:
    """The episode as consecutive (text, in_loss) spans: prompt (never in the loss), then the
    completion split where the env mask changes."""
    spans = [{"text": tokenizer.decode(episode.prompt_ids), "in_loss": False}]
    start = 0
    for i in range(1, len(episode.env_mask) + 1):
        if i == len(episode.env_mask) or episode.env_mask[i] != episode.env_mask[start]:
            spans.append({"text": tokenizer.decode(episode.completion_ids[start:i]),
                          "in_loss": bool(episode.env_mask[start])})
            start = i
    return spans


def layout_of(config: Config, tokenizer, model):
    """The policy's layout (``--prompt turns``), else None."""
    return make_layout(config.prompt, tokenizer, model,
                       policy_options(config.max_new_tokens, config.constrained, config.policy_options))


def make_rollout_func(config: Config, tokenizer, log: RolloutLog, pool=None, make_vec=None, layout=None):
    """TRL ``rollout_func(prompts, trainer)``: ``prompts`` is the per-process batch, each episode
    spec already repeated ``num_generations`` times (TRL's RepeatSampler); one episode each."""
    from socialgym_training.multiturn.episode import EpisodeSpec

    def rollout(prompts, trainer):
        specs = [EpisodeSpec.from_prompt(p) for p in prompts]
        if config.use_vllm:
            generate = vllm_generate_fn(trainer, constrained=config.constrained, tokenizer=tokenizer,
                                        reply_prefix=layout.reply_prefix if layout else None)
        else:
            model = trainer.accelerator.unwrap_model(trainer.model)
            generate = hf_generate_fn(model, tokenizer, config.max_new_tokens, config.temperature,
                                      seed=config.seed * 1_000_003 + trainer.state.global_step,
                                      constrained=config.constrained,
                                      reply_prefix=layout.reply_prefix if layout else config.reply_prefix)
        episodes = play_episodes(specs, generate, tokenizer, pool=pool, max_turns=config.max_turns,
                                 prompt=config.prompt, reply_prefix=config.reply_prefix, make_vec=make_vec,
                                 layout=layout)
        log.add(trainer.state.global_step, episodes, tokenizer)
        return rollout_output(episodes, config.invalid_penalty)

    return rollout


def evaluate(model, tokenizer, config: Config, pool=None, adapter=None, make_vec=None, layout=None) -> dict:
    """Win / draw / loss rates over ``eval_episodes`` held-out seeds, with 95% intervals. Shards of
    ``eval_batch`` episodes; with ``eval_actors`` they run on Ray actors that load the base model
    plus ``adapter`` (same sampling seeds per shard, so the same episodes as in process)."""
    from socialgym_training.common import rate_with_interval
    specs = episode_specs(config.game, config.seat, config.opponents.split(","),
                          range(config.seed + 10_000, config.seed + 10_000 + config.eval_episodes),
                          game_config(config))
    if config.eval_actors:
        from socialgym_training.ray_rollouts import ray_play_episodes
        episodes = ray_play_episodes(specs, config.model, adapter, config.eval_actors, config.eval_batch,
                                     config.max_new_tokens, config.temperature, seed=config.seed + 777,
                                     prompt=config.prompt, reply_prefix=config.reply_prefix,
                                     constrained=config.constrained, options=layout.options if layout else "")
    else:
        episodes = []
        for shard, start in enumerate(range(0, len(specs), config.eval_batch)):
            generate = hf_generate_fn(model, tokenizer, config.max_new_tokens, config.temperature,
                                      seed=config.seed + 777 + shard, constrained=config.constrained,
                                      reply_prefix=layout.reply_prefix if layout else config.reply_prefix)
            episodes += play_episodes(specs[start:start + config.eval_batch], generate, tokenizer, pool=pool,
                                      max_turns=config.max_turns, prompt=config.prompt,
                                      reply_prefix=config.reply_prefix, make_vec=make_vec, layout=layout)
    n = len(episodes)
    return {"win": rate_with_interval(sum(e.reward > 0 for e in episodes), n),
            "draw": rate_with_interval(sum(e.reward == 0 for e in episodes), n),
            "loss": rate_with_interval(sum(e.reward < 0 for e in episodes), n),
            "mean_reward": sum(e.reward for e in episodes) / max(n, 1),
            "invalid_actions_per_episode": sum(e.invalid_actions for e in episodes) / max(n, 1),
            "per_role": {role: {"mean_reward": mean, "episodes": count}
                         for role, (mean, count) in role_summary(episodes).items()},
            "first_actions": [e.actions[:3] for e in episodes[:3]]}


@contextlib.contextmanager
def env_server_vec(config: Config):
    """The vector-env factory of ``--env_server`` (None: local envs) and, for ``local``, an
    in-process server on 127.0.0.1 for the length of the run."""
    if not config.env_server:
        yield None
        return
    from socialgym_agents.serve.client import RemoteVecEnv
    with contextlib.ExitStack() as stack:
        url = config.env_server
        if url == "local":
            from socialgym_agents.serve.app import BackgroundServer
            from socialgym_agents.serve.openenv_app import create_openenv_app
            # The run owns this server: no idle expiry (a slow learner may think minutes per move).
            url = stack.enter_context(BackgroundServer(create_openenv_app(idle_timeout_s=None)))
        print(f"episodes through the env server at {url}")
        yield functools.partial(RemoteVecEnv, url)


def main(argv=None, preloaded=None) -> dict:
    """Run the script; ``preloaded`` = (model, tokenizer) skips loading (tests reuse one load)."""
    from socialgym_training.common import parse_config
    config = parse_config(Config, argv)
    check_config(config)
    with env_server_vec(config) as make_vec:
        return run(config, preloaded, make_vec)


def run(config: Config, preloaded=None, make_vec=None) -> dict:
    from trl import GRPOTrainer

    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import finish_run, grpo_args, load_base
    out = Path(config.out)
    started = time.time()
    model, tokenizer = preloaded or load_base(config.model, config.threads, config.device)
    pool = PolicyPool(seed=config.seed)          # opponents, built once (a frozen model loads once)
    layout = layout_of(config, tokenizer, model)

    # 1. the base policy's win rate
    before = evaluate(model, tokenizer, config, pool, make_vec=make_vec, layout=layout) if config.eval_before else None
    if before:
        print("before:", json.dumps({k: before[k] for k in ("win", "mean_reward")}))
    if config.steps == 0:                          # evaluation only
        return finish_run(out, config, before, started=started)

    # 2. GRPO over whole episodes
    log = RolloutLog(out)
    args = grpo_args(out, config.device, config.progress, max_steps=config.steps,
                     learning_rate=config.learning_rate, seed=config.seed,
                     per_device_train_batch_size=config.episodes_per_step * config.num_generations,
                     num_generations=config.num_generations, temperature=config.temperature,
                     max_completion_length=config.max_new_tokens,     # per reply (vLLM's bound)
                     **vllm_args(config))
    trainer = GRPOTrainer(model=model, reward_funcs=[episode_reward], args=args,
                          train_dataset=training_dataset(config, config.steps * config.episodes_per_step),
                          processing_class=tokenizer, peft_config=config.peft_config(),
                          rollout_func=make_rollout_func(config, tokenizer, log, pool, make_vec, layout))
    trained_at = time.time()
    trainer.train()
    train_seconds = time.time() - trained_at

    # 3. the trained policy's win rate; adapter, curves, metrics
    with atomic_dir(out / "adapter", marker="adapter_config.json") as folder:
        trainer.model.save_pretrained(folder)
    after = evaluate(trainer.model, tokenizer, config, pool, adapter=str(out / "adapter"), make_vec=make_vec,
                     layout=layout)
    print("after:", json.dumps({k: after[k] for k in ("win", "mean_reward")}))
    return finish_run(out, config, before, after, trainer, started, train_seconds,
                      ["reward", "rewards/episode_reward/mean"],
                      f"GRPO {config.game} as {config.seat} vs {config.opponents}",
                      extra={"rate_as": rating_spec(config, layout)} if layout else None)


def rating_spec(config: Config, layout) -> str:
    """The agent spec that plays the trained adapter on the prompts it was trained on."""
    base = "smollm2" if config.model == "smollm2" else "hf:" + config.model.removeprefix("hf:")
    return f"{base}?adapter={Path(config.out) / 'adapter'}&temperature={config.temperature}&{layout.options}"


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.grpo_games")
