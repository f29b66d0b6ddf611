"""The browser arena's server (socialgym_agents.serve.arena): whole games over its WebSocket, every frame a
seat receives read for other seats' hidden information; tokens; hostile strings; the log and
the leaderboard; replay. The real-browser tests are in test_arena_browser.py."""
import asyncio
import json
import random
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

import httpx   # noqa: E402

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.arena import LOG_FILE, STATIC, create_arena_app   # noqa: E402
from socialgym_agents.serve.sessions import SessionError, SessionStore   # noqa: E402
from socialgym_env.logs import read_episodes, restore_env   # noqa: E402

HOSTILE = '<script>alert("x")</script> \'q\' </textarea><b>&amp; ünïcødé'


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("arena")
    with BackgroundServer(create_arena_app(log_dir, idle_timeout_s=120)) as url:
        yield url, log_dir


def create(url, game, seats, config=None, seed=0):
    response = httpx.post(url + "/api/games", json={"game": game, "config": config or {}, "seed": seed, "seats": seats})
    assert response.status_code == 200, response.text
    return response.json()


def humans(*names):
    return [{"kind": "human", "name": n} for n in names]


def pick_move(controls, rng):
    """A legal move from the page's controls: a finite list's entry, else one built from the
    action schema (talk is the hostile string)."""
    if controls.get("legal_action_list"):
        return rng.choice(controls["legal_action_list"])

    def value(schema):
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if schema.get("type") == "integer":
            return schema["minimum"]
        if schema.get("type") == "array":
            return [value(s) for s in schema["items"]]
        if schema.get("pattern"):                # one word
            return "ünïcødé"
        return HOSTILE[: schema.get("maxLength") or 200]

    option = rng.choice(controls["action_schema"]["oneOf"])
    move = {"action_type": option["properties"]["action_type"]["const"]}
    arg = option["properties"].get("argument")
    if arg and arg.get("maxLength") != 0:
        move["argument"] = value(arg)
    return json.dumps(move)


async def drive(ws_url, hello, frames, rng, timeout=60):
    """One page's connection: send ``hello``, keep every frame, move once per decision the
    controls offer (again after a refused move)."""
    async with websockets.connect(ws_url) as ws:
        await ws.send(json.dumps(hello))
        acted_at, view = None, None
        async with asyncio.timeout(timeout):
            while True:
                raw = await ws.recv()
                frames.append(raw)
                frame = json.loads(raw)
                if frame["type"] == "error":
                    if view is None:             # refused at hello (the token tests)
                        return
                    acted_at = None              # a refused move: choose again
                else:
                    view = frame
                if view.get("done"):
                    return
                if view.get("controls") and acted_at != view["step"]:
                    acted_at = view["step"]
                    await ws.send(json.dumps({"type": "act", "action": pick_move(view["controls"], rng)}))


def play_all(url, created, watch=True, seed=0):
    """Every human seat of a created game driven to the end (plus a spectator); the frames."""
    ws_url = url.replace("http", "ws") + "/ws/" + created["game_id"]
    links = {s["agent"]: s["link"] for s in created["seats"] if s["link"]}
    frames = {agent: [] for agent in links}
    frames["spectator"] = []

    async def main():
        tasks = [drive(ws_url, {"type": "hello", "seat": a, "token": link.split("#", 1)[1]}, frames[a],
                       random.Random(f"{seed}{a}")) for a, link in links.items()]
        if watch:
            tasks.append(drive(ws_url, {"type": "hello", "watch": True}, frames["spectator"], random.Random(0)))
        await asyncio.gather(*tasks)

    asyncio.run(main())
    return frames


def logged(log_dir, episode_id):
    return [r for r in read_episodes(Path(log_dir) / LOG_FILE) if r["episode_id"] == episode_id]


