"""Fingerprints of seeded random episodes, to prove engine speed-ups change no byte of what
agents see or what the log holds.

``episode_digest(game, seed)`` plays one episode with random legal actions mixed with junk
(invalid strings exercise the fallback path), all drawn from ``random.Random(seed)``, and hashes
the canonical JSON of: the acting seat's info dict and observation text at every step, every
seat's info and observation every ``FULL_VIEW_EVERY`` steps and at the end, and the final
episode record. The golden hashes in ``tests/data/episode_digests.json`` were made by the
engine before the speed work (issue 12)::

    PYTHONPATH=$PWD python tests/record_digest.py --write    # only to re-baseline on purpose
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import socialgym_env  # noqa: E402

DIGESTS = Path(__file__).parent / "data" / "episode_digests.json"
SEEDS = range(50)
JUNK_RATE = 0.1
FULL_VIEW_EVERY = 7
JUNK = ["", "junk", "pass", "vote Nobody", "bid 99 9", '{"action_type": "vote"}', "say", "{not json"]


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=repr)


def episode_digest(game_id: str, seed: int) -> str:
    env = socialgym_env.make(game_id, log_observations=True)   # the record as it was: full observations
    env.reset(seed=seed)
    rng = random.Random(seed)
    digest = hashlib.sha256()
    for step, agent in enumerate(env.agent_iter()):
        obs, reward, terminated, truncated, info = env.last()
        digest.update(canonical([agent, obs, reward, terminated, truncated, info]).encode())
        if step % FULL_VIEW_EVERY == 0:
            digest.update(canonical({a: [env.infos[a], env.observe(a)] for a in env.agents}).encode())
        if terminated or truncated:
            env.step(None)
            continue
        action = rng.choice(JUNK) if rng.random() < JUNK_RATE else env.grammar(agent).sample(rng).text
        env.step(action)
    digest.update(canonical({a: env.observe(a) for a in env.possible_agents}).encode())
    digest.update(canonical(env.episode_record()).encode())
    return digest.hexdigest()[:16]


def all_digests(games=None, seeds=SEEDS) -> dict:
    return {game: [episode_digest(game, seed) for seed in seeds] for game in games or socialgym_env.game_ids()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DIGESTS.relative_to(ROOT)}")
    args = parser.parse_args()
    digests = all_digests()
    if args.write:
        DIGESTS.parent.mkdir(parents=True, exist_ok=True)
        DIGESTS.write_text("{\n" + ",\n".join(f"{json.dumps(g)}: {json.dumps(d)}" for g, d in digests.items()) + "\n}\n")
        print(f"wrote {DIGESTS}")
    else:
        stored = json.loads(DIGESTS.read_text())
        bad = [(g, s) for g in digests for s, d in zip(SEEDS, digests[g]) if stored[g][s] != d]
        print("all equal" if not bad else f"{len(bad)} differ: {bad[:20]}")


if __name__ == "__main__":
    main()
