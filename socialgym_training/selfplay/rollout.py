"""The step's self-play episodes: planned (opponents from the pool, seats assigned), played in
lockstep with every decision due batched per model state (:func:`play`), and the learner's
seats collected as training rows (:func:`collect_rows`)."""
from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Sequence

import socialgym_env
from socialgym_agents.selfplay import CURRENT, CheckpointPool, role_key, seat_assignment
from socialgym_env.patterns import is_talk_turn
from socialgym_training.selfplay.config import Config, game_kwargs, learner_teams
from socialgym_training.selfplay.decisions import SeatChat


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
