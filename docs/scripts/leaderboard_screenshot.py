"""A screenshot of ``leaderboard.html`` in a 1,280-px browser window, for docs/tournament.md.

Runs a seeded scripted tournament shaped like ``make demo`` (``COMMAND``: a main roster on every
game and Liar's Dice played by its own roster, so that the page shows the group ranked apart; about
15 s on 2 cores) into a temporary folder, opens its ``leaderboard.html`` in headless Chromium at
1,280 x 900 -- the width tests/benchmarks/test_leaderboard_browser.py checks for overflow -- and
writes ``docs/img/leaderboard_page.png``: the page from its overall tables down.

Run from the repository root (needs the bench and dev extras, chromium and chromium-driver)::

    python docs/scripts/leaderboard_screenshot.py [--out docs/img]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("tournament", "--quick", "--agents", "scripted:tit_for_tat,scripted:heuristic,scripted:random",
        "--roster", "liars_dice=scripted:grim_trigger,scripted:win_stay_lose_shift,scripted:heuristic",
        "--episodes", "2", "--seed", "0", "--bootstrap", "100")
COMMAND = "socialgym " + " ".join(f'"{a}"' if "," in a else a for a in ARGS)


def main() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder for the PNG")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "socialgym_env.cli", *ARGS, "--out", tmp], cwd=ROOT, check=True,
                       capture_output=True, timeout=900)
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            driver.get((Path(tmp) / "leaderboard.html").as_uri())
            heading = next(h for h in driver.find_elements(By.TAG_NAME, "h2") if h.text.startswith("Overall"))
            driver.execute_script("arguments[0].scrollIntoView()", heading)
            time.sleep(0.3)
            args.out.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(args.out / "leaderboard_page.png"))
        finally:
            driver.quit()
    print(f"{args.out / 'leaderboard_page.png'} ({COMMAND})")


if __name__ == "__main__":
    main()
