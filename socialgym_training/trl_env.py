"""Every game as a TRL ``environment_factory`` environment (TRL >= 1.16, ``GRPOTrainer``).

    python -m socialgym_training.trl_env --game kuhn_poker --steps 2 --num_generations 2 \\
        --max_completion_length 32 --max_tool_calls 2 --out runs/grpo_env_factory

```python
from trl import GRPOConfig, GRPOTrainer
from socialgym_training.trl_env import environment_class, episode_dataset, tool_calling_tokenizer

Env = environment_class("kuhn_poker", seat=0, opponents="scripted:heuristic")
trainer = GRPOTrainer(model=model, processing_class=tool_calling_tokenizer(tokenizer),
                      environment_factory=Env, train_dataset=episode_dataset("kuhn_poker", 64),
                      args=GRPOConfig(...))
```

TRL's own tool loop plays the episode: one instance per rollout (``Env()``, reused through
``reset``). ``reset(seed=...)`` deals the game for the row's seed and returns the seat's whole
first view (rules, role, status, legal moves), which TRL appends to the row's user message. The
model acts by calling the one tool, ``move``, whose JSON schema is the game's decision grammar:
``action_type`` an enum of the game's action types, ``argument`` the rest of the move
(``bid 3 4``: ``{"action_type": "bid", "argument": "3 4"}``). The tool applies the move to the
seat, plays the other seats (``opponents``: :mod:`socialgym_agents.registry` specs) until the seat
must act again, and returns what the seat sees next (its new messages, what to do now, the
legal moves) or the end of the game. An illegal move changes nothing: the tool says so and
lists the legal moves, and it is counted (``invalid_penalty`` each).

``get_reward`` is the rule-decided outcome of the seat (the game's own reward, +1 win / 0
draw / -1 loss for most games) minus the invalid-move penalty. An episode the model left
unfinished (it stopped calling the tool, or hit TRL's ``max_completion_length`` or
``max_tool_calling_iterations``) has no outcome: it scores ``unfinished_reward`` (default -1, a
forfeit), so stopping early is never better than losing.

The embedded SmolLM2's own chat template renders no tools, so TRL refuses it ("does not
support tool calling"); :func:`tool_calling_tokenizer` gives it :data:`TOOL_CHAT_TEMPLATE`
(ChatML, its own special tokens, tools in the system turn, calls as ``<tool_call>{json}
</tool_call>``, results as ``tool`` turns) and the matching response parser, TRL's own for
that call format. Any model whose template TRL already accepts needs nothing.

``rollout_func`` (:mod:`socialgym_training.grpo_games`) vs this route: docs/training/trl_environment_factory.md.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional, Sequence, Union

import socialgym_env
from socialgym_agents.single_agent import SingleAgentEnv, turn_text
from socialgym_env.errors import InvalidActionError
from socialgym_training.configs import LoraArgs, ModelArgs, RLArgs, RunArgs

SYSTEM_PROMPT = ("You are playing a game against other players. Make every move by calling the `move` tool "
                 "with one of the legal moves; the tool answers with what you see next. Keep calling it "
                 "until it says the game is over.")

# ChatML as SmolLM2 was trained on it (<|im_start|> / <|im_end|>), with tools. Prefix-preserving
# (a turn renders the same whatever follows), as TRL's multi-turn loop requires.
TOOL_CHAT_TEMPLATE = (
    "{%- if messages and messages[0].role == 'system' %}{%- set system = messages[0].content %}"
    "{%- set rest = messages[1:] %}{%- else %}{%- set system = '' %}{%- set rest = messages %}{%- endif %}"
    "{%- if system or tools %}{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}{{- '\\n\\nTools (call one as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>):' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in rest %}"
    "{%- if message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + (message.content or '') }}"
    "{%- for call in message.tool_calls or [] %}{%- set call = call.function if call.function is defined else call %}"
    "{{- '<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' + (call.arguments | tojson) "
    "+ '}\\n</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + (message.content if message.content is string "
    "else message.content | tojson) + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def tool_calling_tokenizer(tokenizer):
    """``tokenizer`` (a ChatML one, such as the embedded SmolLM2's) with :data:`TOOL_CHAT_TEMPLATE`
    and the parser of its ``<tool_call>`` replies, so TRL's ``GRPOTrainer`` takes it with tools."""
    import transformers
    from packaging.version import Version
    from trl.chat_template_utils import qwen3_schema, qwen3_template

    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    # TRL's parser of this call format (Hermes-style JSON in <tool_call> tags, ChatML turns):
    # the new-style response template where transformers reads it (>= 5.13), else the schema.
    if Version(transformers.__version__) >= Version("5.13.0"):
        tokenizer.response_template = qwen3_template
    else:
        tokenizer.response_schema = qwen3_schema
    return tokenizer


def action_types(game: str, **config) -> list[str]:
    """The game's action types: those of every phase's grammar on a fresh deal, for every seat,
    then those of the fixed catalogue the masked view calibrates by playing the game
    (:func:`socialgym_env.masked.masked_layout`); a type that only a rare state opens (a
    venue of one deal) may still be missing, so the tool takes any move and the game decides."""
    from socialgym_env.masked import masked_layout
    env = socialgym_env.make(game, **config)
    env.reset(seed=0)
    found: dict = {}
    for phase in env.game._phases.values():
        for seat in env.possible_agents:
            try:
                found.update(dict.fromkeys(spec.type for spec in phase.grammar(env.state, seat)))
            except Exception:            # a phase whose grammar needs a state this deal has not reached
                continue
    found.update(dict.fromkeys(label.split(" ")[0] for label in masked_layout(game, **config).actions))
    return list(found)


class MoveProgress:
    """What the tool loop has done so far, one line on stderr at most every ``every_s`` seconds:
    TRL's bar moves once per optimiser step, and one step's episodes can take minutes (its bar sat
    at 0/1 for five)."""

    def __init__(self, every_s: float = 10.0, clock=None, write=None):
        import time
        self.clock = clock or time.monotonic
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.every_s = every_s
        self.started = self.said = self.clock()
        self.moves = self.illegal = self.finished = 0

    def note(self, illegal: bool = False, finished: bool = False) -> None:
        self.moves += 1
        self.illegal += illegal
        self.finished += finished
        now = self.clock()
        if now - self.said >= self.every_s:
            self.said = now
            self.write(f"tool loop: {self.moves} moves ({self.illegal} illegal), {self.finished} episodes "
                       f"finished in {now - self.started:.0f} s")


class GameEnvironment:
    """One seat of one game for TRL's tool loop; :func:`environment_class` makes one subclass per
    game (its ``move`` schema is the game's). The class attributes are the episode settings."""

    game: str = ""
    seat: Union[int, str] = 0
    opponents: Sequence[str] = ("scripted:heuristic",)
    config: dict = {}
    invalid_penalty: float = 0.0
    unfinished_reward: float = -1.0
    progress: Optional[MoveProgress] = None     # set by the script: says what the tool loop has done

    def __init__(self):
        # invalid_action="raise": an illegal move leaves the game as it was, so the tool can
        # say so and the model can try again (the opponents still take the game's fallback).
        self.env = SingleAgentEnv(self.game, self.seat, list(self.opponents), invalid_action="raise",
                                  **self.config)
        self.info: dict = {}
        self.invalid_moves = 0
        self.moves = 0

    def reset(self, seed: Optional[int] = None, **row) -> str:
        """Deal the episode of the row's ``seed``; the seat's whole first view (appended to the
        row's user message by TRL)."""
        observation, self.info = self.env.reset(seed=None if seed is None else int(seed))
        self.invalid_moves = 0
        self.moves = 0
        return observation["text"]

    def _move(self, action_type: str, argument: str = "") -> str:
        if self.env.done:
            return "The game is over; no more moves."
        action = f"{action_type} {argument or ''}".strip()      # the engine's plain-text form
        try:
            *_, self.info = self.env.step(action)
        except InvalidActionError as err:
            self.invalid_moves += 1
            if self.progress is not None:
                self.progress.note(illegal=True)
            legal = self.info.get("legal_action_list") or self.info.get("legal_actions")
            return f"Illegal move ({err}); nothing changed. Legal moves: " + "; ".join(map(str, legal))
        self.moves += 1
        if self.progress is not None:
            self.progress.note(finished=self.env.done)
        if self.env.done:
            return f"Game over: {self.info.get('outcome')} (reward {self.info.get('reward')})."
        return turn_text(self.info)

    def get_reward(self) -> float:
        """The seat's rule-decided outcome minus the invalid-move penalty; ``unfinished_reward``
        (a forfeit) when the episode was left unfinished."""
        outcome = self.env.final_reward() if self.env.done else self.unfinished_reward
        return outcome - self.invalid_penalty * self.invalid_moves


def _class_name(game: str) -> str:
    return "".join(part.capitalize() for part in game.split("_")) + "Environment"


def environment_class(game: str, seat: Union[int, str] = 0, opponents: Union[str, Sequence[str]] = "scripted:heuristic",
                      invalid_penalty: float = 0.0, unfinished_reward: float = -1.0, **config) -> type:
    """The ``environment_factory`` of ``game`` played at ``seat`` (index, seat id or role) against
    ``opponents`` (one spec for every other seat, comma-separated, or one per seat); any other
    keyword is a game config key (``rounds=3``). Bad settings raise ValueError now."""
    specs = [s.strip() for s in opponents.split(",")] if isinstance(opponents, str) else list(opponents)
    probe = SingleAgentEnv(game, seat, specs, **config)            # bad game / seat / spec / config: now
    name = probe.game.game_info.name
    probe.close()
    types = tuple(action_types(game, **config))

    def move(self, action_type: str, argument: str = "") -> str:
        return self._move(action_type, argument)

    move.__annotations__ = {"action_type": Literal[types], "argument": str, "return": str}
    move.__doc__ = (f"Make your move in {name}.\n\n"
                    "Args:\n"
                    "    action_type: the kind of move, one of the legal moves' first words\n"
                    "    argument: the rest of the legal move as written (empty when it has none)\n\n"
                    "Returns:\n"
                    "    What you see next: new messages, what to do now and the legal moves, or the end of the game.")
    attributes = {"game": game, "seat": seat, "opponents": tuple(specs), "config": dict(config),
                  "invalid_penalty": float(invalid_penalty), "unfinished_reward": float(unfinished_reward),
                  "move": move, "__module__": __name__}
    return type(_class_name(game), (GameEnvironment,), attributes)


def environment_classes(**settings) -> dict:
    """``{game id: environment class}`` for every registered game (``settings``: as
    :func:`environment_class`'s, applied to each)."""
    return {g["id"]: environment_class(g["id"], **settings) for g in socialgym_env.list_games()}


def episode_dataset(game: str, episodes: int, first_seed: int = 0, system_prompt: str = SYSTEM_PROMPT):
    """TRL's training rows: one per episode seed. The user message is empty: TRL appends
    ``reset``'s text (the seat's first view) to it."""
    from datasets import Dataset
    return Dataset.from_list([{"prompt": [{"role": "system", "content": system_prompt},
                                          {"role": "user", "content": ""}], "seed": seed}
                              for seed in range(first_seed, first_seed + episodes)])


# ---------------------------------------------------------------------- the example script
@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, RLArgs):
    game: str = "kuhn_poker"
    """Game id (socialgym list)"""
    seat: str = "0"
    """The learner's seat: index, seat id or role"""
    opponents: str = "scripted:heuristic"
    """Comma-separated specs, one per other seat or one for all"""
    num_generations: int = 4
    """Episodes per seed (one GRPO group)"""
    episodes_per_step: int = 1
    """Distinct seeds per step"""
    max_completion_length: int = 256
    """Tokens of the whole episode's completion: the model's turns and the tools' answers"""
    max_tool_calls: int = 16
    """TRL's max_tool_calling_iterations: tool rounds per episode"""
    invalid_penalty: float = 0.0
    """Subtracted per illegal move"""
    unfinished_reward: float = -1.0
    """Reward of an episode the model left unfinished (no outcome)"""
    # defaults of this script
    out: str = "runs/grpo_env_factory"
    learning_rate: float = 2e-4


