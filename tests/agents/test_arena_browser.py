"""The arena in a real browser: headless Chromium (Debian's chromium + chromium-driver) driven by
Selenium through the lobby and whole games, clicking the controls the page builds.

Skipped only when no Chromium or chromedriver is on the machine (CI's ``make setup-test``
installs both)."""
import json
import shutil
import time

import pytest

pytest.importorskip("fastapi")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.common.exceptions import StaleElementReferenceException   # noqa: E402
from selenium.webdriver.common.by import By   # noqa: E402
from selenium.webdriver.support.ui import Select   # noqa: E402

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.arena import LOG_FILE, create_arena_app   # noqa: E402
from socialgym_env.logs import read_episodes   # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")
MODEL = "smollm2?max_new_tokens=16"
NAME = '<script>alert(1)</script>"Ann"'
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("no Chromium and chromedriver on this machine (apt-get install chromium chromium-driver)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1200,900", "--disable-background-networking"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("arena-browser")
    with BackgroundServer(create_arena_app(log_dir, models=(MODEL,), idle_timeout_s=300)) as url:
        yield url, log_dir


def wait_for(condition, timeout=30.0, what="the page"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except StaleElementReferenceException:       # the page re-rendered under us
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def create_in_lobby(driver, url, game, config, seats):
    """Fill in the lobby's form and create the game; returns the seat links it shows."""
    driver.get(url + "/")
    wait_for(lambda: driver.find_elements(By.ID, "kind-player_0"), what="the lobby")
    Select(driver.find_element(By.ID, "game")).select_by_value(game)
    box = driver.find_element(By.ID, "config")
    box.send_keys(json.dumps(config))
    box.send_keys("\t")                              # change event: the seat rows follow the config
    # The rows made for this game and config (picking the game asked for rows too, and that
    # answer may already hold as many rows: waiting for a count met it and went stale).
    wanted = [game, box.get_attribute("value")]
    wait_for(lambda: json.loads(driver.find_element(By.ID, "seats").get_attribute("data-for") or "null") == wanted,
             what="the seat rows of this config")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#seats [data-agent]")) == len(seats)
    driver.find_element(By.ID, "seed").send_keys("7")
    for index, seat in enumerate(seats):
        agent = f"player_{index}"
        Select(driver.find_element(By.ID, f"kind-{agent}")).select_by_value(seat[0])
        if seat[0] == "human":
            name = driver.find_element(By.ID, f"name-{agent}")
            name.clear()
            name.send_keys(seat[1])
    driver.find_element(By.ID, "create").click()
    wait_for(lambda: driver.find_elements(By.ID, "watch-link"), what="the created game")
    return {link.get_attribute("data-agent"): link.get_attribute("href")
            for link in driver.find_elements(By.CSS_SELECTOR, "a.seat-link")}


def status(driver) -> str:
    found = driver.find_elements(By.ID, "status")
    return found[0].text if found else ""


def move_once(driver, prefer):
    """Click one move if this seat's controls are up: the first preferred button present,
    else the first send button (its inputs hold their defaults)."""
    buttons = driver.find_elements(By.CSS_SELECTOR, "#controls button.move")
    if not buttons:
        return False
    by_move = {b.get_attribute("data-move"): b for b in buttons}
    for move in prefer:
        if move in by_move:
            by_move[move].click()
            return True
    buttons[0].click()
    return True


def play_tabs(driver, tabs, prefer, timeout=40.0):
    """Take turns over the seats' tabs until every tab says the game is over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        over = 0
        for handle in tabs:
            driver.switch_to.window(handle)
            try:
                if status(driver).startswith("Game over"):
                    over += 1
                    continue
                move_once(driver, prefer)
            except StaleElementReferenceException:
                pass
        if over == len(tabs):
            return
        time.sleep(0.05)
    raise AssertionError("the game did not end in time: " + status(driver))


def record_of(log_dir, seeds_policy):
    records = [r for r in read_episodes(log_dir / LOG_FILE) if [s["policy"] for s in r["roster"]] == seeds_policy]
    assert len(records) == 1, records
    return records[0]


def test_two_people_and_a_scripted_seat_play_liars_dice_to_the_end(browser, arena):
    url, log_dir = arena
    links = create_in_lobby(browser, url, "liars_dice", {"dice": 1},
                            [("human", NAME), ("human", "Bob"), ("scripted:heuristic",)])
    assert set(links) == {"player_0", "player_1"}
    tabs = []
    for agent in ("player_0", "player_1"):
        browser.switch_to.new_window("tab")
        browser.get(links[agent])
        wait_for(lambda: browser.find_elements(By.ID, "observation"), what=f"{agent}'s view")
        observation = browser.find_element(By.ID, "observation").text
        assert f"({agent})" in observation and "Your private information" in observation
        tabs.append(browser.current_window_handle)
    play_tabs(browser, tabs, prefer=["liar"])
    browser.switch_to.window(tabs[0])
    # The hostile name is shown as its characters, and it added no element and ran nothing.
    chips = [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".seat")]
    assert any(NAME in chip for chip in chips), chips
    assert browser.execute_script("return document.scripts.length") == 1
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main b")
    record = record_of(log_dir, [f"human:{NAME}", "human:Bob", "scripted:heuristic"])
    assert record["finished"] and record["seed"] == 7
    # The same UI replays it: step to the end, choose a seat, see its view.
    browser.find_element(By.ID, "replay-link").click()
    wait_for(lambda: browser.find_elements(By.ID, "roster"), what="the replay")
    Select(browser.find_element(By.ID, "replay-seat")).select_by_value("player_1")
    wait_for(lambda: "(player_1)" in browser.find_element(By.ID, "observation").text, what="the seat's replay view")
    browser.find_element(By.ID, "next").click()
    wait_for(lambda: "step 1 of" in browser.find_element(By.ID, "step-label").text, what="step 1")
    for handle in tabs:
        browser.switch_to.window(handle)
        browser.close()
    browser.switch_to.window(browser.window_handles[0])
    # The lobby's live ratings panel lists everyone who finished a game, the hostile name as text.
    browser.get(url + "/")
    wait_for(lambda: "human:Bob" in browser.find_element(By.ID, "ratings").text, what="the ratings panel")
    rated = browser.find_element(By.ID, "ratings").text
    assert f"human:{NAME}" in rated and "scripted:heuristic" in rated
    assert not browser.find_elements(By.CSS_SELECTOR, "#ratings script, #ratings b")


def test_a_person_plays_rock_paper_scissors_against_the_embedded_model(browser, arena, smollm2_available):
    url, log_dir = arena
    links = create_in_lobby(browser, url, "rock_paper_scissors", {"rounds": 2}, [("human", "Cleo"), (MODEL,)])
    browser.get(links["player_0"])
    wait_for(lambda: browser.find_elements(By.ID, "observation"), what="the seat's view")
    # Every status line the page shows, as it re-renders (who is thinking, whose turn).
    browser.execute_script("""window.seen = [];
        new MutationObserver(() => { const s = document.getElementById('status');
                                     if (s) window.seen.push(s.textContent); })
            .observe(document.getElementById('app'), {childList: true, subtree: true});""")
    play_tabs(browser, [browser.current_window_handle], prefer=["rock", "paper"], timeout=50)
    seen = browser.execute_script("return window.seen")
    assert any("Your turn, " in s for s in seen), seen
    assert any(s.endswith("is thinking...") for s in seen), seen
    record = record_of(log_dir, ["human:Cleo", MODEL])
    assert record["finished"] and len([t for t in record["turns"] if t["agent"] == "player_1"]) == 2


def test_hotseat_hands_one_screen_over_between_turns(browser, arena):
    url, log_dir = arena
    create_in_lobby(browser, url, "prisoners_dilemma", {"rounds": 1}, [("human", "Hal"), ("human", "Ivy")])
    browser.get(browser.find_element(By.ID, "hotseat-link").get_attribute("href"))
    for person in ("Hal", "Ivy"):
        button = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "button.reveal"), what="the pass screen")[0]
        assert not browser.find_elements(By.ID, "observation")          # nothing private between turns
        assert person in button.text
        button.click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#controls button.move"), what=f"{person}'s controls")
        assert "Your turn" in status(browser)
        assert "null" not in browser.find_element(By.ID, "app").text        # show() once printed absent parts
        move_once(browser, prefer=["cooperate"])
    wait_for(lambda: status(browser).startswith("Game over"), what="the end")
    assert "null" not in browser.find_element(By.ID, "app").text
    record_of(log_dir, ["human:Hal", "human:Ivy"])
