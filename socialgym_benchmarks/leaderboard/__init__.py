"""The leaderboard: its numbers from episode records (:mod:`.summary`), written as CSV, Markdown,
HTML, figures and the console table (:mod:`.render`), and the HTML episode replays it links
(:mod:`.replay`). ``socialgym leaderboard LOGS`` runs :func:`build_leaderboard`."""
from .render import build_leaderboard, print_leaderboard
from .replay import write_record_replay, write_replay
from .summary import summarize

__all__ = ["build_leaderboard", "print_leaderboard", "summarize", "write_record_replay", "write_replay"]
