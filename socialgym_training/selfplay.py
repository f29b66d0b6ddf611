"""Self-play RL for a LoRA policy: one model plays every seat, against itself and its past checkpoints.

    PYTHONPATH=$PWD python socialgym_training/selfplay.py --game kuhn_poker --steps 20 --out runs/selfplay_kuhn
    python -m socialgym_training.selfplay --help          # every Config field with its help line

SPIRAL-style (Liu et al., 2025), through TRL's ``GRPOTrainer`` with a ``rollout_func``:

1. **Rollouts.** Each optimiser step plays ``episodes_per_step`` episodes of any registered
   game (N players, teams or not), in groups of ``group_size`` that replay one seed (so one
   role deal) and one seating. Before each group the pool
   (:class:`socialgym_agents.selfplay.CheckpointPool`) picks the opponent: the current policy
   itself with probability ``self_play``, else a frozen one: one of ``fixed_opponents``
   (scripted baselines) with probability ``fixed_share``, or a past checkpoint drawn uniformly
   from the last ``pool_size`` ones (one is saved every ``snapshot_every`` steps; the pool
   starts with the base model, step 0). Against itself the policy plays every seat; against an
   opponent one seat (games without teams) or one team (team games; only ``train_teams`` if
   set), alternating by episode (:func:`socialgym_agents.selfplay.seat_assignment`). A
   checkpoint is a copy of the LoRA weights: its moves are made by the same model with those
   weights loaded, then the current ones are put back (:class:`LoraSwap`). Every decision due
   in every episode (all seats of a simultaneous phase too) is decided in one batch per model
   state.
2. **Rows.** Every seat the current policy played is one training row: that seat's own chat
   as one token sequence whose ``env_mask`` is 1 on its reply tokens only (:class:`SeatChat`),
   so the loss covers the learner's own tokens and every seat's turns are training data. With
   ``prompt=turns`` (the default) the chat is the LLM policy's own (:class:`socialgym_training.multiturn.PolicyLayout`:
   the prompts a tournament gives a checkpoint rated as ``metrics.json``'s ``rate_as`` spec;
   the row stops where the policy restarts its chat); ``compact`` / ``full`` are env-text
   layouts that no policy plays. Rows past ``rows_per_step`` are dropped (the last episode may fill the
   step only partly), rows of frozen seats (opponents, and the policy's own seats on teams
   outside ``train_teams``) are never kept.
3. **Advantages** (``advantage``). ``rae``: role-conditioned advantage estimation, a row's
   advantage is its reward minus the EMA baseline of its (game, role) -- role = the seat in
   games without roles, the hidden role in role games -- taken before the step, then updated
   with rate ``baseline_rate`` (:class:`socialgym_agents.selfplay.RoleBaseline`). ``turn``: each
   reply gets its own, the return that follows that turn minus the batch's mean at that turn
   position (within the deal when ``group_size`` > 1), over the role's (or agent's) standard
   deviation (:func:`socialgym_agents.selfplay.turn_advantages`), as per-token advantages.
   Tokens with zero advantage are filtered out: out of TRL's loss mask and out of the token
   count the loss divides by (:func:`apply_advantages`). TRL's own group-normalised advantages
   are replaced by these (:class:`SelfPlayGRPOTrainer`); the loss, clipping and optimiser are
   TRL's.
4. **Decisions** are made in scoring mode: the log-probability of every legal reply (the finite
   list of the grammar of legal replies after the prefix: with ``prompt=turns`` their common
   prefix and the reply text alone, as the policy's ``mode=score`` scores them; else after
   ``reply_prefix`` and with the end-of-turn token) is computed and the reply is drawn from
   ``softmax(log p / temperature)``. That is the
   distribution the OpenSpiel bridge measures (:func:`policy_fn`), so the exploitability
   reported is the trained policy's. Phases without a finite list (free talk) are generated
   under the grammar instead (:func:`socialgym_training.multiturn.hf_generate_fn`).

Reward (``reward``): ``score`` (chips in poker: what exploitability is measured in) or
``outcome`` (+1 / 0 / -1); ``auto`` takes the score in games ranked by score, else the outcome.

Resumable (``save_every``, ``piece_steps``, ``resume``): ``trainer/checkpoint-<N>`` holds TRL's
state and this script's (:data:`RESUME_STATE`); a run can be made in pieces that add up to the
unbroken run step for step.

Writes to ``--out``: ``adapter/`` (the final LoRA), ``checkpoints/step<N>/`` (the pool's
adapters, rated together at the end), ``rollouts.csv`` (per step and role: rows, mean reward,
baseline, rows kept), ``mask_example.json`` (one row as (text, in_loss) spans),
``metrics.json`` (config, loss per step, exploitability per checkpoint for poker, before/after
evaluation with 95% intervals and the before/after difference paired by seed
(:func:`paired_before_after`), ``rate_as``; written as each part is measured),
``evaluation.jsonl`` (the evaluation's episodes: step0, the final checkpoint and the heuristic
in a round robin), ``tournament.jsonl`` (every checkpoint and the heuristic against each
other, as log records: ``socialgym leaderboard <out>/tournament.jsonl`` rates them
together, an Elo curve over training steps). ``--evaluate <run>`` rates an earlier run's saved
checkpoints the same way without training (a run stopped early keeps its ``checkpoints/``).
"""
from __future__ import annotations

import csv
import json
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from socialgym_training.configs import LoraArgs, ModelArgs, PlayArgs, RLArgs, RunArgs
import socialgym_env
from socialgym_agents.llm.scoring import SeatCaches, score_replies
from socialgym_agents.selfplay import (CURRENT, CheckpointPool, RoleBaseline, keep_nonzero, role_key, seat_assignment,
                                       turn_advantages)
from socialgym_training.multiturn import (ChatAssembler, Episode, _EnvTextSeat, compact_first_text, compact_news_text,
                                make_layout, news_text, policy_options)
from socialgym_env.atomic import append_csv_rows, atomic_dir, atomic_file, atomic_write_text
from socialgym_env.patterns import is_talk_turn


