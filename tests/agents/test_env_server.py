"""The OpenEnv-protocol env server (socialgym_agents.serve): OpenEnv's own client drives a live server on
127.0.0.1; seeds, seat privacy, session limits, idle expiry and disconnects are checked."""
import asyncio
import json
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient   # noqa: E402

import socialgym_env   # noqa: E402
from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.game_session import GameDefaults   # noqa: E402
from socialgym_agents.serve.openenv_app import create_openenv_app   # noqa: E402

GAMES = [g["id"] for g in socialgym_env.list_games()]


@pytest.fixture(scope="module")
def server_url():
    with BackgroundServer(create_openenv_app(max_sessions=64, idle_timeout_s=60)) as url:
        yield url


def first_move(result):
    legal = result.observation["legal_actions"]
    return {"message": legal[0] if legal else "pass"}


async def play(client, max_steps=400, **reset):
    """One episode through an OpenEnv client; returns every observation text and the result."""
    result = await client.reset(**reset)
    texts = [result.observation["text"]]
    steps = 0
    while not result.done and steps < max_steps:
        result = await client.step(first_move(result))
        texts.append(result.observation["text"])
        steps += 1
    return texts, result


def test_openenv_client_plays_every_game_to_its_end(server_url):
    from openenv.core.generic_client import GenericEnvClient

    async def main():
        outcomes = {}
        async with GenericEnvClient(base_url=server_url) as client:
            for game in GAMES:
                _, result = await play(client, game=game, seed=5)
                outcomes[game] = (result.done, result.reward, result.observation)
            state = await client.state()
        return outcomes, state

    outcomes, state = asyncio.run(main())
    for game, (done, reward, observation) in outcomes.items():
        assert done and observation["game"] == game, game
        assert reward == observation["info"]["reward"] and observation["info"]["outcome"], game   # the seat's outcome
    assert state["game"] == GAMES[-1] and state["seed"] == 5 and state["done"]


def test_seeds_are_honoured_and_sessions_are_independent(server_url):
    from openenv.core.generic_client import GenericEnvClient

    async def episode(seed):
        async with GenericEnvClient(base_url=server_url) as client:
            return await play(client, game="liars_dice", seed=seed, opponents="scripted:random")

    async def main():                                   # three concurrent sessions, interleaved
        return await asyncio.gather(episode(11), episode(11), episode(12))

    (texts_a, end_a), (texts_b, end_b), (texts_c, _) = asyncio.run(main())
    assert texts_a == texts_b and end_a.reward == end_b.reward          # byte for byte
    assert texts_a != texts_c