def main(argv=None, preloaded=None) -> dict:
    """GRPO through TRL's own tool loop (``environment_factory``); writes ``adapter/``,
    ``reward_curve.csv`` / ``.png`` and ``metrics.json`` (config, TRL's per-step log, timing) to
    ``--out``. ``preloaded`` = (model, tokenizer) skips loading (tests reuse one load)."""
    import inspect
    import time

    from socialgym_env.atomic import atomic_dir
    from socialgym_training.common import fail, finish_run, grpo_args, load_base, parse_config, print_outputs
    config = parse_config(Config, argv)
    from trl import GRPOTrainer
    if "environment_factory" not in inspect.signature(GRPOTrainer.__init__).parameters:
        import trl
        fail(f"TRL {trl.__version__} has no environment_factory: pip install 'trl>=1.16'")
    if config.num_generations < 2:
        fail(f"--num_generations must be at least 2 (a GRPO group), got {config.num_generations}")
    for name in ("steps", "episodes_per_step", "max_completion_length", "max_tool_calls"):
        if getattr(config, name) < 1:
            fail(f"--{name} must be at least 1, got {getattr(config, name)}")
    seat = int(config.seat) if config.seat.isdigit() else config.seat
    try:
        Env = environment_class(config.game, seat, config.opponents, config.invalid_penalty, config.unfinished_reward)
    except (KeyError, ValueError) as err:              # unknown game / seat / spec
        fail(str(err).strip("'\""))
    if config.progress:
        Env.progress = MoveProgress()
    started = time.time()
    model, tokenizer = preloaded or load_base(config.model, config.threads, config.device)
    args = grpo_args(Path(config.out), config.device, config.progress, max_steps=config.steps,
                     learning_rate=config.learning_rate, seed=config.seed,
                     per_device_train_batch_size=config.episodes_per_step * config.num_generations,
                     num_generations=config.num_generations, temperature=config.temperature,
                     max_completion_length=config.max_completion_length,
                     max_tool_calling_iterations=config.max_tool_calls,
                     # TRL's default (on) turns off the KV cache, and TRL generates with the trained
                     # model: every token would re-read the whole episode so far
                     gradient_checkpointing=False)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tool_calling_tokenizer(tokenizer),
                          environment_factory=Env, peft_config=config.peft_config(),
                          train_dataset=episode_dataset(config.game, config.steps * config.episodes_per_step,
                                                        first_seed=config.seed))
    trained_at = time.time()
    trainer.train()
    train_seconds = time.time() - trained_at
    out = Path(config.out)
    with atomic_dir(out / "adapter", marker="adapter_config.json") as folder:
        trainer.model.save_pretrained(folder)
    steps = [row for row in trainer.state.log_history if "step" in row and "reward" in row]
    metrics = finish_run(out, config, None, None, trainer, started, train_seconds,
                         ["reward", f"rewards/{Env.__name__}/mean"],
                         f"GRPO (environment_factory) {config.game} as seat {config.seat} vs {config.opponents}",
                         extra={"log": steps, "environment": Env.__name__})
    rewards = [row["reward"] for row in steps]
    trend = f"reward {rewards[0]:.2f} at step 1, {rewards[-1]:.2f} at step {len(rewards)}" if rewards else "no reward logged"
    print(f"trained {trainer.state.global_step} steps in {train_seconds:.0f} s; {trend}", flush=True)
    print_outputs(out)
    return metrics


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.trl_env")
