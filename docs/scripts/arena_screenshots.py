"""Screenshots of the browser arena for docs/arena.md: the lobby, a seat's view and a replay.

Starts an arena in-process (127.0.0.1, a free port, a temporary log folder), drives headless
Chromium through it with Selenium -- the same browser stack as tests/agents/test_arena_browser.py
-- and writes three PNGs:

    docs/img/arena_lobby.png   the lobby with a Liar's Dice game created (its seat links shown)
    docs/img/arena_seat.png    Ann's seat mid-game: her dice, whose turn, the bid controls
    docs/img/arena_replay.png  the finished episode's replay, a few steps in, from Bob's seat

Run from the repository root (needs the serve and dev extras, chromium and chromium-driver)::

    python docs/scripts/arena_screenshots.py [--out docs/img]

No model is loaded: the seats are two people and a scripted baseline (``smollm2`` is offered in
the lobby's lists only).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from selenium import webdriver   # noqa: E402
from selenium.webdriver.chrome.service import Service   # noqa: E402
from selenium.webdriver.common.by import By   # noqa: E402
from selenium.webdriver.support.ui import Select   # noqa: E402

from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.arena import create_arena_app   # noqa: E402

GAME, CONFIG, SEED = "liars_dice", {"dice": 2}, 6      # config: a short game with private dice


def wait(driver, css: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if found:
            return found[0]
        time.sleep(0.05)
    raise RuntimeError(f"the page never showed {css}")


def click_move(driver, prefer: str = "") -> None:
    """One move on this seat's page: the ``prefer`` button if there, else the first one."""
    wait(driver, "#controls")
    buttons = driver.find_elements(By.CSS_SELECTOR, "#controls button.move")
    chosen = [b for b in buttons if b.get_attribute("data-move") == prefer] or buttons
    chosen[0].click()
    time.sleep(0.3)


def typed_move(driver, move: str) -> None:
    """Type a move in the seat page's free box and send it."""
    box = wait(driver, "#free-action")
    box.send_keys(move)
    driver.find_element(By.CSS_SELECTOR, "#controls button.secondary").click()
    time.sleep(0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder for the PNGs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,820",
                 "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    log_dir = Path(tempfile.mkdtemp(prefix="arena-shots-"))
    try:
        with BackgroundServer(create_arena_app(log_dir, models=("smollm2",))) as url:
            # The lobby: the form filled in, the game created, its seat links listed.
            driver.get(url + "/")
            wait(driver, "#kind-player_0")
            Select(driver.find_element(By.ID, "game")).select_by_value(GAME)
            box = driver.find_element(By.ID, "config")
            box.send_keys(json.dumps(CONFIG) + "\t")
            wait(driver, "#kind-player_2")
            driver.find_element(By.ID, "seed").send_keys(str(SEED))
            for agent, kind, name in (("player_0", "human", "Ann"), ("player_1", "human", "Bob"),
                                      ("player_2", "scripted:heuristic", "")):
                Select(driver.find_element(By.ID, f"kind-{agent}")).select_by_value(kind)
                if name:
                    field = driver.find_element(By.ID, f"name-{agent}")
                    field.clear()
                    field.send_keys(name)
            driver.find_element(By.ID, "create").click()
            wait(driver, "#watch-link")
            links = {a.get_attribute("data-agent"): a.get_attribute("href")
                     for a in driver.find_elements(By.CSS_SELECTOR, "a.seat-link")}
            driver.save_screenshot(str(args.out / "arena_lobby.png"))

            # Two seats, one tab each: a few bids, then Ann's view when it is her turn again.
            driver.get(links["player_0"])
            ann = driver.current_window_handle
            driver.switch_to.new_window("tab")
            driver.get(links["player_1"])
            bob = driver.current_window_handle
            driver.switch_to.window(ann)
            typed_move(driver, "bid 1 4")                 # Ann opens
            driver.switch_to.window(bob)
            typed_move(driver, "bid 2 4")                 # Bob raises; the scripted seat answers
            driver.switch_to.window(ann)
            wait(driver, "#controls")                     # Ann's turn again (seed 6: nobody called)
            driver.save_screenshot(str(args.out / "arena_seat.png"))

            # Play to the end (challenge whenever possible), then open the replay.
            deadline = time.monotonic() + 60
            while not driver.find_elements(By.ID, "replay-link"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the game did not end")
                for handle in (ann, bob):
                    driver.switch_to.window(handle)
                    if driver.find_elements(By.CSS_SELECTOR, "#controls button.move"):
                        click_move(driver, prefer="liar")
                driver.switch_to.window(ann)
            episode = driver.find_element(By.ID, "replay-link").get_attribute("href")
            driver.get(episode + "?step=4&seat=player_1")
            wait(driver, "#roster")
            time.sleep(0.3)
            driver.save_screenshot(str(args.out / "arena_replay.png"))
    finally:
        driver.quit()
        shutil.rmtree(log_dir, ignore_errors=True)
    for name in ("arena_lobby.png", "arena_seat.png", "arena_replay.png"):
        path = args.out / name
        print(f"{path} ({path.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