def test_a_seat_sees_only_its_own_view(server_url):
    """Werewolves tell the wolves who they are in a team-only message: a villager's session must
    never receive it, a wolf's must (the positive control), and no payload carries the record."""
    from websockets.sync.client import connect

    def payloads(seat_or_role, seed):
        received = []
        with connect(server_url.replace("http", "ws") + "/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"game": "werewolves", "seat": seat_or_role, "seed": seed}}))
            for _ in range(200):
                raw = ws.recv(timeout=30)
                received.append(raw)
                data = json.loads(raw)["data"]
                if data["done"]:
                    break
                legal = data["observation"]["legal_actions"]
                ws.send(json.dumps({"type": "step", "data": {"message": legal[0] if legal else "pass"}}))
        return received

    for seed in (1, 2, 3):
        villager = payloads("villager", seed)
        wolf = payloads("werewolf", seed)
        assert not any("The Werewolves are" in raw for raw in villager)
        assert any("The Werewolves are" in raw for raw in wolf)
        for raw in villager + wolf:
            info = json.loads(raw)["data"]["observation"]["info"]
            assert "record" not in info and "true_role" not in info


def test_a_disconnect_mid_episode_frees_the_session(server_url):
    import httpx
    from websockets.sync.client import connect

    def active():
        return httpx.get(server_url + "/health").json()["active_sessions"]

    before = active()
    ws = connect(server_url.replace("http", "ws") + "/ws")
    ws.send(json.dumps({"type": "reset", "data": {"game": "chess", "seed": 0}}))
    json.loads(ws.recv(timeout=30))
    assert active() == before + 1
    ws.socket.close()                                  # the client vanishes: no close frame
    deadline = time.monotonic() + 10
    while active() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert active() == before


def test_http_sessions_need_their_token():
    with TestClient(create_openenv_app()) as http:
        result = http.post("/reset", json={"seed": 4, "game": "rock_paper_scissors"}).json()
        session = result["observation"]["session"]
        ok = {"session_id": session["id"], "session_token": session["token"]}
        stolen = {"session_id": session["id"], "session_token": "guess"}
        assert http.post("/step", json={"action": {"message": "rock"}, **stolen}).status_code == 401
        assert http.get("/state", params=stolen).status_code == 401
        assert http.post("/step", json={"action": {"move": "rock"}, **ok}).status_code == 422
        step = http.post("/step", json={"action": {"message": "rock"}, **ok})
        assert step.status_code == 200 and http.get("/state", params=ok).json()["step_count"] == 1
        assert http.post("/close", json=ok).json() == {"closed": True}
        assert http.post("/step", json={"action": {"message": "rock"}, **ok}).status_code == 401
        assert set(http.get("/schema").json()) == {"action", "observation", "state"}


def test_bad_requests_get_one_clear_error():
    with TestClient(create_openenv_app()) as http:
        refused = http.post("/reset", json={"opponents": "openai:gpt-4o"})
        assert refused.status_code == 400 and "scripted" in refused.json()["detail"]
        assert "no_such_game" in http.post("/reset", json={"game": "no_such_game"}).json()["detail"]
        assert http.post("/reset", json={"seed": -1}).status_code == 400
        assert http.get("/health").json()["active_sessions"] == 0         # refused resets keep nothing
        with http.websocket_connect("/ws") as ws:
            ws.send_text("not json")
            assert ws.receive_json()["data"]["code"] == "INVALID_JSON"
            ws.send_text(json.dumps({"type": "step", "data": {"message": "x"}}))
            assert ws.receive_json()["data"]["code"] == "EXECUTION_ERROR"       # no reset yet
            ws.send_text(json.dumps({"type": "fly"}))
            assert ws.receive_json()["data"]["code"] == "UNKNOWN_TYPE"


def test_capacity_and_idle_timeout():
    app = create_openenv_app(GameDefaults(game="chicken"), max_sessions=1, idle_timeout_s=0.3)
    with TestClient(app) as http:
        with http.websocket_connect("/ws") as first:
            first.send_text(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert first.receive_json()["type"] == "observation"
            with http.websocket_connect("/ws") as second:
                assert second.receive_json()["data"]["code"] == "CAPACITY_REACHED"
            deadline = time.monotonic() + 10                 # silent: the reaper closes it
            while http.get("/health").json()["active_sessions"] and time.monotonic() < deadline:
                time.sleep(0.05)
            health = http.get("/health").json()
            assert health["active_sessions"] == 0 and health["sessions_expired"] == 1


def test_serve_env_refuses_a_public_bind_without_consent():
    from typer.testing import CliRunner

    from socialgym_env.cli import app

    result = CliRunner().invoke(app, ["serve-env", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--allow-remote" in result.output


@pytest.mark.parametrize("worker_thread", [True, False])
def test_session_store_limits_tokens_and_expiry(worker_thread):
    from socialgym_agents.serve.sessions import CapacityError, SessionError, SessionStore

    class Held:
        closed = False

        def close(self):
            self.closed = True

    async def main():
        store = SessionStore(max_sessions=2, idle_timeout_s=5, worker_thread=worker_thread)
        a, b = await store.create(Held), await store.create(Held)
        with pytest.raises(CapacityError):
            await store.create(Held)
        assert store.get(a.id, a.token) is a and a.token != b.token
        for wrong in (b.token, "", None):
            with pytest.raises(SessionError):
                store.get(a.id, wrong)
        order = []
        await asyncio.gather(*(store.run(a, order.append, i) for i in range(20)))
        assert order == list(range(20))                     # one session's calls run in order
        b.last_active = a.last_active + 3                  # b was active 3 s after a
        assert await store.reap(now=a.last_active + 5.5) == 1 and a.value.closed and not b.value.closed
        with pytest.raises(SessionError):
            store.get(a.id, a.token)
        await store.create(Held)                            # the freed slot is usable again
        await store.close_all()
        return store

    assert len(asyncio.run(main())) == 0


def test_dockerfile_copies_what_exists_and_serves_the_registered_command():
    """No Docker daemon in CI: check what the image build depends on instead."""
    import configparser
    import shlex

    from tests.conftest import ROOT

    lines = (ROOT / "Dockerfile").read_text().splitlines()
    copies = [shlex.split(line)[1:-1] for line in lines if line.startswith("COPY ")]
    assert copies and all((ROOT / source).exists() for sources in copies for source in sources)
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "serve" in cfg["options.extras_require"] and 'pip install --no-cache-dir ".[serve]"' in "\n".join(lines)
    commands = cfg["options.entry_points"]["socialgym.commands"]
    cmd = json.loads(next(line for line in lines if line.startswith("CMD "))[4:])
    assert cmd[:2] == ["socialgym", "serve-env"] and "serve-env = socialgym_agents.serve.cli:register [serve]" in commands


def test_a_game_bug_is_reported_and_the_session_survives(monkeypatch):
    from socialgym_agents.serve.game_session import GameSession

    def broken_step(self, action):
        raise RuntimeError("planted bug")

    monkeypatch.setattr(GameSession, "step", broken_step)
    with TestClient(create_openenv_app(), raise_server_exceptions=False) as http:
        with http.websocket_connect("/ws") as ws:
            ws.send_text(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert ws.receive_json()["type"] == "observation"
            ws.send_text(json.dumps({"type": "step", "data": {"message": "defect"}}))
            error = ws.receive_json()["data"]
            assert error["code"] == "EXECUTION_ERROR" and "planted bug" in error["message"]
            ws.send_text(json.dumps({"type": "state"}))
            assert ws.receive_json()["data"]["seed"] == 0             # still the same live session
        session = http.post("/reset", json={"seed": 0}).json()["observation"]["session"]
        failed = http.post("/step", json={"action": {"message": "defect"}, "session_id": session["id"],
                                          "session_token": session["token"]})
        assert failed.status_code == 500 and "planted bug" in failed.json()["detail"]


def test_a_client_reconnecting_after_the_idle_timeout_resumes_or_is_told_why_not():
    """OpenEnv's own client, a server with a 1 s idle timeout: a learner that thinks longer
    than that has its socket closed; reconnecting and resetting with the session's id and token
    (sent in every reset's observation) takes the same episode up where it was, and the episode
    ends exactly as one played without the pause. Past one more timeout the game is gone, and
    the reconnect is told so in one message."""
    from openenv.core.generic_client import GenericEnvClient

    timeout = 1.0

    async def main():
        async with GenericEnvClient(base_url=url) as client:
            straight = await play(client, game="liars_dice", seed=7)
        async with GenericEnvClient(base_url=url) as client:
            result = await client.reset(game="liars_dice", seed=7)
            session = result.observation["session"]
            texts = [result.observation["text"]]
            await asyncio.sleep(timeout * 1.5)           # idle: the reaper parks it, the socket closes
            with pytest.raises(Exception):
                await client.step(first_move(result))
            await client.disconnect()                    # OpenEnv's client reconnects on its next call
            result = await client.reset(session_id=session["id"], session_token=session["token"])
            assert result.observation["text"] == texts[0] and not result.done      # where it was
            while not result.done:
                result = await client.step(first_move(result))
                texts.append(result.observation["text"])
            resumed = (texts, result)
        async with GenericEnvClient(base_url=url) as client:
            result = await client.reset(game="liars_dice", seed=8)
            session = result.observation["session"]
            await asyncio.sleep(timeout * 3.5)           # idle, then unclaimed: closed for good
            await client.disconnect()
            with pytest.raises(RuntimeError) as gone:
                await client.reset(session_id=session["id"], session_token=session["token"])
            with pytest.raises(RuntimeError) as wrong:
                await client.reset(session_id=session["id"], session_token="not-the-token")
        return straight, resumed, str(gone.value), str(wrong.value)

    with BackgroundServer(create_openenv_app(idle_timeout_s=timeout)) as url:
        (texts_a, end_a), (texts_b, end_b), gone, wrong = asyncio.run(main())
    assert texts_a == texts_b and end_a.reward == end_b.reward
    assert "was closed after 1 s idle and 1 s more unclaimed; its episode is gone" in gone
    assert "unknown session or wrong session token" in wrong      # the note needs the token


def test_one_session_plays_several_seats_each_view_its_own(server_url):
    """``seats``: one OpenEnv client plays seats 0 and 2 of Liar's Dice (seat 1 scripted) in one
    session; every observation is the view of the seat to act, exactly as the engine shows
    that seat, and the end gives each played seat its rule-decided reward."""
    from openenv.core.generic_client import GenericEnvClient

    async def main():
        async with GenericEnvClient(base_url=server_url) as client:
            result = await client.reset(game="liars_dice", seats=[0, "player_2"], seed=9, opponents="scripted:random")
            seen = []
            while not result.done:
                seen.append((result.observation["seat"], result.observation["text"]))
                result = await client.step(first_move(result))
            return seen, result

    seen, end = asyncio.run(main())
    assert {seat for seat, _ in seen} == {"player_0", "player_2"}
    # The same moves replayed in process (seat 1 scripted with the same seat seed).
    from socialgym_agents.serve.game_session import SeatsEnv
    replay = SeatsEnv("liars_dice", ["player_0", "player_2"], "scripted:random")
    _, info = replay.reset(seed=9)
    for seat, text in seen:
        assert replay.learner == seat and replay.game.observe(seat)["text"] == text
        legal = info.get("legal_action_list")
        *_, info = replay.step(legal[0] if legal else "pass")
    assert replay.done and end.observation["info"]["rewards_by_seat"] == {
        seat: replay.record["rewards"][seat] for seat in ("player_0", "player_2")}


def test_seat_tokens_keep_each_seat_to_its_own_caller(server_url):
    """Over HTTP a several-seat session hands out a token per seat: a caller holding one seat's
    token reads only that seat's view, moves only on its turn, and cannot use it for another."""
    import httpx

    reset = httpx.post(server_url + "/reset", json={"game": "kuhn_poker", "seats": [0, 1], "seed": 4}).json()
    keys = reset["observation"]["session"]
    tokens = keys["seat_tokens"]
    assert set(tokens) == {"player_0", "player_1"} and len(set(tokens.values()) | {keys["token"]}) == 3

    def view(seat, token):
        return httpx.get(server_url + "/state", params={"session_id": keys["id"], "seat": seat,
                                                        "seat_token": token})

    first, second = view("player_0", tokens["player_0"]).json(), view("player_1", tokens["player_1"]).json()
    assert first["observation"]["your_turn"] and not second["observation"]["your_turn"]
    assert first["observation"]["text"] != second["observation"]["text"]          # each its own card
    assert view("player_1", tokens["player_0"]).status_code >= 400                # not that seat's token
    early = httpx.post(server_url + "/step", json={"session_id": keys["id"], "seat": "player_1",
                                                    "seat_token": tokens["player_1"], "action": {"message": "bet"}})
    assert early.status_code == 400 and "not player_1's turn: player_0 is to act" in early.json()["detail"]
    moved = httpx.post(server_url + "/step", json={"session_id": keys["id"], "seat": "player_0",
                                                    "seat_token": tokens["player_0"], "action": {"message": "check"}})
    after = moved.json()["observation"]
    assert after["seat"] == "player_0" and not after["your_turn"]                  # its own view, not the next seat's
    assert view("player_1", tokens["player_1"]).json()["observation"]["your_turn"]


def test_a_reset_that_changes_the_seats_revokes_every_old_seat_token():
    """Issue 65.1: liars_dice with seats [0, 2], then the same session re-reset with seat 0 (a scripted
    opponent now plays player_2): the old player_2 token no longer reads /state (its dice are the
    opponent's now) and the old player_0 token no longer moves (401 both); a re-reset with the same seats
    keeps the tokens, one with other seats answers new ones and revokes the old."""
    with TestClient(create_openenv_app()) as http:
        keys = http.post("/reset", json={"game": "liars_dice", "seats": [0, 2], "seed": 3}).json()["observation"]["session"]
        old = keys["seat_tokens"]
        owner = {"session_id": keys["id"], "session_token": keys["token"]}

        def as_seat(seat, token):
            return {"session_id": keys["id"], "seat": seat, "seat_token": token}

        assert http.get("/state", params=as_seat("player_2", old["player_2"])).status_code == 200
        again = http.post("/reset", json={**owner, "game": "liars_dice", "seats": [2, 0], "seed": 4}).json()["observation"]["session"]
        assert again["seat_tokens"] == old                            # the same seats: the same holders
        single = http.post("/reset", json={**owner, "game": "liars_dice", "seat": 0, "seed": 5}).json()["observation"]["session"]
        assert "seat_tokens" not in single
        assert http.get("/state", params=as_seat("player_2", old["player_2"])).status_code == 401
        assert http.get("/state", params=as_seat("player_0", old["player_0"])).status_code == 401
        move = http.post("/step", json={**as_seat("player_0", old["player_0"]), "action": {"message": "bid 1 1"}})
        assert move.status_code == 401
        assert http.get("/state", params=owner).json()["step_count"] == 0
        other = http.post("/reset", json={**owner, "game": "liars_dice", "seats": [0, 1], "seed": 6}).json()["observation"]["session"]
        assert set(other["seat_tokens"]) == {"player_0", "player_1"}
        assert not set(other["seat_tokens"].values()) & set(old.values())
        assert http.get("/state", params=as_seat("player_0", old["player_0"])).status_code == 401
        assert http.get("/state", params=as_seat("player_0", other["seat_tokens"]["player_0"])).status_code == 200
    with TestClient(create_openenv_app()) as http, http.websocket_connect("/ws") as ws:   # the WebSocket reset too
        ws.send_text(json.dumps({"type": "reset", "data": {"game": "liars_dice", "seats": [0, 2], "seed": 3}}))
        keys = ws.receive_json()["data"]["observation"]["session"]
        ws.send_text(json.dumps({"type": "reset", "data": {"game": "liars_dice", "seat": 0, "seed": 3}}))
        assert "seat_tokens" not in ws.receive_json()["data"]["observation"]["session"]
        stale = {"session_id": keys["id"], "seat": "player_2", "seat_token": keys["seat_tokens"]["player_2"]}
        assert http.get("/state", params=stale).status_code == 401
