"""Episode records read from log folders for rating: which records count (finished, not
failed), what was skipped and why, and each game's registry metadata."""
from __future__ import annotations

from functools import lru_cache

from socialgym_env.logs import SKIPPED_DUPLICATES, SKIPPED_NOT_REGULAR, iter_log_dir


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
    """Finished records, each episode once, and what was skipped: failed and unfinished episodes,
    bad lines (corrupt, truncated or foreign) counted by why, duplicate copies of an episode, and
    files in the folder that are not regular files (a pipe, a device). A conflicting duplicate
    (one episode id, two contents) raises LogFormatError naming both files."""
    records, skipped = [], {"failed": 0, "unfinished": 0, "bad_lines": 0, "bad_line_reasons": {},
                            "duplicates": 0, "not_regular_files": 0}

    def skip_line(message: str, why: str) -> None:
        if why == SKIPPED_NOT_REGULAR:
            skipped["not_regular_files"] += 1
        elif why != SKIPPED_DUPLICATES:        # counted by the reader itself (logs.duplicates)
            skipped["bad_lines"] += 1
            skipped["bad_line_reasons"][why] = skipped["bad_line_reasons"].get(why, 0) + 1

    failed_ids = set()
    logs = iter_log_dir(logdir, on_skip=skip_line)
    for record in logs:
        if record.get("failed"):
            failed_ids.add(record.get("episode_id"))
        elif not record.get("finished", True) or record.get("rewards") is None:
            skipped["unfinished"] += 1
        else:
            records.append(record)
    skipped["duplicates"] = logs.duplicates
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
    if skipped.get("duplicates"):
        parts.append(f"{skipped['duplicates']} duplicate copies of episodes already read (each episode counted once)")
    if skipped.get("not_regular_files"):
        parts.append(f"{skipped['not_regular_files']} *.jsonl entries that are not regular files (a pipe, a device)")
    return ("Skipped " + "; ".join(parts) + ".") if parts else ""