@dataclass
class Config(RunArgs, ModelArgs, LoraArgs, RLArgs, PlayArgs):
    num_players: int = 0
    """players (0 = the game's default)"""
    game_config: str = ""
    """extra game config as JSON, e.g. '{"dice": 1}'"""
    episodes_per_step: int = 8
    """episodes played per step (at most; stops once the rows are full)"""
    group_size: int = 1
    """episodes per GRPO group: each group replays one seed (so one role deal) and one seating;
    --episodes_per_step is rounded up to whole groups"""
    rows_per_step: int = 12
    """training rows (learner seats) per step: TRL's batch"""
    self_play: float = 0.5
    """probability an episode is against the current policy itself (else a pool checkpoint)"""
    pool_size: int = 4
    """past checkpoints kept in the opponent pool (the base model is the first)"""
    fixed_opponents: str = ""
    """comma-separated frozen opponents that are not checkpoints (policy specs, e.g. scripted:heuristic)"""
    fixed_share: float = 0.5
    """when an episode is not self-play: probability its opponent is one of --fixed_opponents (else a checkpoint)"""
    train_teams: str = ""
    """comma-separated teams whose seats are trained (empty: every team); the policy's seats on
    other teams play but are frozen, and against an opponent the policy takes one of these teams"""
    snapshot_every: int = 5
    """steps between checkpoints added to the pool (and saved for the tournament)"""
    baseline_rate: float = 0.05
    """RAE: per-(game, role) EMA rate, b <- b + rate (R - b)"""
    advantage: str = "rae"
    """rae: every turn of a row gets its reward minus the role's moving average; turn: each turn
    gets the return that follows it, normalised per --turn_norm (MARSHAL-style, docs/selfplay.md)"""
    turn_discount: float = 1.0
    """turn: discount of later rewards in a turn's return"""
    turn_norm: str = "role"
    """turn: normalise per role (the RAE key) or per agent (the seat)"""
    reward: str = "auto"
    """row reward: score (chips), outcome (+1/0/-1) or auto (score if the game ranks by score)"""
    bf16: bool = False
    """bfloat16 autocast for the rollouts' scoring and the training passes (a CPU with native
    bfloat16, e.g. avx512_bf16 or AMX, or a GPU); off: float32, as the runs documented before it"""
    live_episodes: int = 16
    """episodes played in lockstep at a time (rollouts, evaluation); 0: all at once"""
    cache_mb: int = 1536
    """per-seat key/value caches of the scoring passes (MB; a seat's next decision encodes only
    what is new to it); 0: every context encoded whole"""
    talk: str = "free"
    """talk turns (only say/pass offered) of the model's seats: free (generated under the reply
    grammar, in the rows) or pass (silent, no model call, not in the rows; the LLM option talk=pass
    plays a checkpoint so); for opponents that do not read talk"""
    tournament_episodes: int = 40
    """episodes per pair of checkpoints in the closing tournament (0 = none)"""
    save_every: int = 5
    """steps between resumable checkpoints (optimizer, scheduler, RNG, pool, baselines) in
    <out>/trainer/checkpoint-<N>; 0 = none"""
    resume: bool = False
    """continue from the last resumable checkpoint in --out (a fresh start if there is none): the
    same command run again picks up where a stopped piece ended"""
    piece_steps: int = 0
    """end this run after this many steps (saving a resumable checkpoint there; no evaluation),
    a piece that --resume continues; 0 = run to --steps"""
    evaluate: str = ""
    """folder of an earlier run: rate its saved checkpoints (checkpoints/step<N>, the base model as step0) with this config, without training; the results go to --out (--eval_episodes 0: the closing round robin alone)"""
    # defaults of this script (the options are documented in socialgym_training.configs; the
    # game is a two-player or team game, hidden roles allowed)
    game: str = "kuhn_poker"
    out: str = "runs/selfplay"
    learning_rate: float = 1e-4
    lora_r: int = 8
    lora_alpha: int = 16
    reply_prefix: str = '{"action_type": "'
    max_turns: int = 24

# ------------------------------------------------------------------ one seat's chat
class SeatChat:
    """The token sequence one seat's policy reads and its training row (``row``: the first view,
    then its replies and the news before each later decision; ``env_mask`` 1 on its replies).
    ``layout`` (``prompt=turns``): the LLM policy's prompts (:class:`socialgym_training.multiturn.PolicySeat`,
    append-only up to a restart of the policy's chat); else the env-text layouts (``compact`` /
    ``full``) with the fixed ``reply_prefix``."""

    def __init__(self, tokenizer, config: Config, layout=None, key: tuple = ("", ""), seed: Optional[int] = None):
        self.row = Episode(spec=None)
        self.prompt, self.layout = config.prompt, layout
        # per reply: its (start, end) in the row's completion (None once the row has stopped) and
        # the rewards dealt to the seat after it, for turn-level credit
        self.turn_spans: list = []
        self.turn_rewards: list = []
        if layout is not None:
            self.seat = layout.seat(self.row, key, seed)
        else:
            self.seat = _EnvTextSeat(ChatAssembler(tokenizer), tokenizer, config.reply_prefix, self.row)

    def observe(self, env, agent: str, info: Optional[dict] = None) -> tuple:
        """Add the seat's view now (first view or news; ``info`` the one it decides on, default
        ``env.infos[agent]``); return (context ids, reply prefix)."""
        info = env.infos[agent] if info is None else info
        if self.layout is not None:
            return self.seat.prompt(info, env.prompt_parts(agent))
        if not self.row.prompt_ids:
            text = env.observe(agent)["text"] if self.prompt == "full" else \
                compact_first_text(env.prompt_parts(agent), info, env.game_info.name)
        else:
            text = news_text(env.observe(agent)["text"], info) if self.prompt == "full" else compact_news_text(info)
        return self.seat.prompt(text)

    def reply(self, reply_ids: list, text: str, action: str) -> None:
        start = len(self.row.completion_ids)
        self.seat.reply(list(reply_ids), text, action)
        end = len(self.row.completion_ids)
        self.turn_spans.append((start, end) if end > start else None)
        self.turn_rewards.append(0.0)

    def credit(self, reward: float) -> None:
        """A reward dealt to the seat between its turns goes to its last turn."""
        if reward and self.turn_rewards:
            self.turn_rewards[-1] += reward

    def close(self) -> None:
        """Forget the seat's conversation in the layout's policy (an episode's end)."""
        if self.layout is not None:
            self.layout.policy.release(self.seat.key)


def layout_options(config: Config) -> str:
    """The LLM options of the policy that plays a checkpoint as trained: scoring mode at the
    trainer's temperature (with ``adapter=`` added, the tournament spec)."""
    return (policy_options(config.max_new_tokens, True, config.policy_options)
            + f"&mode=score&temperature={config.temperature}" + ("&talk=pass" if config.talk == "pass" else ""))


