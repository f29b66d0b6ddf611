"""Win counts per competitor and their win rates with Wilson score intervals."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

from .battles import seat_values

def wilson_interval(successes: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (0/0 gives (0, 1))."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def seat_win_counts(records: Iterable[dict], label=None) -> dict:
    """Per competitor: seats played, strict wins (reward > 0), draws, losses."""
    label = label or (lambda seat: seat.get("policy"))
    counts = defaultdict(lambda: {"seats": 0, "wins": 0, "draws": 0, "losses": 0})
    for record in records:
        rewards = seat_values(record, "reward")
        if rewards is None:
            continue
        for seat in record.get("roster", []):
            name = label(seat)
            if name is None or seat.get("agent") not in rewards:
                continue
            r = float(rewards[seat["agent"]])
            c = counts[name]
            c["seats"] += 1
            c["wins" if r > 0 else "losses" if r < 0 else "draws"] += 1
    return dict(counts)


def win_rates(records: Iterable[dict], label=None) -> dict:
    """Strict win rate per competitor (ties count in the denominator) with a Wilson 95% CI."""
    out = {}
    for name, c in seat_win_counts(records, label).items():
        lo, hi = wilson_interval(c["wins"], c["seats"])
        out[name] = dict(c, rate=c["wins"] / c["seats"] if c["seats"] else 0.0, lo=lo, hi=hi)
    return out

