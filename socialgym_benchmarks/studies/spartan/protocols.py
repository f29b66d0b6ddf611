"""The paper's four SPaRTan protocols (section 5, Appendix M) plus plain iterated reflection.

Each returns ``{"rows": [...], ...}``: one row per evaluation condition (see
:meth:`Experiment.evaluate`) tagged with what the protocol varies (round, source, set, student),
which :mod:`socialgym_benchmarks.studies.spartan.report` turns into tables and figures.

* ``within``: per game, R1..R4 from self-play (round t armed with R(t-1) on every seat); each
  R(t) on the alt side and on the main side vs the unarmed model (Table 1 / Table 10 shape).
  Every round is played, as in the paper; with ``stop_rule = true`` the sequential procedure
  of :class:`StopRule` may end the chain early (its decisions are reported either way).
* ``cross`` (1 -> n): each source game's R1 on each other target game (Table 11 / Fig. 3).
* ``multigame`` (n -> 1): a playbook reflected from the combined R0 self-play of a set of games
  (``wcs``, ``wcsu``, ``wcsur``), on held-out and in-distribution targets, next to each target's
  own single-game R1 (Table 12 / Fig. 11).
* ``distill``: the teacher's (``model``) playbook given to each student, who plays the armed
  side against the unarmed teacher; the baseline is the student without it (Table 13).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .experiment import Experiment
from .playbook import playbook_from_file, save_playbook
from .stats import TWO_SAMPLE, sign_flip_p, two_proportion_test


def _tag(rows: list[dict], **tags) -> list[dict]:
    return [{**row, **tags} for row in rows]


def _side_rows(rows: list[dict], kind: str, playbook_id: Optional[str]) -> dict:
    return {r["side"]: r for r in rows if r["condition"] == kind and r["playbook_id"] == playbook_id}


@dataclass(frozen=True)
class StopRule:
    """The within-game stop rule, a sequential procedure stated in full.

    After round t is evaluated, each side's armed win rate under R(t) is compared with the best
    earlier round of that side (R0 = the no-playbook baseline): R(t) *improves* a side when a
    one-sided test of "R(t) wins more often than that best round" gives p < ``alpha / sides``
    (Bonferroni over the sides tested in the round). The test is paired when both rows carry
    their per-seed outcomes (the exact one-sided McNemar / sign-flip test over the shared
    evaluation seeds) and the unpaired one-sided two-proportion z-test when only counts are
    known (a published table). A round that improves no side adds one to a counter that an
    improving round resets; the chain stops after the round where the counter reaches
    ``patience``. R(t) becomes a side's best round only when it improves it, so a noisy rise
    that is not significant does not raise the bar.

    Fed the paper's Table 1 (n = 30 per cell), the defaults (alpha 0.05, patience 3) stop no
    game before its alt-side peak (Werewolves R3, Spyfall R2, Resistance R3); patience 2 stops
    Resistance at R2, before its peak, and the old rule (stop at the first round that changes
    no side significantly against the previous one) stopped Werewolves at R2 and Spyfall and
    Resistance at R1 (tests/benchmarks/test_spartan_statistics.py). The price of patience 3
    with 4 rounds: the rule can save at most R4, when R1..R3 all fail to improve.
    """

    alpha: float = 0.05
    patience: int = 3

    def describe(self) -> str:
        return (f"stop after {self.patience} round(s) in a row in which no side's armed win rate beats its best "
                f"earlier round (R0 = baseline) by a one-sided test at alpha {self.alpha} split over the sides "
                "(paired exact McNemar/sign-flip over the shared seeds; two-proportion z-test from counts alone)")

    def improvement(self, row: dict, best: dict, sides: int) -> dict:
        paired = _paired_outcomes(row, best)
        if paired is not None:
            p, test = sign_flip_p(paired, "greater"), "exact one-sided McNemar/sign-flip (paired by seed)"
        else:
            p, test = two_proportion_test(row["wins"], row["n"], best["wins"], best["n"], "greater")[1], \
                f"one-sided {TWO_SAMPLE}"
        change = 100 * (row["wins"] / row["n"] - best["wins"] / best["n"]) if row["n"] and best["n"] else None
        return {"change_points": change, "p_value": p, "test": test, "improved": p < self.alpha / max(1, sides)}

    def run(self, rounds: list) -> list:
        """``rounds``: [{side: row}] for R0 (the baseline), R1, ...; a row holds ``wins`` and
        ``n`` (and ``outcomes`` when known). Returns one decision per round t >= 1; the
        procedure stops after the first with ``stop`` True."""
        best = dict(rounds[0])
        best_round = {side: 0 for side in best}
        quiet, decisions = 0, []
        for t, current in enumerate(rounds[1:], start=1):
            tested = [side for side in current if side in best]
            sides = {side: {**self.improvement(current[side], best[side], len(tested)),
                            "best_round": best_round[side]} for side in tested}
            improved = any(v["improved"] for v in sides.values())
            for side, verdict in sides.items():
                if verdict["improved"]:
                    best[side], best_round[side] = current[side], t
            quiet = 0 if improved else quiet + 1
            decisions.append({"round": t, "sides": sides, "improved": improved, "rounds_without_improvement": quiet,
                              "stop": quiet >= self.patience})
        return decisions


def _paired_outcomes(row: dict, other: dict) -> Optional[list]:
    """Per-seed differences of two rows played on the same seeds, or None without outcomes."""
    a, b = row.get("outcomes"), other.get("outcomes")
    if not a or not b:
        return None
    per_seed: dict = {}
    for key, won in a.items():
        if key in b:
            seed = key.split("|")[0]
            per_seed[seed] = per_seed.get(seed, 0) + int(won) - int(b[key])
    return list(per_seed.values()) if per_seed else None


def run_reflect(exp: Experiment, name: Optional[str] = None) -> dict:
    """Self-play and iterated reflection only: R1..R<rounds> over the configured games."""
    games = exp.config.games
    name = name or "+".join(games)
    chain = exp.reflect_rounds(games, name, exp.config.rounds)
    return {"rows": [], "playbooks": [p.metadata() for p in chain]}


def run_within(exp: Experiment) -> dict:
    c = exp.config
    rule = StopRule(c.stop_alpha, c.stop_patience)
    rows, stops, playbooks = [], {}, []
    for game in c.games:
        state = {"rounds": [], "decisions": [], "stopped_at": None}

        def after_round(t, playbook, game=game, state=state):
            result = exp.evaluate(exp.conditions(game, c.model, c.model, playbook))
            if t == 1:
                rows.extend(_tag([r for r in result if r["condition"] == "baseline"], round=0))
                state["rounds"].append(_side_rows(result, "baseline", None))
            rows.extend(_tag([r for r in result if r["condition"] != "baseline"], round=t))
            state["rounds"].append(_side_rows(result, "playbook", playbook.id))
            decision = rule.run(state["rounds"])[-1]
            state["decisions"].append(decision)
            if decision["stop"] and state["stopped_at"] is None:
                state["stopped_at"] = t
            return decision["stop"] and c.stop_rule

        chain = exp.reflect_rounds([game], game, c.rounds, after_round=after_round)
        playbooks += [p.metadata() for p in chain]
        stops[game] = {"rule": rule.describe(), "alpha": rule.alpha, "patience": rule.patience,
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