# ------------------------------------------------------------------ scoring-mode decisions
def candidates(info: dict, reply_prefix: str) -> Optional[list]:
    """The legal replies after ``reply_prefix`` (None if the set is not a finite list)."""
    from socialgym_agents.llm.constraint import reply_grammar
    try:
        finite = reply_grammar(info).finite
    except ValueError:
        return None
    if not finite or not all(c.startswith(reply_prefix) for c in finite):
        return None
    return [c[len(reply_prefix):] for c in finite]


def softmax_draw(scores: list, temperature: float, rng: random.Random) -> int:
    import math
    top = max(scores)
    weights = [math.exp((s - top) / max(temperature, 1e-6)) for s in scores]
    return rng.choices(range(len(scores)), weights=weights)[0]


def make_decider(model, tokenizer, config: Config, rng: random.Random, layout=None):
    """``decide(contexts, infos, prefixes) -> [(reply ids, reply text, action)]`` for one model
    state: scoring mode over the legal list, constrained generation where the list is not
    finite; each reply continues its decision's prefix."""
    import torch
    from socialgym_training.multiturn import hf_generate_fn, reply_to_action
    eos = tokenizer.eos_token_id
    with_eos = layout is None

    seats = SeatCaches(config.cache_mb) if config.cache_mb else None

    def decide(contexts: list, infos: list, prefixes: list, keys: Optional[list] = None) -> list:
        device = "cuda" if next(model.parameters()).is_cuda else "cpu"
        with torch.autocast(device, dtype=torch.bfloat16, enabled=config.bf16):
            return _decide(contexts, infos, prefixes, keys)

    def _decide(contexts: list, infos: list, prefixes: list, keys: Optional[list]) -> list:
        out: list = [None] * len(contexts)
        options = [candidates(info, prefix) for info, prefix in zip(infos, prefixes)]
        finite = [i for i, o in enumerate(options) if o]
        if finite:
            scores = score_replies(model, tokenizer, [contexts[i] for i in finite], [options[i] for i in finite],
                                   with_eos, seats=seats if keys else None,
                                   keys=[keys[i] for i in finite] if keys else None)
            for i, row in zip(finite, scores):
                pick = options[i][softmax_draw(row, config.temperature, rng)]
                ids = tokenizer(pick, add_special_tokens=False)["input_ids"] + ([eos] if with_eos else [])
                text = prefixes[i] + pick
                out[i] = (ids, text, reply_to_action(text, infos[i]))
        free = [i for i, o in enumerate(options) if not o]
        if free:
            generate = hf_generate_fn(model, tokenizer, config.max_new_tokens, config.temperature,
                                      seed=rng.getrandbits(31), constrained=True,
                                      reply_prefix=layout.reply_prefix if layout else config.reply_prefix)
            for i, ids in zip(free, generate([contexts[i] for i in free], [infos[i] for i in free])):
                text = prefixes[i] + tokenizer.decode(ids, skip_special_tokens=True)
                out[i] = (ids, text, reply_to_action(text, infos[i]))
        return out

    decide.forget = seats.clear if seats is not None else (lambda: None)
    return decide


# ------------------------------------------------------------------ checkpoints as LoRA weights
class LoraSwap:
    """Copies of a PEFT model's LoRA weights, and a context that plays with one of them loaded."""

    def __init__(self, model):
        self.model = model

    def snapshot(self) -> dict:
        from peft import get_peft_model_state_dict
        return {k: v.detach().clone() for k, v in get_peft_model_state_dict(self.model).items()}

    @contextmanager
    def loaded(self, weights: Optional[dict]):
        from peft import set_peft_model_state_dict
        if weights is None:
            yield
            return
        current = self.snapshot()
        set_peft_model_state_dict(self.model, weights)
        try:
            yield
        finally:
            set_peft_model_state_dict(self.model, current)


# ------------------------------------------------------------------ playing episodes
def game_kwargs(config: Config) -> dict:
    kwargs = json.loads(config.game_config) if config.game_config else {}
    if config.num_players:
        kwargs["num_players"] = config.num_players
    return kwargs


def seat_roles(env) -> tuple:
    """(teams, has_roles) of the env's seats after reset."""
    info = env.game_info
    return [env.state.team(a) for a in env.possible_agents], bool(info.roles)


def play(episodes: Sequence[tuple], deciders: dict, tokenizer, config: Config, swap=None, pool=None,
         layout=None, first_index: int = 0) -> list:
    """Play ``episodes`` ((seed, {agent: player name}) pairs) in lockstep, ``config.live_episodes``
    at a time (so the seats' scoring caches fit ``cache_mb``); player names are
    :data:`CURRENT`, ``step<N>`` (pool checkpoints, played through ``swap``) or a policy spec of
    :class:`socialgym_agents.runner.PolicyPool` (``scripted:heuristic``). Returns per episode
    ``{"seed", "seats", "env", "chats": {agent: SeatChat}}`` after the end."""
    live = config.live_episodes
    if live and len(episodes) > live:
        return [g for start in range(0, len(episodes), live)
                for g in play(episodes[start:start + live], deciders, tokenizer, config, swap, pool, layout,
                              first_index + start)]
    games = []
    for index, (seed, seats) in enumerate(episodes, start=first_index):
        env = socialgym_env.make(config.game, log_observations=False, **game_kwargs(config))
        env.reset(seed=seed)
        # one episode id per game: two games of one seed (the same deal for two matchups) must not
        # share a scripted policy's per-seat state; its random stream comes from (seed, seat) alone
        # (socialgym_agents.base.BasePolicy.reset), so the two still draw the same numbers
        episode = f"selfplay-{index}-{seed}"
        chats = {a: SeatChat(tokenizer, config, layout, (episode, a), seed) for a in env.possible_agents}
        games.append({"seed": seed, "episode": episode, "seats": seats, "env": env, "chats": chats, "turns": 0,
                      "reset": {}})
    while True:
        pending = _due_decisions(games, config)
        if not pending:
            break
        decided: dict = {}
        for player, items in pending.items():
            if player == CURRENT or player.startswith("step"):
                items = _silent_talk(items, decided) if config.talk == "pass" else items
                if items:
                    _model_decisions(player, items, deciders, swap, pool, decided)
            else:
                _scripted_decisions(deciders["pool"].get(player), items, decided)
        _apply_decided(games, decided)
    getattr(deciders.get("model"), "forget", lambda: None)()      # the seats' scoring caches
    for g in games:
        for chat in g["chats"].values():
            chat.close()
        for key, policy in g["reset"].items():
            if hasattr(policy, "release"):
                policy.release(key)
    return games


