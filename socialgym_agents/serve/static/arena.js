// The arena page: lobby, seat, spectator and replay views (chosen by the URL path).
// Every string from the server is put in the page with textContent (el() below), never as
// markup, so a name or a talk line such as "<script>" is shown as those characters.
"use strict";

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

const app = document.getElementById("app");
const where = document.getElementById("where");

// Absent parts (null, undefined) are skipped: replaceChildren would show them as the text "null".
function show(...nodes) { app.replaceChildren(...nodes.filter(node => node !== null && node !== undefined)); }

async function getJSON(url, options) {
  const response = await fetch(url, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function socketURL(gameId) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/" + encodeURIComponent(gameId);
}

// ------------------------------------------------------------------ lobby
async function lobby() {
  where.textContent = "lobby";
  const options = await getJSON("/api/options");
  const kinds = ["human", ...options.scripted, ...options.models, "other"];
  const game = el("select", {id: "game"}, ...options.games.map(g =>
    el("option", {value: g.id, text: `${g.name} (${g.id}, ${g.num_players} players)`})));
  const config = el("input", {id: "config", size: "40", placeholder: '{"rounds": 3}'});
  const seed = el("input", {id: "seed", size: "8", placeholder: "random"});
  const seatRows = el("div", {id: "seats"});
  const result = el("div", {id: "created"});
  const error = el("div", {id: "lobby-error"});

  // Picking a game and editing the config each ask for the seats; only the latest answer is
  // shown (an earlier one may arrive last), and the rows say what they were made for.
  let seatsAsked = 0;
  async function loadSeats() {
    const asked = ++seatsAsked;
    const wanted = JSON.stringify([game.value, config.value]);
    error.replaceChildren();
    try {
      const query = new URLSearchParams({game: game.value, config: config.value});
      const info = await getJSON("/api/seats?" + query);
      if (asked !== seatsAsked) return;
      seatRows.dataset.for = wanted;
      seatRows.replaceChildren(...info.seats.map((agent, index) => {
        const kind = el("select", {id: `kind-${agent}`}, ...kinds.map(k => el("option", {value: k, text: k})));
        kind.value = index === 0 ? "human" : options.scripted[0];
        const name = el("input", {id: `name-${agent}`, size: "16", placeholder: "name", value: index === 0 ? "Player" : ""});
        const spec = el("input", {id: `spec-${agent}`, size: "24", placeholder: "scripted:..."});
        const sync = () => { name.hidden = kind.value !== "human"; spec.hidden = kind.value !== "other"; };
        kind.addEventListener("change", sync);
        sync();
        return el("div", {class: "action", "data-agent": agent}, el("span", {class: "type", text: agent}), kind, name, spec);
      }));
    } catch (err) {
      if (asked === seatsAsked) error.replaceChildren(el("div", {class: "err", text: err.message}));
    }
  }

  async function create() {
    error.replaceChildren();
    const seats = [...seatRows.children].map(row => {
      const agent = row.dataset.agent;
      const kind = document.getElementById(`kind-${agent}`).value;
      if (kind === "human") return {kind: "human", name: document.getElementById(`name-${agent}`).value};
      return {kind: "policy", spec: kind === "other" ? document.getElementById(`spec-${agent}`).value : kind};
    });
    const body = {game: game.value, config: config.value, seats, seed: seed.value === "" ? null : Number(seed.value)};
    const stop = startProgress(seats);
    try {
      const created = await getJSON("/api/games", {method: "POST", headers: {"Content-Type": "application/json"},
                                                   body: JSON.stringify(body)});
      stop();
      result.replaceChildren(el("div", {class: "panel"},
        el("h2", {text: `Game created: ${created.episode_id}`}),
        el("p", {class: "muted", text: "Each link is that seat's secret: send it only to the person who plays it. " +
                                        "The hot-seat link opens every human seat, one at a time: keep it to this machine."}),
        el("table", {}, ...created.seats.map(s => el("tr", {},
          el("td", {text: s.agent}), el("td", {text: s.name}), el("td", {text: s.player}),
          el("td", {}, s.link ? el("a", {class: "link seat-link", href: s.link, target: "_blank", "data-agent": s.agent,
                                         text: location.origin + s.link}) : el("span", {class: "muted", text: "policy"}))))),
        el("p", {}, el("a", {id: "watch-link", href: created.watch, target: "_blank", text: "Spectator view"}),
           " · ", el("a", {id: "hotseat-link", href: created.hotseat, target: "_blank",
                           text: "Hot-seat: every human seat on this screen, handed over between turns"}))));
    } catch (err) {
      stop();
      error.replaceChildren(el("div", {class: "err", text: err.message}));
    }
  }

  // While the server builds the game (a model seat's model loads on its first game, which can take
  // a while): the button is off, and a line says what is happening and for how long so far.
  function startProgress(seats) {
    const button = document.getElementById("create");
    const models = [...new Set(seats.filter(s => s.kind === "policy" && !s.spec.startsWith("scripted:")).map(s => s.spec))];
    const what = models.length ? `Starting the game: loading ${models.join(", ")} (a model loads on its first game only)`
                               : "Starting the game";
    const started = Date.now();
    const line = el("span", {id: "create-elapsed"});
    const tick = () => { line.textContent = ` ${Math.floor((Date.now() - started) / 1000)} s`; };
    tick();
    const timer = setInterval(tick, 1000);
    button.disabled = true;
    result.replaceChildren(el("div", {id: "create-progress", class: "status", role: "status"},
                              el("progress", {}), " ", what, "...", line));
    return () => { clearInterval(timer); button.disabled = false; result.replaceChildren(); };
  }

  game.addEventListener("change", loadSeats);
  config.addEventListener("change", loadSeats);
  const live = el("div", {id: "live"});
  const finished = el("div", {id: "finished"});
  const ratings = el("div", {id: "ratings"});
  show(el("div", {class: "panel"},
         el("h2", {text: "New game"}),
         el("div", {class: "action"}, el("label", {text: "Game"}), game),
         el("div", {class: "action"}, el("label", {text: "Config (JSON)"}), config,
            el("label", {text: "Seed"}), seed),
         seatRows,
         el("div", {class: "action"}, el("button", {id: "create", text: "Create game", on: {click: create}})),
         error),
       result,
       el("div", {class: "cols"},
          el("div", {class: "panel"}, el("h2", {text: "Live games"}), live),
          el("div", {class: "panel"}, el("h2", {text: "Finished episodes"}), finished)),
       el("div", {class: "panel"}, el("h2", {text: "Ratings (openskill, mu \u00b1 1.96 sigma)"}), ratings));
  await loadSeats();
  const games = await getJSON("/api/games");
  live.replaceChildren(...(games.length ? games.map(g => el("div", {class: "line"},
    el("a", {href: g.watch, text: `${g.game_name}: ${g.players.join(", ")}`}), g.done ? " (over)" : ""))
    : [el("span", {class: "muted", text: "none"})]));
  const episodes = await getJSON("/api/episodes");
  finished.replaceChildren(...(episodes.length ? episodes.map(e => el("div", {class: "line"},
    el("a", {class: "replay-link", href: "/replay/" + encodeURIComponent(e.episode_id), text: e.episode_id}),
    ` ${e.players.join(" vs ")}: ${e.reason || ""}`)) : [el("span", {class: "muted", text: "none yet"})]));
  const rated = (await getJSON("/api/ratings")).ratings;
  ratings.replaceChildren(...(rated.length ? rated.map((r, i) => el("div", {class: "line",
    text: `${i + 1}. ${r.player}: ${r.mu.toFixed(1)} [${r.lo.toFixed(1)}, ${r.hi.toFixed(1)}], ` +
          `${r.episodes} episode${r.episodes === 1 ? "" : "s"}`})) : [el("span", {class: "muted", text: "none yet"})]));
}

// ------------------------------------------------------------------ seat and spectator
function seatChips(view) {
  return el("div", {id: "seat-list"}, ...view.seats.map(s => {
    let cls = "seat";
    if (view.thinking === s.name) cls += " thinking";
    else if (s.to_act) cls += " acting";
    return el("span", {class: cls, "data-agent": s.agent, text: `${s.name} (${s.agent}): ${s.player}`});
  }));
}

function statusLine(view) {
  if (view.error) return el("div", {id: "status", class: "status error", text: "Game stopped: " + view.error});
  if (view.done) {
    const r = view.result || {};
    const scores = Object.entries(r.scores || {}).map(([n, s]) => `${n} ${s}`).join(", ");
    return el("div", {id: "status", class: "status done",
                      text: `Game over: ${r.reason || ""}. Scores: ${scores}.` + (view.outcome ? ` You: ${view.outcome}.` : "")});
  }
  const toAct = view.seats.filter(s => s.to_act).map(s => s.name);
  if (view.controls) return el("div", {id: "status", class: "status you", text: `Your turn, ${view.name}. ` +
                                       (toAct.length > 1 ? `Also to move: ${toAct.filter(n => n !== view.name).join(", ")}.` : "")});
  if (view.thinking) return el("div", {id: "status", class: "status", text: `${view.thinking} is thinking...`});
  const mine = view.submitted ? `Your move is in (${view.submitted}). ` : "";
  if (view.turn_hidden) return el("div", {id: "status", class: "status",
                                          text: mine + "Waiting for other players (who moves in this phase is secret)."});
  return el("div", {id: "status", class: "status", text: mine + (toAct.length ? `Waiting for ${toAct.join(", ")}.` : "")});
}

function transcriptPanel(lines) {
  const box = el("div", {id: "transcript"}, ...(lines.length ? lines.map(l => el("div", {class: "line", text: l}))
                                                         : [el("span", {class: "muted", text: "(nothing yet)"})]));
  return el("div", {class: "panel"}, el("h2", {text: "Public transcript"}), box);
}

// A control for one argument schema: an <input>/<select> and a function reading its value.
function field(schema) {
  if (schema.enum) {
    const select = el("select", {}, ...schema.enum.map(v => el("option", {value: String(v), text: String(v)})));
    return [select, () => schema.enum[select.selectedIndex]];
  }
  if (schema.type === "integer") {
    const input = el("input", {type: "number", min: String(schema.minimum), max: String(schema.maximum),
                               value: String(schema.minimum), size: "5"});
    return [input, () => Number(input.value)];
  }
  const long = !schema.maxLength || schema.maxLength > 60;
  const input = long ? el("textarea", {maxlength: String(schema.maxLength || 600), placeholder: "type here"})
                     : el("input", {maxlength: String(schema.maxLength), size: "20"});
  return [input, () => input.value];
}

// The legal actions as controls, from the seat's action_schema: a button per finite choice,
// inputs (number, list, text box) plus a send button for the rest.
function controlsPanel(view, send) {
  const c = view.controls;
  const rows = [];
  for (const option of (c.action_schema && c.action_schema.oneOf) || []) {
    const type = option.properties.action_type.const;
    const arg = option.properties.argument;
    const move = argument => JSON.stringify(argument === undefined ? {action_type: type} : {action_type: type, argument});
    const row = el("div", {class: "action", "data-type": type}, el("span", {class: "type", text: type}));
    if (!arg || arg.maxLength === 0) {
      row.append(el("button", {class: "move", "data-move": type, text: type, on: {click: () => send(move())}}));
    } else if (arg.enum) {
      for (const value of arg.enum) {
        row.append(el("button", {class: "move", "data-move": `${type} ${value}`, text: String(value),
                                 on: {click: () => send(move(value))}}));
      }
    } else {
      const parts = arg.type === "array" && Array.isArray(arg.items) ? arg.items.map(field) : [field(arg)];
      for (const [input] of parts) row.append(input);
      const read = () => arg.type === "array" ? parts.map(([, value]) => value()) : parts[0][1]();
      row.append(el("button", {class: "move send", "data-move": type, text: "send", on: {click: () => send(move(read()))}}));
    }
    rows.push(row);
  }
  const free = el("input", {id: "free-action", size: "30", placeholder: "or type a move"});
  rows.push(el("div", {class: "action"}, free,
               el("button", {class: "secondary", text: "send typed move", on: {click: () => send(free.value)}})));
  return el("div", {class: "panel", id: "controls"},
            el("h2", {text: `Your move: phase ${c.phase}`}),
            c.instructions ? el("p", {text: c.instructions}) : null, ...rows);
}

function live(gameId, hello, render) {
  const socket = new WebSocket(socketURL(gameId));
  let lastError = null;
  socket.onopen = () => socket.send(JSON.stringify(hello));
  socket.onmessage = event => {
    const message = JSON.parse(event.data);
    if (message.type === "error") { lastError = message.message; render(null, lastError, socket); return; }
    lastError = null;
    render(message, null, socket);
  };
  socket.onclose = () => render(null, lastError || "disconnected from the arena (reload to reconnect)", socket);
}

// A seat's screen: its view, status, controls and the transcript. Returns render(view, error).
function seatScreen(socket) {
  let controls = null, controlsKey = null;     // kept across updates, so typing is not lost
  const send = move => socket.send(JSON.stringify({type: "act", action: move}));
  const hide = el("button", {id: "hide", class: "secondary", text: "Hide my seat and hand the screen over",
                             on: {click: () => socket.send(JSON.stringify({type: "hide"}))}});
  return (view, error) => {
    const key = view.controls ? JSON.stringify([view.seat, view.controls, view.observation]) : null;
    if (key !== controlsKey) { controlsKey = key; controls = key ? controlsPanel(view, send) : null; }
    where.textContent = `${view.game_name}: ${view.name} (${view.seat})` + (view.role ? `, ${view.role}` : "");
    show(statusLine(view), seatChips(view),
         error ? el("div", {class: "err", id: "error", text: error}) : el("div", {id: "error"}),
         el("div", {class: "cols"},
            el("div", {class: "panel"}, el("h2", {text: "Your view"}), el("pre", {id: "observation", text: view.observation})),
            el("div", {}, controls, transcriptPanel(view.transcript))),
         view.hotseat ? el("p", {}, hide) : null, replayLink(view));
  };
}

function replayLink(view) {
  return view.done && !view.error ? el("p", {}, el("a", {id: "replay-link", text: "Replay this episode",
                                                         href: "/replay/" + encodeURIComponent(view.episode_id)})) : null;
}

function seatPage(gameId, seat) {
  const token = decodeURIComponent(location.hash.slice(1));
  where.textContent = `seat ${seat}`;
  let view = null, screen = null;
  live(gameId, {type: "hello", seat, token}, (message, error, socket) => {
    if (message) view = message;
    if (!view) { show(el("div", {id: "status", class: "status error", text: error || "connecting..."})); return; }
    screen = screen || seatScreen(socket);
    screen(view, error);
  });
}

// One screen for every human seat, handed over between turns: between moves it shows only
// public information and whose turn it is; a seat's view only after its player asks for it.
function hotseatPage(gameId) {
  const token = decodeURIComponent(location.hash.slice(1));
  where.textContent = "hot-seat";
  let view = null, screen = null;
  live(gameId, {type: "hello", hotseat: true, token}, (message, error, socket) => {
    if (message) view = message;
    if (!view) { show(el("div", {id: "status", class: "status error", text: error || "connecting..."})); return; }
    if (view.kind === "seat") { screen = screen || seatScreen(socket); screen(view, error); return; }
    where.textContent = `${view.game_name}: hot-seat`;
    const next = view.next || [];
    const note = view.turn_hidden && next.length
      ? el("p", {class: "muted", text: "Who moves in this phase is secret: each of you in turn opens your seat, " +
                                      "moves if you have a move, then hides it."}) : null;
    const reveal = seat => socket.send(JSON.stringify({type: "reveal", seat}));
    show(statusLine(view), seatChips(view),
         error ? el("div", {class: "err", id: "error", text: error}) : null, note,
         ...next.map(s => el("div", {class: "panel pass"},
           el("h2", {text: `Pass the screen to ${s.player.replace(/^human:/, "")} (${s.name}, ${s.agent})`}),
           el("button", {class: "reveal", "data-agent": s.agent, text: `I am ${s.player.replace(/^human:/, "")}: show my seat`,
                         on: {click: () => reveal(s.agent)}}))),
         transcriptPanel(view.transcript), replayLink(view));
  });
}

function watchPage(gameId) {
  where.textContent = "spectator";
  live(gameId, {type: "hello", watch: true}, (message, error) => {
    if (!message) { if (error) app.append(el("div", {class: "err", id: "error", text: error})); return; }
    where.textContent = `${message.game_name}: spectator`;
    show(statusLine(message), seatChips(message), transcriptPanel(message.transcript), replayLink(message));
  });
}

// ------------------------------------------------------------------ replay
async function replayPage(episodeId) {
  const query = new URLSearchParams(location.search);
  let step = Number(query.get("step") || 0);
  let seat = query.get("seat") || "";
  async function render() {
    let view;
    try {
      view = await getJSON(`/api/replay/${encodeURIComponent(episodeId)}?` + new URLSearchParams({step, seat}));
    } catch (err) {
      show(el("div", {class: "err", id: "error", text: err.message}));
      return;
    }
    step = view.step;
    where.textContent = `replay of ${view.episode_id}`;
    const slider = el("input", {id: "step", type: "range", min: "0", max: String(view.steps), value: String(step),
                                on: {change: e => { step = Number(e.target.value); render(); }}});
    const chooser = el("select", {id: "replay-seat", on: {change: e => { seat = e.target.value; render(); }}},
                       el("option", {value: "", text: "public only"}),
                       ...view.seats.map(s => el("option", {value: s.agent, text: `${s.name} (${s.agent})`})));
    chooser.value = view.seat || "";
    const turn = view.last_turn;
    show(el("div", {class: "panel"},
           el("h2", {text: `${view.game_name}, seed ${view.seed}: ${view.reason || ""}`}),
           el("table", {id: "roster"}, el("tr", {}, ...["seat", "name", "player", "role", "score", "outcome"].map(h => el("th", {text: h}))),
              ...view.seats.map(s => el("tr", {}, ...[s.agent, s.name, s.player, s.role, s.score, s.outcome]
                                                     .map(v => el("td", {text: v === null || v === undefined ? "" : String(v)})))))),
         el("div", {class: "status", id: "status"},
            el("button", {class: "secondary", id: "prev", text: "◀", on: {click: () => { step = Math.max(0, step - 1); render(); }}}), " ",
            slider, " ",
            el("button", {class: "secondary", id: "next", text: "▶", on: {click: () => { step = Math.min(view.steps, step + 1); render(); }}}),
            el("span", {id: "step-label", text: ` step ${step} of ${view.steps}` +
                        (turn ? `: ${turn.name} played ${turn.action}${turn.valid ? "" : " (invalid, fallback)"} in ${turn.phase}` : "")}),
            el("span", {text: "  view: "}), chooser),
         el("div", {class: "cols"},
            el("div", {class: "panel"}, el("h2", {text: view.seat ? "Seat's view at this step" : "Choose a seat to see its view"}),
               el("pre", {id: "observation", text: view.observation || ""})),
            transcriptPanel(view.transcript)));
  }
  await render();
}

// ------------------------------------------------------------------ routing
const path = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
if (path[0] === "play" && path.length === 3) seatPage(path[1], path[2]);
else if (path[0] === "watch" && path.length === 2) watchPage(path[1]);
else if (path[0] === "hotseat" && path.length === 2) hotseatPage(path[1]);
else if (path[0] === "replay" && path.length === 2) replayPage(path[1]);
else lobby().catch(err => show(el("div", {class: "err", text: err.message})));
