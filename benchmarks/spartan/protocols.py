"""The paper's four SPaRTan protocols (section 5, Appendix M) plus plain iterated reflection.

Each returns ``{"rows": [...], ...}``: one row per evaluation condition (see
:meth:`Experiment.evaluate`) tagged with what the protocol varies (round, source, set, student),
which :mod:`benchmarks.spartan.report` turns into tables and figures.

* ``within``: per game, R1..R4 from self-play (round t armed with R(t-1) on every seat); each
  R(t) on the alt side and on the main side vs the unarmed model (Table 1 / Table 10 shape).
  Stop rule: after R(t) is evaluated, iteration stops when no side's win rate under R(t)
  differs significantly (two-proportion test, 5%) from R(t-1)'s (R0 = the baseline); the
  decision is reported, and ``stop_rule = false`` plays every round anyway.
* ``cross`` (1 -> n): each source game's R1 on each other target game (Table 11 / Fig. 3).
* ``multigame`` (n -> 1): a playbook reflected from the combined R0 self-play of a set of games
  (``wcs``, ``wcsu``, ``wcsur``), on held-out and in-distribution targets, next to each target's
  own single-game R1 (Table 12 / Fig. 11).
* ``distill``: the teacher's (``model``) playbook given to each student, who plays the armed
  side against the unarmed teacher; the baseline is the student without it (Table 13).
"""
from __future__ import annotations

from typing import Optional

from .experiment import Experiment
from .playbook import playbook_from_file, save_playbook
from .stats import rate, two_proportion_test

ALPHA = 0.05


def _tag(rows: list[dict], **tags) -> list[dict]:
    return [{**row, **tags} for row in rows]


def _side_rows(rows: list[dict], kind: str, playbook_id: Optional[str]) -> dict:
    return {r["side"]: r for r in rows if r["condition"] == kind and r["playbook_id"] == playbook_id}


def stop_decision(current: dict, previous: dict) -> dict:
    """Compare R(t) with R(t-1) side by side; stop when no side changed significantly."""
    sides = {}
    for side, row in current.items():
        before = previous.get(side)
        if before is None:
            continue
        z, p = two_proportion_test(row["wins"], row["n"], before["wins"], before["n"])
        sides[side] = {"change_points": 100 * (rate(row["wins"], row["n"]).p - rate(before["wins"], before["n"]).p)
                       if row["n"] and before["n"] else None, "p_value": p}
    significant = any(s["p_value"] < ALPHA for s in sides.values())
    return {"sides": sides, "significant_change": significant, "stop": not significant}


def run_reflect(exp: Experiment, name: Optional[str] = None) -> dict:
    """Self-play and iterated reflection only: R1..R<rounds> over the configured games."""
    games = exp.config.games
    name = name or "+".join(games)
    chain = exp.reflect_rounds(games, name, exp.config.rounds)
    return {"rows": [], "playbooks": [p.metadata() for p in chain]}


def run_within(exp: Experiment) -> dict:
    c = exp.config
    rows, stops, playbooks = [], {}, []
    for game in c.games:
        state = {"previous": None, "decisions": [], "stopped_at": None}

        def after_round(t, playbook, game=game, state=state):
            result = exp.evaluate(exp.conditions(game, c.model, c.model, playbook))
            if t == 1:
                rows.extend(_tag([r for r in result if r["condition"] == "baseline"], round=0))
                state["previous"] = _side_rows(result, "baseline", None)
            rows.extend(_tag([r for r in result if r["condition"] != "baseline"], round=t))
            current = _side_rows(result, "playbook", playbook.id)
            decision = {"round": t, **stop_decision(current, state["previous"])}
            state["decisions"].append(decision)
            state["previous"] = current
            if decision["stop"] and state["stopped_at"] is None:
                state["stopped_at"] = t
            return decision["stop"] and c.stop_rule

        chain = exp.reflect_rounds([game], game, c.rounds, after_round=after_round)
        playbooks += [p.metadata() for p in chain]
        stops[game] = {"rule": "stop when no side's win rate under R(t) differs from R(t-1) (two-proportion test, p < 0.05)",
                       "enforced": c.stop_rule, "stop_round": state["stopped_at"],
                       "rounds_played": len(chain), "decisions": state["decisions"]}
    return {"rows": rows, "stop_rule": stops, "playbooks": playbooks}


