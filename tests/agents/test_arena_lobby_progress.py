"""The lobby while a game is being built (issue 65 item 14): "Create game" turns off and a line says
what is happening -- which model is loading -- with the seconds so far, until the links or the
error come. Headless Chromium; the server's game builder is slowed down in-process (a real model
load takes about as long as the first SmolLM2 game, which is what the line is for)."""
import shutil
import time

import pytest

pytest.importorskip("fastapi")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By   # noqa: E402
from selenium.webdriver.support.ui import Select   # noqa: E402

from socialgym_agents.serve import arena as arena_module   # noqa: E402
from socialgym_agents.serve.app import BackgroundServer   # noqa: E402
from socialgym_agents.serve.arena_game import ArenaError, ArenaGame   # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")
MODEL = "smollm2?max_new_tokens=16"
BUILD_S = 2.5


class SlowGame(ArenaGame):
    """A game that takes BUILD_S to build, as a model's first load does; a model seat is refused
    after the wait (no weights are loaded here)."""

    def __init__(self, game, config, seed, plans, *args, **kwargs):
        time.sleep(BUILD_S)
        if any(not plan.human and str(plan.spec).startswith("smollm2") for plan in plans):
            raise ArenaError("planted: the model did not load")
        super().__init__(game, config, seed, plans, *args, **kwargs)


@pytest.fixture()
def lobby(tmp_path, monkeypatch):
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM and CHROMEDRIVER, "chromium and chromium-driver are required (make setup-test installs them)"
    monkeypatch.setattr(arena_module, "ArenaGame", SlowGame)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        with BackgroundServer(arena_module.create_arena_app(tmp_path, models=(MODEL,), idle_timeout_s=60)) as url:
            driver.get(url + "/")
            wait_for(lambda: driver.find_elements(By.ID, "kind-player_1"))
            yield driver
    finally:
        driver.quit()


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def progress(driver) -> str:
    found = driver.find_elements(By.ID, "create-progress")
    return found[0].text if found else ""


def test_create_game_shows_progress_until_the_links_come(lobby):
    driver = lobby
    driver.find_element(By.ID, "create").click()
    assert wait_for(lambda: progress(driver)).startswith("Starting the game... 0 s")
    assert not driver.find_element(By.ID, "create").is_enabled()
    wait_for(lambda: progress(driver).endswith("1 s"))                    # it counts while the server works
    wait_for(lambda: driver.find_elements(By.ID, "watch-link"), timeout=BUILD_S + 10)
    assert progress(driver) == "" and driver.find_element(By.ID, "create").is_enabled()


def test_the_progress_line_names_the_model_loading_and_gives_way_to_an_error(lobby):
    driver = lobby
    Select(driver.find_element(By.ID, "kind-player_1")).select_by_value(MODEL)
    driver.find_element(By.ID, "create").click()
    assert f"loading {MODEL}" in wait_for(lambda: progress(driver))
    error = wait_for(lambda: driver.find_element(By.ID, "lobby-error").text, timeout=BUILD_S + 10)
    assert "planted: the model did not load" in error
    assert progress(driver) == "" and driver.find_element(By.ID, "create").is_enabled()