def test_whole_werewolves_game_no_seat_sees_another_seats_hidden_information(arena):
    url, log_dir = arena
    created = create(url, "werewolves", humans("Ann", "Bo", "Cy", "Di", "Ed", "Flo"), seed=4)
    frames = play_all(url, created)
    record, = logged(log_dir, created["episode_id"])
    assert record["finished"] and all(s["policy"].startswith("human:") for s in record["roster"])
    messages = record["messages"]
    hidden_somewhere = 0
    for seat in [s["agent"] for s in record["roster"]]:
        seen_texts = {m["text"] for m in messages if seat in m["receivers"]}
        # a line another group was told, which this seat was never told (in any message)
        hidden = {m["text"] for m in messages if seat not in m["receivers"]} - seen_texts
        hidden_somewhere += len(hidden)
        assert frames[seat], seat
        for raw in frames[seat]:
            frame = json.loads(raw)
            for text in hidden:
                assert text not in raw, (seat, text)
            if frame["type"] == "view":
                assert frame["seat"] == seat
                # the seats list never carries roles; the seat's own role is its known one
                assert all(set(s) == {"agent", "name", "player", "human", "alive", "to_act"} for s in frame["seats"])
        # every observation the page got is the env's own text for that seat at that step
        # (rebuilt from the log)
        raws = [t["raw"] for t in record["turns"]]
        for frame in map(json.loads, frames[seat]):
            if frame["type"] == "view" and not frame["done"]:
                env = restore_env(record["game"], record["config"], record["seed"], record["episode_id"],
                                  raws[:frame["step"]])
                assert frame["observation"] == env.observe(seat)["text"]
    assert hidden_somewhere > 0           # the game had private lines: the check could fail
    # Night phases: who acts would give roles away, so no frame names who is to move then.
    views = [json.loads(raw) for seat_frames in frames.values() for raw in seat_frames]
    hidden_turns = [f for f in views if f["type"] == "view" and f["turn_hidden"]]
    assert hidden_turns and len(hidden_turns) < len(views)
    assert all(not s["to_act"] for f in hidden_turns for s in f["seats"])
    assert all(f["thinking"] is None for f in hidden_turns)
    public = {m["text"] for m in messages if m["visibility"] == "public"}
    private = {m["text"] for m in messages if m["visibility"] != "public"} - public
    for raw in frames["spectator"]:
        frame = json.loads(raw)
        assert "observation" not in frame and "role" not in frame and "controls" not in frame
        for text in private:
            assert text not in raw
    assert json.loads(frames["spectator"][-1])["done"]


def test_tokens_are_required_and_seat_specific(arena):
    url, _ = arena
    created = create(url, "prisoners_dilemma", humans("A", "B"), config={"rounds": 1})
    ws_url = url.replace("http", "ws") + "/ws/" + created["game_id"]
    token0 = created["seats"][0]["link"].split("#", 1)[1]
    token1 = created["seats"][1]["link"].split("#", 1)[1]

    async def hello(message, path=ws_url):
        async with websockets.connect(path) as ws:
            await ws.send(json.dumps(message))
            return json.loads(await ws.recv())

    async def main():
        for bad in ({"type": "hello", "seat": "player_1", "token": token0},    # another seat's token
                    {"type": "hello", "seat": "player_1"},                     # none
                    {"type": "hello", "seat": "player_1", "token": token1[:-1] + "x"},
                    {"type": "hello", "seat": "player_9", "token": token1},    # no such seat
                    {"type": "hello", "seat": "player_1", "token": created["game_id"]}):
            answer = await hello(bad)
            assert answer["type"] == "error" and "token" in answer["message"], bad
        answer = await hello({"type": "hello", "seat": "player_1", "token": token1}, url.replace("http", "ws") + "/ws/nope")
        assert answer["type"] == "error"
        good = await hello({"type": "hello", "seat": "player_1", "token": token1})
        assert good["type"] == "view" and good["seat"] == "player_1" and good["controls"]

    asyncio.run(main())


def test_store_seat_tokens():
    store = SessionStore(max_sessions=2, idle_timeout_s=None, worker_thread=False)
    session = asyncio.run(store.create(lambda: object(), seats=["player_0", "player_1"]))
    t0, t1 = session.seat_tokens["player_0"], session.seat_tokens["player_1"]
    assert t0 != t1 and len(t0) >= 40
    assert store.get(session.id, t0, seat="player_0") is session
    for seat, token in (("player_0", t1), ("player_0", session.token), ("player_2", t0), ("player_0", None)):
        with pytest.raises(SessionError):
            store.get(session.id, token, seat=seat)
    with pytest.raises(SessionError):             # a seat token is not the session's own token
        store.get(session.id, t0)


