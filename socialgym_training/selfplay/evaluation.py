"""How good the checkpoints are: the exploitability of each (poker, exact through the OpenSpiel
bridge), the final checkpoint before / after against the heuristic and the base model (paired by
seed), and a closing tournament of every checkpoint and the heuristic as log records."""
from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Optional, Sequence

import socialgym_env
from socialgym_agents.llm.scoring import score_replies
from socialgym_agents.selfplay import CURRENT, CheckpointPool, seat_assignment
from socialgym_env.atomic import atomic_file
from socialgym_training.selfplay.config import Config, game_kwargs, learner_teams
from socialgym_training.selfplay.decisions import SeatChat, candidates, make_decider
from socialgym_training.selfplay.rollout import play, seat_reward, seat_roles
from socialgym_training.selfplay.trainer import LoraSwap


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
