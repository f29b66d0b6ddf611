"""Episode records read from log folders for rating: which records count (finished, not
failed), what was skipped and why, and each game's registry metadata."""
from __future__ import annotations

from functools import lru_cache

from socialgym_env.logs import iter_log_dir


@lru_cache(maxsize=None)
def game_info(game: str) -> dict:
    """The registry's metadata for a game; a minimal stand-in for games no longer registered."""
    try:
        import socialgym_env
        return socialgym_env.game_class(game).info.to_dict()
    except Exception:
        return {"id": game, "name": game, "category": "unknown", "information": "unknown",
                "communication": "unknown", "horizon": "unknown", "skills": [], "cooperative": False,
                "roles": [], "main_role": None, "alt_role": None, "outcome": "unknown"}


def load_records(logdir) -> tuple[list, dict]:
    """Finished records, and what was skipped: failed and unfinished episodes, and bad lines
    (corrupt, truncated or foreign) counted by why."""
    records, skipped = [], {"failed": 0, "unfinished": 0, "bad_lines": 0, "bad_line_reasons": {}}

    def skip_line(message: str, why: str) -> None:
        skipped["bad_lines"] += 1
        skipped["bad_line_reasons"][why] = skipped["bad_line_reasons"].get(why, 0) + 1

    failed_ids = set()
    for record in iter_log_dir(logdir, on_skip=skip_line):
        if record.get("failed"):
            failed_ids.add(record.get("episode_id"))
        elif not record.get("finished", True) or record.get("rewards") is None:
            skipped["unfinished"] += 1
        else:
            records.append(record)
    # A failed episode that a resume played again successfully is not a failure any more.
    skipped["failed"] = len(failed_ids - {r.get("episode_id") for r in records})
    return records, skipped


def skipped_note(skipped: dict) -> str:
    """One line on what was skipped, or "" when nothing was."""
    parts = []
    if skipped.get("failed") or skipped.get("unfinished"):
        parts.append(f"{skipped.get('failed', 0)} failed and {skipped.get('unfinished', 0)} unfinished episode records")
    if skipped.get("bad_lines"):
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped["bad_line_reasons"].items()))
        parts.append(f"{skipped['bad_lines']} bad log lines ({reasons})")
    return ("Skipped " + "; ".join(parts) + ".") if parts else ""