def run_cross(exp: Experiment) -> dict:
    c = exp.config
    sources = c.sources or c.games
    targets = c.targets or c.games
    source_of, conditions, playbooks = {}, [], []
    for source in sources:
        playbook = exp.reflect_rounds([source], source, 1)[0]
        playbooks.append(playbook.metadata())
        source_of[playbook.id] = source
        for target in targets:
            if target != source:
                conditions += exp.conditions(target, c.model, c.model, playbook)
    rows = exp.evaluate(conditions)
    for row in rows:
        row["source"] = _source_of(row, source_of)
    return {"rows": rows, "playbooks": playbooks}


def _source_of(row: dict, source_of: dict) -> Optional[str]:
    pid = row["playbook_id"]
    if pid is None:
        return None
    for playbook_id, source in source_of.items():
        if pid == playbook_id or pid.startswith(f"placebo-{playbook_id.split('@')[0]}@"):
            return source
    return None


def run_multigame(exp: Experiment) -> dict:
    c = exp.config
    if not c.sets:
        raise ValueError("multigame needs sets, e.g. sets = {wcs = [\"werewolves\", \"chameleon\", \"spyfall\"]}")
    source_of, conditions, playbooks, held_out = {}, [], [], {}
    for name, members in c.sets.items():
        logs = exp.selfplay(members, c.model, None, c.selfplay_games)
        cap = c.per_game_cap or None
        records = [r for g in members for r in logs[g][:cap]]
        playbook = exp.playbook(f"{name}-R1", records, None, {"round": 1, "source_model": c.model,
                                                              "protocol": "multigame", "set": list(members)})
        playbooks.append(playbook.metadata())
        source_of[playbook.id] = name
        for target in c.set_targets.get(name) or members:
            conditions += exp.conditions(target, c.model, c.model, playbook)
            held_out[(name, target)] = target not in members
    targets = list(dict.fromkeys(t for (_, t) in held_out))
    for target in targets:   # each target's own single-game R1, for comparison
        single = exp.reflect_rounds([target], target, 1)[0]
        playbooks.append(single.metadata())
        source_of[single.id] = "single"
        conditions += exp.conditions(target, c.model, c.model, single)
    rows = exp.evaluate(conditions)
    for row in rows:
        row["source"] = _source_of(row, source_of)
        row["held_out"] = held_out.get((row["source"], row["game"])) if row["source"] not in (None, "single") else None
    return {"rows": rows, "playbooks": playbooks}


def run_distill(exp: Experiment) -> dict:
    c = exp.config
    if not c.students:
        raise ValueError("distill needs students (policy specs), e.g. students = [\"scripted:random\"]")
    conditions, playbooks = [], []
    shared = playbook_from_file(c.playbook) if c.playbook else None
    if shared is not None:
        save_playbook(exp.playbook_dir, shared)
    for game in c.games:
        playbook = shared or exp.reflect_rounds([game], game, 1, spec=c.model)[0]
        playbooks.append(playbook.metadata())
        for student in c.students:
            conditions += exp.conditions(game, student, c.model, playbook)
    rows = exp.evaluate(conditions)
    for row in rows:
        row["student"] = row["armed_model"]
        row["teacher"] = c.model
    return {"rows": rows, "playbooks": list({p["id"]: p for p in playbooks}.values())}


PROTOCOL_RUNNERS = {"reflect": run_reflect, "evaluate": run_distill, "within": run_within, "cross": run_cross,
                    "multigame": run_multigame, "distill": run_distill}
