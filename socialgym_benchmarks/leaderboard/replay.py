"""Replay viewer: one logged episode as a self-contained HTML page.

``write_replay(log_path, episode_id, out_html)`` renders:

- the public transcript (every public message, as the seats saw it);
- a seat selector (``<select id="seat">``): the chosen seat's private view — every message whose
  receivers include that seat (team and private lines highlighted) and that seat's own actions.
  The page also reads the seat from the URL (``page.html#seat=player_2`` or ``?seat=player_2``);
- every turn's action, with invalid attempts (``valid: false``) and engine fallbacks marked;
- the roster with roles, teams, policies and outcomes, revealed at the end of the page.

No network access and no external files: the episode is embedded as JSON and rendered by a
few lines of inline JavaScript; the public transcript is also written as static HTML.
"""
from __future__ import annotations

import html
import json
import warnings
from pathlib import Path
from typing import Optional

from socialgym_env.actions import safe_repr
from socialgym_env.atomic import atomic_write_text
from socialgym_env.errors import LogFormatError, UnknownGameError
from socialgym_env.logs import SKIPPED_DUPLICATES, iter_log_dir, verify_replay
from socialgym_env.registry import game_ids

MODERATOR = "Moderator"


def find_episode(log_path, episode_id: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for record in iter_log_dir(log_path):
            if record.get("episode_id") == episode_id:
                return record
    raise LogFormatError(f"episode {safe_repr(episode_id, 80)} is not in {log_path}")


def nth_episode(log_path, index: int = 0) -> dict:
    """The ``index``-th episode record of a log (0 = the first; failed records and copies of an
    episode already read are skipped)."""
    skipped: list = []

    def skip(message: str, why: str) -> None:
        if why != SKIPPED_DUPLICATES:
            skipped.append(message)
    played = [r for r in iter_log_dir(log_path, on_skip=skip) if not r.get("failed")]
    if not played:
        # why the only records were not usable, without the path said twice
        first = f" (line {skipped[0][len(str(log_path)) + 1:]})" if skipped else ""
        raise KeyError(f"{log_path} holds no played episode{first}")
    if not 0 <= index < len(played):
        raise KeyError(f"--index {index} is out of range: {log_path} holds {len(played)} played episodes "
                       f"(valid: 0 to {len(played) - 1})")
    return played[index]


def message_line(message: dict, names: dict) -> str:
    """``[R2 vote] Alice (team only): text`` — the same shape as the env's board lines."""
    sender = message.get("sender")
    speaker = names.get(sender, sender) if sender else MODERATOR
    visibility = message.get("visibility", "public")
    receivers = message.get("receivers") or []
    if visibility == "team":
        speaker += " (team only)"
    elif visibility != "public":
        speaker += " (to " + ", ".join(names.get(r, r) for r in receivers) + ")"
    where = f"R{message.get('round', 0)}" + (f" {message['phase']}" if message.get("phase") else "")
    return f"[{where}] {speaker}: {message.get('text', '')}"


def replay_data(record: dict) -> dict:
    """What the page embeds: lines with receivers, turns, roster."""
    roster = record.get("roster", [])
    names = {s["agent"]: s.get("name") or s["agent"] for s in roster}
    messages = [{"line": message_line(m, names), "receivers": m.get("receivers") or [],
                 "visibility": m.get("visibility", "public")} for m in record.get("messages") or []]
    turns = [{"step": t.get("step"), "round": t.get("round"), "phase": t.get("phase"),
              "agent": t.get("agent"), "name": names.get(t.get("agent"), t.get("agent")),
              "action": t.get("action"), "raw": t.get("raw"), "valid": t.get("valid", True),
              "fallback": bool(t.get("fallback")), "reason": t.get("reason")}
             for t in record.get("turns") or []]
    seats = [{"agent": s["agent"], "name": names[s["agent"]], "role": s.get("role"), "team": s.get("team"),
              "policy": s.get("policy"), "score": (record.get("scores") or {}).get(s["agent"]),
              "outcome": (record.get("outcomes") or {}).get(s["agent"])} for s in roster]
    return {"episode_id": record.get("episode_id"), "game": record.get("game"), "seed": record.get("seed"),
            "messages": messages, "turns": turns, "seats": seats, "reason": record.get("reason"),
            "truncated": record.get("truncated", False)}


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1100px}
.line{font-family:ui-monospace,monospace;white-space:pre-wrap;margin:1px 0;padding:1px 4px}
.team{background:#eef6ff}.private,.targeted{background:#fff4e0}
.invalid{background:#ffe3e3}.fallback{color:#a00}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}
.tag{font-size:80%;padding:0 4px;border-radius:3px;background:#c00;color:#fff;margin-left:4px}
"""

_JS = """
const DATA = JSON.parse(document.getElementById('episode-data').textContent);
function esc(s){return String(s).replace(/[&<>"']/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));}
function seatFromUrl(){
  const h = new URLSearchParams(location.hash.replace(/^#/, ''));
  const q = new URLSearchParams(location.search);
  return h.get('seat') || q.get('seat') || '';
}
function showSeat(agent){
  const box = document.getElementById('seat-view');
  if(!agent){ box.innerHTML = '<p><i>Choose a seat to see its private view.</i></p>'; return; }
  const seat = DATA.seats.find(s => s.agent === agent);
  if(!seat){ box.innerHTML = '<p>No seat ' + esc(agent) + '.</p>'; return; }
  let out = '<h3>What ' + esc(seat.name) + ' (' + esc(agent) + ') saw</h3>';
  for(const m of DATA.messages){
    if(m.receivers.indexOf(agent) < 0) continue;
    out += '<div class="line seat-line ' + esc(m.visibility) + '">' + esc(m.line) + '</div>';
  }
  out += '<h3>Actions of ' + esc(seat.name) + '</h3>';
  for(const t of DATA.turns){
    if(t.agent !== agent) continue;
    out += '<div class="line seat-action' + (t.valid ? '' : ' invalid') + '">[step ' + t.step + ' ' + esc(t.phase) + '] '
        + esc(t.action) + (t.valid ? '' : ' <span class="tag">invalid</span> (' + esc(t.raw) + ': ' + esc(t.reason) + ')')
        + (t.fallback ? ' <span class="tag">fallback</span>' : '') + '</div>';
  }
  box.innerHTML = out;
}
const select = document.getElementById('seat');
select.addEventListener('change', () => { location.hash = 'seat=' + select.value; showSeat(select.value); });
window.addEventListener('hashchange', () => { select.value = seatFromUrl(); showSeat(select.value); });
select.value = seatFromUrl();
showSeat(select.value);
"""


def render_replay(record: dict) -> str:
    data = replay_data(record)
    esc = html.escape
    title = f"{data['game']} — episode {data['episode_id']}"
    public = [m for m in data["messages"] if m["visibility"] == "public"]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>", f"<title>{esc(title)}</title>",
             f"<style>{_CSS}</style></head><body>", f"<h1>{esc(title)}</h1>",
             f"<p>Seed {esc(str(data['seed']))}. Players: "
             + ", ".join(f"{esc(s['name'])} ({esc(s['agent'])}, {esc(str(s['policy']))})" for s in data["seats"])
             + ".</p>",
             "<h2>Public transcript</h2><div id='public'>"]
    parts += [f"<div class='line public-line'>{esc(m['line'])}</div>" for m in public]
    parts.append("</div>")
    parts.append("<h2>Private view</h2><label for='seat'>Seat: </label><select id='seat'>"
                 "<option value=''>(choose a seat)</option>"
                 + "".join(f"<option value='{esc(s['agent'])}'>{esc(s['name'])} ({esc(s['agent'])})</option>"
                           for s in data["seats"])
                 + "</select><div id='seat-view'></div>")
    parts.append("<h2>Turns</h2><table id='turns'><tr><th>step</th><th>round</th><th>phase</th><th>player</th>"
                 "<th>action</th><th>note</th></tr>")
    for t in data["turns"]:
        note = []
        if not t["valid"]:
            note.append(f"<span class='tag'>invalid</span> {esc(str(t['raw']))!s}: {esc(str(t['reason']))}")
        if t["fallback"]:
            note.append("<span class='tag'>fallback</span>")
        cls = " class='invalid'" if not t["valid"] else ""
        parts.append(f"<tr{cls}><td>{t['step']}</td><td>{t['round']}</td><td>{esc(str(t['phase']))}</td>"
                     f"<td>{esc(str(t['name']))}</td><td>{esc(str(t['action']))}</td><td>{' '.join(note)}</td></tr>")
    parts.append("</table>")
    invalid = sum(1 for t in data["turns"] if not t["valid"])
    parts.append(f"<p>{len(data['turns'])} turns, {invalid} invalid attempts.</p>")
    parts.append("<h2>Roles revealed</h2><details id='reveal' open><summary>Roles, scores and outcomes</summary>"
                 "<table><tr><th>player</th><th>seat</th><th>role</th><th>team</th><th>policy</th><th>score</th>"
                 "<th>outcome</th></tr>")
    for s in data["seats"]:
        parts.append("<tr class='role-row'>" + "".join(f"<td>{esc(str(s[k] if s[k] is not None else ''))}</td>"
                     for k in ("name", "agent", "role", "team", "policy", "score", "outcome")) + "</tr>")
    parts.append(f"</table><p>End: {esc(str(data['reason']))}"
                 f"{' (turn cap: truncated)' if data['truncated'] else ''}</p></details>")
    # No "<" may appear raw inside a script element ("<!--<script" or "</script" in a message
    # would end or corrupt it): JSON's \u003c escape reads back as the same text.
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    parts.append(f"<script type='application/json' id='episode-data'>{payload}</script>")
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)


def write_replay(log_path, episode_id: Optional[str], out_html, index: int = 0) -> Path:
    """Write the replay page of ``episode_id`` (or, without one, of the ``index``-th episode)
    from ``log_path`` to ``out_html``."""
    if episode_id is not None and not episode_id.strip():
        raise LogFormatError("--episode is empty: give an episode id of the log, or leave it out for the first")
    record = find_episode(log_path, episode_id) if episode_id is not None else nth_episode(log_path, index)
    check_replayable(record, log_path)
    return write_record_replay(record, out_html)


def check_replayable(record: dict, log_path) -> None:
    """UnknownGameError for a game not registered here, LogFormatError for a turn by a seat not
    in the roster or without an action: a page of blanks would be a silent wrong replay."""
    where = f"{log_path}: episode {record.get('episode_id')!r}"
    game = record.get("game")
    if not isinstance(game, str) or game not in game_ids():
        raise UnknownGameError(f"{where} is of game {game!r}, which is not registered here (--game-module "
                               f"PKG.MOD registers an outside game; valid: {', '.join(sorted(game_ids()))})")
    # The types are read_episodes' validate_record's; what it cannot know is the roster's ids.
    seats = {s["agent"] for s in record["roster"]}
    for number, turn in enumerate(record["turns"]):
        if turn["agent"] not in seats or "action" not in turn:
            raise LogFormatError(f"{where}: turn {number} must have an 'agent' of the roster and an 'action' "
                                 f"(got {json.dumps(turn)[:80]})")
    # The page shows the record; it must be what the actions give (a config this install
    # refuses, an edited turn or score is an error, not a page that contradicts itself).
    verify_replay(record)

def write_record_replay(record: dict, out_html) -> Path:
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, render_replay(record))
    return out