def _due_decisions(games: list, config: Config) -> dict:
    """Every decision due now, by player: the one seat to move, or every seat of a simultaneous
    phase (a vote), so all seats of all episodes share one batch per model state."""
    pending: dict = {}
    for g in games:
        env = g["env"]
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            break
        if env.agents and g["turns"] < config.max_turns * len(env.possible_agents):
            for offset, agent in enumerate(env.pending_actors()):
                pending.setdefault(g["seats"][agent], []).append((g, agent, decision_info(env, agent, offset)))
    return pending


def _silent_talk(items: list, decided: dict) -> list:
    """``--talk pass``: the model's talk turns are passed without a call and never reach its chat
    (the next prompt shows them in the history, as the LLM option ``talk=pass`` does); returns
    the other items."""
    rest = []
    for g, a, info in items:
        if is_talk_turn(info):
            decided.setdefault(id(g), []).append((a, "pass"))
        else:
            rest.append((g, a, info))
    return rest


def _model_decisions(player: str, items: list, deciders: dict, swap, pool, decided: dict) -> None:
    """The model's replies for ``items`` (the current weights, or a pool checkpoint's) in one batch."""
    contexts, prefixes = zip(*[g["chats"][a].observe(g["env"], a, info) for g, a, info in items])
    weights = None if player == CURRENT else pool.get(player)
    # a seat's scoring cache is kept from one of its decisions to the next (one weight state per seat)
    keys = [(g["episode"], a, player) for g, a, _ in items]
    with (swap.loaded(weights) if swap is not None else _nothing()):
        decisions = deciders["model"]([list(c) for c in contexts], [info for _, _, info in items], list(prefixes),
                                      keys)
    for (g, a, _), (ids, text, action) in zip(items, decisions):
        g["chats"][a].reply(ids, text, action)
        decided.setdefault(id(g), []).append((a, action))


def _scripted_decisions(policy, items: list, decided: dict) -> None:
    """A frozen policy's (a scripted baseline's) decisions, each seat reset once per episode."""
    from socialgym_agents.base import Request
    for g, a, info in items:
        key = (g["episode"], a)
        if key not in g["reset"]:
            policy.reset(key, g["seed"])
            g["reset"][key] = policy
        decision = policy.act_batch([Request(key, g["env"].observe(a), info, g["env"].prompt_parts(a))])[0]
        decided.setdefault(id(g), []).append((a, decision.action))


def _apply_decided(games: list, decided: dict) -> None:
    """Step each game with its decisions, in the order its phase asks for them."""
    for g in games:
        env = g["env"]
        order = {a: i for i, a in enumerate(env.pending_actors())}
        for agent, action in sorted(decided.get(id(g), []), key=lambda d: order.get(d[0], 0)):
            if not env.agents or env.agent_selection != agent:
                break                # the game ended or moved on mid-phase
            _step(g, action)


def decision_info(env, agent: str, offset: int) -> dict:
    """The info a seat decides on: in a simultaneous phase the 2nd, 3rd... actor's is built
    before the earlier ones have stepped, its ``step`` advanced by its place (what the batched
    tournament runner gives the policy, :mod:`socialgym_agents.batched`)."""
    if not offset:
        return env.infos[agent]
    info = env.decision_view(agent)
    return dict(info, step=info["step"] + offset)


def _step(game: dict, action) -> None:
    """Play one move; rewards the rules deal before the end go to each seat's last turn (the
    terminal reward is added by :func:`collect_rows`, in the ``reward`` config's unit)."""
    env = game["env"]
    env.step(action)
    game["turns"] += 1
    if env.state.result is None:
        for agent, reward in env.rewards.items():
            game["chats"][agent].credit(reward)


@contextmanager
def _nothing():
    yield


def seat_reward(env, agent: str, config: Config) -> float:
    """The row's reward (``reward`` config); 0 for an episode cut before the end."""
    result = env.state.result
    if result is None:
        return 0.0
    use_score = config.reward == "score" or (config.reward == "auto" and env.game_info.rank_by == "score")
    return float(result.scores[agent] if use_score else result.rewards[agent])


def collect_rows(games: list, config: Config, limit: int) -> list:
    """Training rows from played episodes: one per :data:`CURRENT` seat, in episode and seat
    order, at most ``limit``; each row is a :class:`socialgym_training.multiturn.Episode` with ``role``,
    ``learner`` and ``reward`` filled and ``role_key`` attached."""
    rows = []
    for g in games:
        env = g["env"]
        _, has_roles = seat_roles(env)
        for agent in env.possible_agents:
            if g["seats"][agent] != CURRENT or not g["chats"][agent].row.env_mask:
                continue
            if learner_teams(config) and env.state.team(agent) not in learner_teams(config):
                continue
            row = g["chats"][agent].row
            row.learner, row.role = agent, env.state.role(agent)
            row.reward = seat_reward(env, agent, config)
            row.truncated = env.state.result is None
            row.role_key = role_key(config.game, agent, row.role, has_roles)
            chat = g["chats"][agent]
            row.turn_rewards = list(chat.turn_rewards)
            row.turn_rewards[-1] += row.reward
            row.turn_spans = list(chat.turn_spans)
            row.deal = (g["seed"], tuple(sorted(g["seats"].items())))
            rows.append(row)
    return rows[:limit]