def test_hostile_names_and_talk_are_data_never_markup(arena):
    url, log_dir = arena
    name = '<b onclick=x>"Zoë"</textarea>'
    created = create(url, "spyfall", humans(name, "B", "C", "D"), config={"rounds": 1}, seed=2)
    assert created["seats"][0]["player"] == "human:" + name
    frames = play_all(url, created, watch=False)
    record, = logged(log_dir, created["episode_id"])
    assert any("<script>" in t.get("raw", "") for t in record["turns"])        # the talk was played
    shown = [line for raw in frames["player_1"] for line in json.loads(raw).get("transcript", [])]
    assert any(HOSTILE[:20] in line for line in shown)                         # ...and sent as JSON text
    # Pages are the one static file, whatever the path names: no HTML is ever built from data.
    page = (STATIC / "arena.html").read_bytes()
    for path in ("/", f"/play/{created['game_id']}/player_0", "/watch/%3Cscript%3E", "/replay/%3Cb%3E"):
        response = httpx.get(url + path)
        assert response.content == page, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
    for path in ("/api/games", "/api/episodes", f"/api/replay/{created['episode_id']}?step=3&seat=player_0"):
        assert httpx.get(url + path).headers["content-type"].startswith("application/json")
    script = (STATIC / "arena.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script


@pytest.mark.parametrize("body, fragment", [
    ({"game": "chess", "seats": [{"kind": "human", "name": "a"}]}, "one entry per seat"),
    ({"game": "nope", "seats": []}, "unknown game"),
    ({"game": "prisoners_dilemma", "seats": [{"kind": "policy", "spec": "smollm2"}, {"kind": "human", "name": "a"}]},
     "not offered"),
    ({"game": "prisoners_dilemma", "seats": [{"kind": "policy", "spec": "openai:http://evil/v1"},
                                             {"kind": "human", "name": "a"}]}, "not offered"),
    ({"game": "prisoners_dilemma", "seats": [{"kind": "human", "name": "a\u0000b"}, {"kind": "human", "name": "c"}]},
     "control"),
    ({"game": "prisoners_dilemma", "seats": [{"kind": "human", "name": "Al"}, {"kind": "human", "name": "al"}]},
     "both called"),
    ({"game": "prisoners_dilemma", "config": "{rounds", "seats": []}, "JSON object"),
    ({"game": "prisoners_dilemma", "config": "[" * 1999, "seats": []}, "JSON object"),
    ({"game": "prisoners_dilemma", "seed": -1, "seats": humans("a", "b")}, "seed"),
])
def test_bad_lobby_requests_get_one_clear_line(arena, body, fragment):
    url, _ = arena
    response = httpx.post(url + "/api/games", json=body)
    assert response.status_code == 400 and fragment in response.json()["detail"], response.text


def test_illegal_and_untimely_moves_are_refused_and_change_nothing(arena):
    url, _ = arena
    created = create(url, "prisoners_dilemma", humans("A", "B"), config={"rounds": 1})
    ws_url = url.replace("http", "ws") + "/ws/" + created["game_id"]
    tokens = [s["link"].split("#", 1)[1] for s in created["seats"]]

    async def until(ws, want):
        async with asyncio.timeout(10):
            while True:
                frame = json.loads(await ws.recv())
                if want(frame):
                    return frame

    async def main():
        async with websockets.connect(ws_url) as ws1, websockets.connect(ws_url) as ws0:
            # player_1 moves first in the simultaneous round: held until player_0 has moved
            await ws1.send(json.dumps({"type": "hello", "seat": "player_1", "token": tokens[1]}))
            first = await until(ws1, lambda f: f["type"] == "view")
            assert first["controls"]["legal_action_list"] == ["cooperate", "defect"]
            await ws1.send(json.dumps({"type": "act", "action": "betray"}))
            refused = await until(ws1, lambda f: f["type"] == "error")
            assert "not a legal move" in refused["message"]
            await ws1.send(json.dumps({"type": "act", "action": "defect"}))
            held = await until(ws1, lambda f: f["type"] == "view" and f["submitted"])
            assert held["submitted"] == "defect" and held["controls"] is None and held["step"] == 0
            await ws1.send(json.dumps({"type": "act", "action": "cooperate"}))
            assert "already moved" in (await until(ws1, lambda f: f["type"] == "error"))["message"]
            await ws0.send(json.dumps({"type": "hello", "seat": "player_0", "token": tokens[0]}))
            await until(ws0, lambda f: f["type"] == "view" and f["controls"])
            await ws0.send(json.dumps({"type": "act", "action": "cooperate"}))
            done = await until(ws0, lambda f: f["type"] == "view" and f["done"])
            await ws0.send(json.dumps({"type": "act", "action": "defect"}))
            assert "over" in (await until(ws0, lambda f: f["type"] == "error"))["message"]
            return done

    done = asyncio.run(main())
    assert done["step"] == 2 and done["outcome"] == "loss"        # cooperate against the held defect


def test_arena_games_are_logged_and_rated_on_the_leaderboard(arena, tmp_path):
    from typer.testing import CliRunner

    from socialgym_env.cli import app
    url, log_dir = arena
    episodes = []
    for seed in range(4):
        created = create(url, "prisoners_dilemma", [{"kind": "human", "name": "Ada"},
                                                    {"kind": "policy", "spec": "scripted:constant:cooperate"}],
                         config={"rounds": 2}, seed=seed)
        frames = play_all(url, created, watch=False, seed=seed)
        assert json.loads(frames["player_0"][-1])["done"]
        episodes.append(created["episode_id"])
    for episode_id in episodes:
        record, = logged(log_dir, episode_id)
        assert [s["policy"] for s in record["roster"]] == ["human:Ada", "scripted:constant:cooperate"]
    result = CliRunner().invoke(app, ["leaderboard", str(log_dir), "--out", str(tmp_path), "--bootstrap", "20",
                                      "--rating", "openskill"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "leaderboard.json").read_text())
    assert "human:Ada" in json.dumps(summary["overall"])
    # openskill beside Bradley–Terry: the file the leaderboard wrote and the arena's live table agree
    written = {r["player"]: r for r in json.loads((tmp_path / "openskill.json").read_text())["ratings"]}
    live = {r["player"]: r for r in httpx.get(url + "/api/ratings").json()["ratings"]}
    assert written["human:Ada"]["episodes"] >= 4 and "openskill" in result.output
    assert live["human:Ada"]["episodes"] == written["human:Ada"]["episodes"]
    assert live["human:Ada"]["mu"] == pytest.approx(written["human:Ada"]["mu"])
    listed = httpx.get(url + "/api/episodes").json()
    assert set(episodes) <= {e["episode_id"] for e in listed}


def test_live_ratings_start_from_the_log_folder_and_follow_each_logged_game(tmp_path):
    """A fresh arena rates what its log folder holds, then each game as it is logged."""
    log_dir = tmp_path / "logs"
    with BackgroundServer(create_arena_app(log_dir, idle_timeout_s=120)) as url:
        assert httpx.get(url + "/api/ratings").json()["ratings"] == []
        seats = [{"kind": "policy", "spec": "scripted:constant:defect"},
                 {"kind": "policy", "spec": "scripted:constant:cooperate"}]
        for seed in range(3):
            created = create(url, "prisoners_dilemma", seats, config={"rounds": 2}, seed=seed)
            for _ in range(200):
                if (log_dir / LOG_FILE).exists() and logged(log_dir, created["episode_id"]):
                    break
                time.sleep(0.05)
        table = httpx.get(url + "/api/ratings").json()["ratings"]
    assert [r["player"] for r in table] == ["scripted:constant:defect", "scripted:constant:cooperate"]
    assert [r["episodes"] for r in table] == [3, 3]
    with BackgroundServer(create_arena_app(log_dir, idle_timeout_s=120)) as url:    # restarted: from the log
        assert httpx.get(url + "/api/ratings").json()["ratings"] == table


def test_replay_steps_through_a_finished_episode(arena):
    url, log_dir = arena
    created = create(url, "liars_dice", humans("A") + [{"kind": "policy", "spec": "scripted:heuristic"}] * 2,
                     config={"dice": 1}, seed=5)
    play_all(url, created, watch=False)
    record, = logged(log_dir, created["episode_id"])
    steps = len(record["turns"])
    start = httpx.get(url + f"/api/replay/{created['episode_id']}?step=0&seat=player_1").json()
    end = httpx.get(url + f"/api/replay/{created['episode_id']}?step={steps}").json()
    assert start["steps"] == steps and start["last_turn"] is None and start["observation"]
    assert end["transcript"] == record["transcript"] and end["observation"] is None
    assert [s["role"] for s in end["seats"]] == [s["role"] for s in record["roster"]]
    middle = httpx.get(url + f"/api/replay/{created['episode_id']}?step=1&seat=player_0").json()
    assert middle["last_turn"]["action"] == record["turns"][0]["action"]
    assert httpx.get(url + "/api/replay/not-there").status_code == 404


def test_same_seed_same_moves_same_transcript(arena):
    url, log_dir = arena
    records = []
    for _ in range(2):
        created = create(url, "liars_dice", humans("A", "B") + [{"kind": "policy", "spec": "scripted:heuristic"}],
                         config={"dice": 2}, seed=11)
        play_all(url, created, watch=False, seed=3)
        records.append(logged(log_dir, created["episode_id"])[0])
    assert records[0]["transcript"] == records[1]["transcript"]
    assert [t["raw"] for t in records[0]["turns"]] == [t["raw"] for t in records[1]["turns"]]


def test_arena_command_binds_locally_unless_told():
    from typer.testing import CliRunner

    from socialgym_env.cli import app
    result = CliRunner().invoke(app, ["arena", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--allow-remote" in result.output
    result = CliRunner().invoke(app, ["arena", "--models", "scripted:random"])
    assert result.exit_code == 2 and "model specs" in result.output


def test_idle_and_failed_games_are_logged_as_failed_with_the_reason(tmp_path):
    dead_server = "openai:m@http://127.0.0.1:9/v1?attempts=1&timeout=2&max_retries=0"
    with BackgroundServer(create_arena_app(tmp_path, models=(dead_server,), idle_timeout_s=0.3)) as url:
        idle = create(url, "prisoners_dilemma", humans("A", "B"))
        failing = create(url, "prisoners_dilemma", [{"kind": "policy", "spec": dead_server}] + humans("B"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not ((tmp_path / LOG_FILE).exists() and
                                                    len((tmp_path / LOG_FILE).read_text().splitlines()) == 2):
            time.sleep(0.1)
    records = {r["episode_id"]: r for r in read_episodes(tmp_path / LOG_FILE)}
    assert records[idle["episode_id"]]["failed"] and "abandoned" in records[idle["episode_id"]]["error"]
    assert records[failing["episode_id"]]["failed"] and f"{dead_server} failed" in records[failing["episode_id"]]["error"]
    assert records[failing["episode_id"]]["roster"][0]["policy"] == dead_server


def test_hotseat_shows_a_seat_only_when_asked_and_only_while_it_is_to_move(arena):
    url, log_dir = arena
    created = create(url, "prisoners_dilemma", humans("A", "B"), config={"rounds": 1})
    ws_url = url.replace("http", "ws") + "/ws/" + created["game_id"]
    host_token = created["hotseat"].split("#", 1)[1]
    seat_token = created["seats"][0]["link"].split("#", 1)[1]

    async def main():
        async with websockets.connect(ws_url) as ws:          # a seat's token is not the game's
            await ws.send(json.dumps({"type": "hello", "hotseat": True, "token": seat_token}))
            assert json.loads(await ws.recv())["type"] == "error"
        frames = []
        async with websockets.connect(ws_url) as ws:
            async def next_frame():
                frames.append(json.loads(await ws.recv()))
                return frames[-1]
            await ws.send(json.dumps({"type": "hello", "hotseat": True, "token": host_token}))
            first = await next_frame()
            assert first["kind"] == "hotseat" and [s["agent"] for s in first["next"]] == ["player_0", "player_1"]
            await ws.send(json.dumps({"type": "act", "action": "defect"}))      # nobody revealed: ignored
            await ws.send(json.dumps({"type": "reveal", "seat": "player_7"}))
            assert "no move" in (await next_frame())["message"]
            for agent, move in (("player_1", "cooperate"), ("player_0", "defect")):
                await ws.send(json.dumps({"type": "reveal", "seat": agent}))
                shown = await next_frame()
                assert shown["kind"] == "seat" and shown["seat"] == agent and shown["controls"]
                await ws.send(json.dumps({"type": "act", "action": move}))
                after = await next_frame()
                while after.get("kind") == "seat":                            # until handed back
                    after = await next_frame()
                assert after["kind"] == "hotseat" and "observation" not in after
            while not frames[-1].get("done"):
                await next_frame()
            return frames

    frames = asyncio.run(main())
    assert frames[-1]["done"]
    passes = [f for f in frames if f.get("kind") == "hotseat"]
    assert all("observation" not in f and "role" not in f and "controls" not in f for f in passes)
    record, = logged(log_dir, created["episode_id"])
    assert [t["action"] for t in record["turns"]] == ["defect", "cooperate"]


def test_hotseat_in_a_secret_phase_offers_every_seat_not_just_the_actors(arena):
    url, log_dir = arena
    created = create(url, "werewolves", humans("A", "B", "C", "D", "E", "F"), seed=4)
    ws_url = url.replace("http", "ws") + "/ws/" + created["game_id"]
    rng = random.Random(0)
    passes, hid = [], 0

    async def main():
        nonlocal hid
        async with websockets.connect(ws_url) as ws:
            async def frame():
                return json.loads(await ws.recv())
            await ws.send(json.dumps({"type": "hello", "hotseat": True, "token": created["hotseat"].split("#")[1]}))
            async def reveal(view):
                passes.append(view)
                await ws.send(json.dumps({"type": "reveal", "seat": rng.choice(view["next"])["agent"]}))

            async with asyncio.timeout(60):
                expecting, last_pass = False, None     # a reveal sent, its seat frame not yet in
                while True:
                    view = await frame()
                    if view["type"] == "error":        # a reveal from a stale pass frame: again
                        expecting = False
                        view = last_pass
                    elif view["done"]:
                        return
                    if view["kind"] == "seat" and expecting:
                        expecting = False
                        if view["controls"]:
                            await ws.send(json.dumps({"type": "act", "action": pick_move(view["controls"], rng)}))
                        else:
                            hid += 1
                            await ws.send(json.dumps({"type": "hide"}))
                    elif view["kind"] == "hotseat":
                        last_pass = view
                        if view["next"] and not expecting:
                            expecting = True
                            await reveal(view)

    asyncio.run(main())
    record, = logged(log_dir, created["episode_id"])
    assert record["finished"] and hid > 0
    secret = [p for p in passes if p["turn_hidden"]]
    assert secret and all("observation" not in p for p in passes)
    for view in secret:      # every living human seat is offered, whatever its role
        alive = {s["agent"] for s in view["seats"] if s["alive"]}
        assert {s["agent"] for s in view["next"]} == alive


def test_games_no_one_holds_a_seat_of_are_reaped_and_logged_as_abandoned(tmp_path):
    """A game whose creator never opened a seat link, and one whose players all left, leave "Live
    games" once no seat or hot-seat page has held a human seat for ``abandon_after_s``, each
    logged as a failed episode saying so; a game with a seat page open stays, and a spectator
    holds no seat (issue 65 item 14)."""
    with BackgroundServer(create_arena_app(tmp_path, idle_timeout_s=120, abandon_after_s=0.6)) as url:
        never_joined = create(url, "prisoners_dilemma", humans("A", "B"))
        held = create(url, "prisoners_dilemma", humans("C") + [{"kind": "policy", "spec": "scripted:random"}])
        watched = create(url, "prisoners_dilemma", humans("D", "E"))
        seat = next(s for s in held["seats"] if s["link"])

        def live():
            return {g["game_id"] for g in httpx.get(url + "/api/games").json()}

        async def main():
            ws_url = url.replace("http", "ws") + "/ws/"
            async with websockets.connect(ws_url + held["game_id"]) as player, \
                    websockets.connect(ws_url + watched["game_id"]) as spectator:
                await player.send(json.dumps({"type": "hello", "seat": seat["agent"], "token": seat["link"].split("#")[1]}))
                await spectator.send(json.dumps({"type": "hello", "watch": True}))
                assert json.loads(await player.recv())["type"] == "view"
                assert json.loads(await spectator.recv())["type"] == "view"
                assert live() == {never_joined["game_id"], held["game_id"], watched["game_id"]}
                await asyncio.sleep(1.0)
                assert await asyncio.to_thread(live) == {held["game_id"]}      # still held
            await asyncio.sleep(1.0)                                              # the player left
            assert await asyncio.to_thread(live) == set()

        asyncio.run(main())
    records = {r["episode_id"]: r for r in read_episodes(tmp_path / LOG_FILE)}
    for game in (never_joined, held, watched):
        assert records[game["episode_id"]]["failed"]
        assert "abandoned: no one held a human seat for 0.6 s" in records[game["episode_id"]]["error"]
    assert len(records) == 3


def test_a_finished_or_policy_only_game_is_never_abandoned():
    from socialgym_agents.serve.arena_game import ArenaGame

    game = ArenaGame.__new__(ArenaGame)
    game.plans = {"player_0": type("Plan", (), {"human": False})()}
    game.error, game.unheld_since = None, 0.0
    game.env = type("Env", (), {"state": type("State", (), {"result": None})()})()
    assert not game.abandoned(1.0, now=100.0)                      # no human seat: plays itself out
    game.plans["player_1"] = type("Plan", (), {"human": True})()
    assert game.abandoned(1.0, now=100.0) and not game.abandoned(1.0, now=0.5)
    game.env.state.result = object()
    assert not game.abandoned(1.0, now=100.0)                      # over: nothing to reap