def plan_episodes(config: Config, step: int, pool: CheckpointPool, rng: random.Random) -> list:
    """The step's (seed, seating) pairs: opponents drawn from the pool, seats assigned."""
    env = socialgym_env.make(config.game, log_observations=False, **game_kwargs(config))
    plan = []
    for e in range(-(-config.episodes_per_step // config.group_size)):
        seed = config.seed * 1_000_003 + step * 1000 + e
        env.reset(seed=seed)
        teams, _ = seat_roles(env)
        opponent = pool.sample(rng)
        seats = seat_assignment(env.possible_agents, teams, env.game_info.team_game, opponent,
                                step * config.episodes_per_step + e, learner_teams(config))
        plan += [(seed, seats)] * config.group_size
    return plan


def learner_teams(config: Config) -> tuple:
    return tuple(t for t in config.train_teams.split(",") if t)


# ------------------------------------------------------------------ TRL
def make_trainer_class():
    from trl import GRPOTrainer

    class SelfPlayGRPOTrainer(GRPOTrainer):
        """GRPO with the rollout's advantages (RAE or turn-level) instead of group-normalised
        rewards, and the tokens with zero advantage taken out of the loss and of its token count."""

        selfplay_advantages: list = []

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            return apply_advantages(output, self.selfplay_advantages, self.accelerator.gather)

    return SelfPlayGRPOTrainer


def apply_advantages(output: dict, advantages: list, gather=lambda x: x) -> dict:
    """Put the rollout's ``advantages`` (per row: one number for the whole row, or one per
    completion token) into TRL's generation output and filter what has advantage zero.

    The filter goes into ``tool_mask`` (TRL's loss-only mask; ``completion_mask`` is also the
    attention mask, so zeroing it would change what later tokens see) and ``num_items_in_batch``
    is recounted from the masks after it: TRL counts it before this override, and the token-mean
    losses (``dapo``, the default, ``cispo``, ``vespo``) divide by it, so filtered tokens
    would otherwise still dilute the mean."""
    import torch
    completion_mask = output["completion_mask"]
    dtype, device = output["advantages"].dtype, output["advantages"].device
    if all(isinstance(a, (int, float)) for a in advantages):
        values = torch.tensor(advantages, dtype=dtype, device=device)
        keep = (values.abs() > 1e-8).unsqueeze(1).expand_as(completion_mask)
    else:
        values = torch.zeros(completion_mask.shape, dtype=dtype, device=device)
        for i, row in enumerate(advantages):       # completions are padded on the right
            values[i, :len(row)] = torch.tensor(row, dtype=dtype, device=device)
        keep = values.abs() > 1e-8
    loss_mask = output.get("tool_mask", torch.ones_like(completion_mask))
    output["tool_mask"] = loss_mask * keep.to(loss_mask.dtype)
    output["advantages"] = values
    output["num_items_in_batch"] = gather((completion_mask * output["tool_mask"]).sum()).sum()
    return output


def row_advantages(rows: list, config: Config, baseline: RoleBaseline) -> tuple:
    """(advantages for :func:`apply_advantages`, indices of the rows with some nonzero advantage).
    ``rae``: one number per row, its reward minus its role's baseline (then updated). ``turn``:
    per completion token, each reply's turn-level advantage
    (:func:`socialgym_agents.selfplay.turn_advantages` on the rewards after each turn, grouped by
    role or agent), 0 on the env's tokens."""
    if config.advantage == "rae":
        advantages = baseline.advantages_then_update([(r.role_key, r.reward) for r in rows])
        return advantages, set(keep_nonzero(advantages))
    groups = [r.role_key if config.turn_norm == "role" else (config.game, r.learner) for r in rows]
    per_turn = turn_advantages(list(zip(groups, (r.turn_rewards for r in rows))), config.turn_discount,
                               deals=[r.deal for r in rows] if config.group_size > 1 else None)
    advantages = []
    for row, turns in zip(rows, per_turn):
        tokens = [0.0] * len(row.completion_ids)
        for span, value in zip(row.turn_spans, turns):
            if span is not None:
                tokens[span[0]:span[1]] = [value] * (span[1] - span[0])
        advantages.append(tokens)
    return advantages, {i for i, tokens in enumerate(advantages) if keep_nonzero(tokens)}


def row_reward(completions, row_reward, **kwargs) -> list:
    """The rollout's per-row reward (TRL logs it; the advantages come from RAE)."""
    return [float(r) for r in row_reward]


class StepLog:
    """``rollouts.csv``: per step and role key, rows, mean reward, baseline before, rows kept."""

    def __init__(self, out: Path, keep_before: Optional[int] = None):
        """``keep_before``: a resumed run keeps the lines of the steps before it (a stopped piece
        may have logged a step past its checkpoint); else the file starts anew."""
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "rollouts.csv"
        self.mask_path = out / "mask_example.json"
        header = ["step", "role", "rows", "mean_reward", "baseline_before", "kept", "opponents"]
        kept = []
        if keep_before is not None and self.path.is_file():
            with open(self.path, newline="") as handle:
                kept = [line for line in list(csv.reader(handle))[1:] if line and int(line[0]) < keep_before]
        with atomic_file(self.path, "w", newline="") as handle:
            csv.writer(handle).writerows([header] + kept)

    def add(self, step, rows, kept, baseline_before, plan, tokenizer) -> None:
        by_role: dict = {}
        for i, row in enumerate(rows):
            by_role.setdefault(row.role_key, []).append(i)
        opponents = sorted({p for _, seats in plan for p in seats.values() if p != CURRENT}) or [CURRENT]
        # one write per step: a killed run leaves whole steps (a torn last line at worst)
        append_csv_rows(self.path, [[step, key[1], len(idx), round(sum(rows[i].reward for i in idx) / len(idx), 4),
                                     round(baseline_before.get(key, 0.0), 4), sum(i in kept for i in idx),
                                     "+".join(opponents)] for key, idx in sorted(by_role.items())])
        if step == 0 and rows:
            from socialgym_training.grpo_games import mask_spans
            atomic_write_text(self.mask_path, json.dumps(mask_spans(rows[0], tokenizer), indent=1) + "\n")


def make_rollout_func(config: Config, tokenizer, baseline: RoleBaseline, pool: CheckpointPool, log: StepLog,
                      rng: random.Random, policies, layout=None):
    from socialgym_training.multiturn import rollout_output

    def rollout(prompts, trainer):
        step = trainer.state.global_step
        model = trainer.accelerator.unwrap_model(trainer.model)
        swap = LoraSwap(model)
        rows: list = []
        plan_all = []
        while len(rows) < len(prompts):
            plan = plan_episodes(config, step * 100 + len(plan_all), pool, rng)
            plan_all += plan
            games = play(plan, {"model": make_decider(model, tokenizer, config, rng, layout), "pool": policies},
                         tokenizer, config, swap=swap, pool=pool, layout=layout)
            rows += collect_rows(games, config, len(prompts) - len(rows))
        before = dict(baseline.values)
        advantages, kept = row_advantages(rows, config, baseline)
        trainer.selfplay_advantages = advantages
        log.add(step, rows, kept, before, plan_all, tokenizer)
        output = rollout_output(rows)
        output["row_reward"] = [r.reward for r in rows]
        return output

    return rollout


# ------------------------------------------------------------------ evaluation
def policy_fn(model, tokenizer, config: Config, temperature: Optional[float] = None, layout=None):
    """The model's action distribution at a decision, for :mod:`socialgym_agents.openspiel_bridge`: the
    softmax over the legal replies' log-probabilities after the seat's chat so far
    (:func:`_seat_context`). :func:`policy_table` is the same for every state at once."""
    from socialgym_agents.openspiel_bridge import reply_word, softmax
    temp = config.temperature if temperature is None else temperature

    def fn(env, agent):
        info = env.infos[agent]
        context, prefix = _seat_context(env, agent, tokenizer, config, layout)
        options = candidates(info, prefix)
        scores = score_replies(model, tokenizer, [context], [options], layout is None)[0]
        return softmax({reply_word(prefix + o, info): x for o, x in zip(options, scores)}, temp)

    return fn


def _reply_for(info: dict, action: str, reply_prefix: str) -> str:
    from socialgym_agents.openspiel_bridge import reply_word
    for option in candidates(info, reply_prefix) or []:
        if reply_word(reply_prefix + option, info) == action:
            return option
    raise ValueError(f"{action!r} is not one of the legal replies")


def information_states(game_id: str) -> list:
    """(key, env, agent) at every distinct information state of a bridged game, the env replayed
    to it (:func:`socialgym_agents.openspiel_bridge.replay`)."""
    from socialgym_agents import openspiel_bridge as bridge
    states, keys = [], set()
    for state, ranks, words in bridge.walk(game_id):
        if state.is_terminal():
            continue
        env = bridge.replay(game_id, ranks, words)
        agent = env.agent_selection
        key = bridge.info_key(env.infos[agent])
        if key not in keys:
            keys.add(key)
            states.append((key, env, agent))
    return states


def state_scores(model, tokenizer, config: Config, game_id: str, layout=None) -> list:
    """Per information state, ``(key, {word: log-probability})`` of the legal replies after the
    seat's chat there (:func:`_seat_context`), all scored in one batch."""
    from socialgym_agents import openspiel_bridge as bridge
    rows = []
    for key, env, agent in information_states(game_id):
        info = env.infos[agent]
        context, prefix = _seat_context(env, agent, tokenizer, config, layout)
        rows.append((key, info, prefix, candidates(info, prefix), context))
    scores = score_replies(model, tokenizer, [r[4] for r in rows], [r[3] for r in rows], layout is None)
    return [(key, {bridge.reply_word(prefix + o, info): x for o, x in zip(options, row)})
            for (key, info, prefix, options, _), row in zip(rows, scores)]


def policy_table(model, tokenizer, config: Config, game_id: str, layout=None) -> dict:
    """:func:`policy_fn` at every information state of a bridged game, scored in one batch:
    ``{info_key: {word: probability}}`` for :func:`socialgym_agents.openspiel_bridge.from_table`."""
    from socialgym_agents.openspiel_bridge import softmax
    return {key: softmax(scores, config.temperature)
            for key, scores in state_scores(model, tokenizer, config, game_id, layout)}


def _seat_context(env, agent: str, tokenizer, config: Config, layout=None) -> tuple:
    """(context ids, reply prefix) that ``agent`` reads at its decision now, rebuilt by replaying
    the env's turns (its own earlier replies being the legal replies it took)."""
    from socialgym_agents.openspiel_bridge import BRIDGE_SEED
    eos = [tokenizer.eos_token_id] if layout is None else []
    turns = [(t["agent"], t["action"]) for t in env.episode_record()["turns"]]
    replay = socialgym_env.make(env.game_info.id, log_observations=False,
                                **{k: v for k, v in env.config.items() if k in ("deal", "num_players")})
    replay.reset(seed=BRIDGE_SEED)
    chat = SeatChat(tokenizer, config, layout, ("bridge", agent), BRIDGE_SEED)
    for actor, action in turns:
        if actor == agent:
            _, prefix = chat.observe(replay, agent)
            reply = _reply_for(replay.infos[agent], action, prefix)
            chat.reply(tokenizer(reply, add_special_tokens=False)["input_ids"] + eos, prefix + reply, action)
        replay.step(action)
    context, prefix = chat.observe(replay, agent)
    chat.close()
    return list(context), prefix


def matchups(model, tokenizer, config: Config, swap, pool, policies, pairs: list, episodes: int,
             seed_offset: int, rng: random.Random, layout=None, teams_of_mine: Sequence[str] = ()) -> list:
    """Each ``(mine, theirs)`` pair of player names (``step<N>`` checkpoints or policy specs)
    plays ``episodes`` seeded episodes, seats (or teams; only ``teams_of_mine`` for ``mine`` if
    given) alternated; all pairs in one lockstep batch. Per pair: ``mine``'s win rate with its 95% Wilson interval, mean reward, and the
    episodes (with their log records, rosters naming the players)."""
    from socialgym_training.common import rate_with_interval
    env = socialgym_env.make(config.game, log_observations=False, **game_kwargs(config))
    plan, owners = [], []
    for p, (mine, theirs) in enumerate(pairs):
        for e in range(episodes):
            seed = 900_000 + seed_offset + e
            env.reset(seed=seed)
            teams, _ = seat_roles(env)
            seats = seat_assignment(env.possible_agents, teams, env.game_info.team_game, "THEIRS", e, teams_of_mine)
            plan.append((seed, {a: (mine if x == CURRENT else theirs) for a, x in seats.items()}))
            owners.append(p)
    games = play(plan, {"model": make_decider(model, tokenizer, config, rng, layout), "pool": policies},
                 tokenizer, config, swap=swap, pool=pool, layout=layout)
    results = []
    for p, (mine, theirs) in enumerate(pairs):
        wins_by_seed, rewards, records = {}, 0.0, []
        for g, owner in zip(games, owners):
            if owner != p:
                continue
            seat = next(a for a, x in g["seats"].items() if x == mine)
            outcome = g["env"].state.result.rewards[seat] if g["env"].state.result else 0.0
            wins_by_seed[g["seed"]] = int(outcome > 0)
            rewards += seat_reward(g["env"], seat, config)
            records.append(g["env"].episode_record(policies={a: _label(x) for a, x in g["seats"].items()}))
        results.append({"win": rate_with_interval(sum(wins_by_seed.values()), episodes),
                        "mean_reward": round(rewards / max(episodes, 1), 4), "wins_by_seed": wins_by_seed,
                        "records": records})
    return results


def paired_before_after(before: dict, after: dict) -> dict:
    """After minus before, in win-rate points, over the seeds both played ({seed: 1 if a win});
    :func:`matchups` gives two pairs against the same opponent the same seeds and seats, so the
    deals are common: an exact McNemar test and a paired bootstrap interval over seeds
    (:func:`socialgym_agents.paired.paired_delta`)."""
    from socialgym_agents.paired import paired_delta
    common = sorted(set(before) & set(after))
    delta = paired_delta({seed: (after[seed], before[seed], 1) for seed in common})
    return {"points": round(delta.points, 2), "interval": [round(delta.lo, 2), round(delta.hi, 2)],
            "p_value": round(delta.p_value, 4), "pairs": delta.pairs, "test": delta.test,
            "interval_method": delta.interval}


def check_config(config: Config) -> str:
    """One line and exit 2 for a bad option, before anything loads; the policy layout's options."""
    from socialgym_agents.registry import PolicySpecError
    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import fail
    if config.reward not in ("auto", "score", "outcome") or config.prompt not in ("turns", "compact", "full"):
        fail("--reward must be auto, score or outcome and --prompt turns, compact or full")
    if config.advantage not in ("rae", "turn") or config.turn_norm not in ("role", "agent"):
        fail("--advantage must be rae or turn and --turn_norm role or agent")
    if config.talk not in ("free", "pass"):
        fail("--talk must be free or pass")
    if config.cache_mb < 0 or config.live_episodes < 0:
        fail("--cache_mb and --live_episodes must be >= 0 (0: no seat caches, every episode at once)")
    if config.policy_options and config.prompt != "turns":
        fail("--policy_options sets the policy's layout: it needs --prompt turns")
    try:
        options = layout_options(config)
        info = socialgym_env.game_class(config.game).info
    except (KeyError, ValueError) as err:
        fail(str(err).strip("'\""))
    if config.group_size < 1 or not 0.0 <= config.fixed_share <= 1.0:
        fail("--group_size must be at least 1 and --fixed_share a probability")
    if config.train_teams and not info.team_game:
        fail(f"--train_teams needs a team game; {config.game} has no teams")
    try:                   # the evaluation plays the heuristic: a game without one fails now, not after training
        PolicyPool().check("scripted:heuristic", games=[config.game])
    except PolicySpecError as err:
        fail(str(err))
    try:
        for spec in [spec for spec in config.fixed_opponents.split(",") if spec]:
            PolicyPool().check(spec, games=[config.game])
    except PolicySpecError as err:
        fail(str(err))
    return options


def main(argv=None, preloaded=None) -> dict:
    """Run the script; ``preloaded`` = (model, tokenizer) skips loading (tests reuse one load)."""
    from socialgym_agents.runner import PolicyPool
    from socialgym_training.common import grpo_args, load_base, parse_config
    config = parse_config(Config, argv)
    options = check_config(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    rng = random.Random(config.seed)
    model, tokenizer = preloaded or load_base(config.model, config.threads, config.device)
    layout = make_layout(config.prompt, tokenizer, model, options)      # turns: the policy's own prompts
    policies = PolicyPool(seed=config.seed)
    baseline = RoleBaseline(config.baseline_rate)
    if config.evaluate:
        peft_model, saved, final = load_checkpoints(model, config)
        metrics = {"config": {k: getattr(config, k) for k in config.__dataclass_fields__}}
        return evaluate_checkpoints(config, peft_model, tokenizer, saved, final, layout, policies, rng, out, options,
                                    metrics, started)
    fixed = [spec for spec in config.fixed_opponents.split(",") if spec]
    pool = CheckpointPool(config.pool_size, config.self_play, fixed, config.fixed_share)
    resume_from = last_checkpoint(out) if config.resume else None
    resumed = torch_load(resume_from / RESUME_STATE) if resume_from else None
    log = StepLog(out, keep_before=resumed["step"] if resumed else None)

    # 1. TRL trainer with the self-play rollout and RAE advantages
    trainer_cls = make_trainer_class()
    precision = dict(bf16=True) if config.bf16 else {}
    args = grpo_args(out, config.device, config.progress, max_steps=config.steps, **precision,
                     learning_rate=config.learning_rate, seed=config.seed,
                     per_device_train_batch_size=config.rows_per_step, num_generations=config.rows_per_step,
                     temperature=config.temperature, max_completion_length=config.max_new_tokens,
                     scale_rewards="none", beta=0.0,
                     **(dict(save_strategy="steps", save_steps=config.save_every, save_total_limit=2)
                        if config.save_every else {}))
    from datasets import Dataset
    dataset = Dataset.from_list([{"prompt": json.dumps({"game": config.game, "step": i})} for i in range(config.steps)])
    trainer = trainer_cls(model=model, reward_funcs=[row_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=config.peft_config(),
                          rollout_func=make_rollout_func(config, tokenizer, baseline, pool, log, rng, policies,
                                                         layout))
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    swap = LoraSwap(peft_model)
    if resumed:      # the trainer restores the adapter, optimizer, scheduler and torch/numpy/random RNGs
        rng.setstate(resumed["rng"])
        baseline.values = dict(resumed["baseline"])
        pool.entries = list(resumed["pool"])
        saved = dict(resumed["saved"])
    else:
        pool.add(0, swap.snapshot())
        saved = {"step0": pool.get("step0")}

    from transformers import TrainerCallback

    class Snapshots(TrainerCallback):
        """Every ``snapshot_every`` steps: a checkpoint into the pool and to disk."""

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % config.snapshot_every == 0:
                weights = swap.snapshot()
                pool.add(state.global_step, weights)
                saved[f"step{state.global_step}"] = weights
                with atomic_dir(out / "checkpoints" / f"step{state.global_step}", marker="adapter_config.json") as folder:
                    peft_model.save_pretrained(str(folder))
            return control

    class Pieces(TrainerCallback):
        """``--piece_steps``: end the piece with a checkpoint; every checkpoint gets the
        self-play state the trainer does not know (this script's RNG, baselines, pool)."""

        def on_step_end(self, args, state, control, **kwargs):
            if config.piece_steps and state.global_step >= (resumed["step"] if resumed else 0) + config.piece_steps:
                control.should_save = control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kwargs):
            import torch
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            torch.save({"step": state.global_step, "rng": rng.getstate(), "baseline": dict(baseline.values),
                        "pool": list(pool.entries), "saved": dict(saved)}, folder / RESUME_STATE)
            return control

    trainer.add_callback(Snapshots())
    trainer.add_callback(Pieces())
    trained_at = time.time()
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    train_seconds = time.time() - trained_at
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if trainer.state.global_step < config.steps:        # a piece: the next run resumes from its checkpoint
        metrics = {"config": {k: getattr(config, k) for k in config.__dataclass_fields__}, "loss": losses,
                   "stopped_at": trainer.state.global_step, "piece_seconds": round(train_seconds, 1)}
        from socialgym_training.common import write_json
        write_json(out / "metrics.json", metrics)
        return metrics
    with atomic_dir(out / "adapter", marker="adapter_config.json") as folder:
        peft_model.save_pretrained(str(folder))
    final = f"step{config.steps}"
    saved[final] = swap.snapshot()

    metrics = {"config": {k: getattr(config, k) for k in config.__dataclass_fields__},
               "train_seconds": round(train_seconds, 1), "loss": losses}
    return evaluate_checkpoints(config, peft_model, tokenizer, saved, final, layout, policies, rng, out, options,
                                metrics, started)


RESUME_STATE = "selfplay_state.pt"


def last_checkpoint(out: Path) -> Optional[Path]:
    """The newest ``<out>/trainer/checkpoint-<N>`` holding the self-play state (None if none)."""
    folders = [f for f in (out / "trainer").glob("checkpoint-*") if (f / RESUME_STATE).is_file()]
    return max(folders, key=lambda f: int(f.name.split("-")[1]), default=None)


def torch_load(path: Path) -> dict:
    import torch
    return torch.load(path, weights_only=False)      # our own file: tuples, a random.Random state


def load_checkpoints(model, config: Config) -> tuple:
    """``--evaluate``: (PEFT model, {name: LoRA weights}, last name) of an earlier run's
    ``checkpoints/step<N>`` folders, with the base model (a zero LoRA) as ``step0``."""
    from peft import get_peft_model
    from peft.utils import load_peft_weights
    from socialgym_training.common import fail
    folders = sorted(Path(config.evaluate).glob("checkpoints/step*"), key=lambda f: int(f.name[4:]))
    if not folders:
        fail(f"{config.evaluate} holds no checkpoints/step<N> folders (a training run's --out)")
    peft_model = get_peft_model(model, config.peft_config())
    saved = {"step0": LoraSwap(peft_model).snapshot()}
    for folder in folders:
        saved[folder.name] = load_peft_weights(str(folder), device="cpu")
    return peft_model, saved, folders[-1].name


def evaluate_checkpoints(config: Config, peft_model, tokenizer, saved: dict, final: str, layout, policies, rng,
                         out: Path, options: str, metrics: dict, started: float) -> dict:
    """Before (the base = step0) / after (``final``) against the heuristic and each other, the
    exploitability of every checkpoint (poker), the closing tournament; writes metrics.json."""
    from socialgym_training.common import write_json
    swap = LoraSwap(peft_model)
    eval_pool = CheckpointPool(len(saved), 0.0)
    for name, weights in saved.items():
        eval_pool.add(int(name[4:]), weights)
    heuristic = "scripted:heuristic"
    if config.game in ("kuhn_poker", "leduc_poker"):      # first: exact and cheap
        from socialgym_agents import openspiel_bridge as bridge
        metrics["exploitability"] = {}
        for name, weights in saved.items():
            with swap.loaded(weights):
                table = policy_table(peft_model, tokenizer, config, config.game, layout)
            metrics["exploitability"][name] = bridge.exploitability(config.game, bridge.from_table(table))
        write_json(out / "metrics.json", metrics)        # each part as it is measured
    if config.eval_episodes:       # 0: the round robin alone (e.g. --evaluate after an earlier evaluation)
        evaluate_before_after(config, peft_model, tokenizer, swap, eval_pool, policies, final, rng, layout, out,
                              metrics)
    if config.tournament_episodes:
        entrants = list(saved) + [heuristic]
        pairs = [(a, b) for i, a in enumerate(entrants) for b in entrants[i + 1:]]
        results = matchups(peft_model, tokenizer, config, swap, eval_pool, policies, pairs,
                           config.tournament_episodes, 100_000, rng, layout)
        _write_records(out / "tournament.jsonl", results)
        metrics["tournament"] = {"entrants": [_label(n) for n in entrants],
                                 "episodes": sum(len(r["records"]) for r in results),
                                 "log": str(out / "tournament.jsonl")}
    if layout is not None:      # the agent specs that play each checkpoint on the prompts it was trained on
        base = "smollm2" if config.model == "smollm2" else "hf:" + config.model.removeprefix("hf:")
        run = Path(config.evaluate) if config.evaluate else out
        folders = {name: run / ("adapter" if name == final and not config.evaluate else f"checkpoints/{name}")
                   for name in saved}
        metrics["rate_as"] = {name: f"{base}?{options}" if name == "step0" else f"{base}?adapter={folder}&{options}"
                              for name, folder in folders.items()}
    metrics["total_seconds"] = round(time.time() - started, 1)
    write_json(out / "metrics.json", metrics)
    print(json.dumps({k: metrics.get(k) for k in ("evaluation", "exploitability", "tournament")}, indent=1))
    return metrics


def evaluate_before_after(config: Config, peft_model, tokenizer, swap, eval_pool, policies, final: str, rng,
                          layout, out: Path, metrics: dict) -> None:
    """``final`` (and step0, --eval_before) against the heuristic, ``final`` against step0, on
    --eval_episodes held-out seeds as the trained side; evaluation.jsonl and metrics.json."""
    from socialgym_training.common import write_json
    heuristic = "scripted:heuristic"
    pairs = ([("step0", heuristic)] if config.eval_before else []) + [(final, heuristic), (final, "step0")]
    # before / after as the side that was trained (--train_teams), the tournament with teams alternated
    results = matchups(peft_model, tokenizer, config, swap, eval_pool, policies, pairs, config.eval_episodes, 0, rng,
                       layout, learner_teams(config))
    metrics["evaluation"] = {f"{mine} vs {_label(theirs)}": {k: r[k] for k in ("win", "mean_reward")}
                             for (mine, theirs), r in zip(pairs, results)}
    if config.eval_before:         # the same seeds and seats against the heuristic: compare them paired
        metrics["evaluation"][f"{final} minus step0 vs {heuristic}, paired by seed"] = paired_before_after(
            results[0]["wins_by_seed"], results[1]["wins_by_seed"])
    _write_records(out / "evaluation.jsonl", results)     # a round robin of step0, final, heuristic too
    write_json(out / "metrics.json", metrics)


def _write_records(path: Path, results: list) -> None:
    with atomic_file(path, "w") as handle:
        for r in results:
            for record in r["records"]:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _label(player: str) -> str:
    return f"selfplay:{player}" if player.startswith("step") else player


if __name__ == "__main__":
    from socialgym_env.cli_errors import main_of
    main_of(main, "socialgym_training.selfplay")
