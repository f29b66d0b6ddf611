"""The leaderboard as a person reads it (issue 65 item 12): ``leaderboard.html`` in headless Chromium
at 1,280 px has no horizontal overflow (policies by short names with a legend of whole specs, long
tables turned), the figures stay legible scaled to a page's width, and every number drawn on a
coloured cell contrasts with it."""
import shutil

import numpy as np
import pytest

from socialgym_benchmarks.leaderboard.render import build_leaderboard
from socialgym_env.logs import append_episode
from socialgym_env.registry import list_games

from tests.helpers import duel

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")
OPTIONS = "mode=score&temperature=1.0&max_new_tokens=24&constrained=1&dtype=auto&batch_kv_mb=192&batch_size=8&cache_mb=160"
# make demo's policies: the main roster on every game, Liar's Dice played by its own roster
MAIN = ("smollm2?dtype=auto&temperature=0.7&context=2048&batch_size=8", "scripted:heuristic", "scripted:random")
LIARS_DICE = (f"smollm2?{OPTIONS}", f"smollm2?adapter=socialgym_agents/adapters/smollm2_selfplay_liars_dice&{OPTIONS}",
              "scripted:heuristic")
README_WIDTH_PX = 830          # a README's column on GitHub, and about a docs page's
SMALLEST_TEXT_PX = 10


@pytest.fixture(scope="module")
def demo_board(tmp_path_factory):
    """A leaderboard of make demo's shape: its long specs, every competitive game, Liar's Dice apart."""
    tmp = tmp_path_factory.mktemp("board")
    rng = np.random.default_rng(0)
    for game in (g["id"] for g in list_games() if not g["cooperative"]):
        roster = LIARS_DICE if game == "liars_dice" else MAIN
        for k, (a, b) in enumerate((a, b) for i, a in enumerate(roster) for b in roster[i + 1:]):
            for i in range(4):
                append_episode(tmp / "logs" / f"{game}.jsonl", duel(game, a, b, bool(rng.random() < 0.6), 10 * k + i))
    summary = build_leaderboard(tmp / "logs", tmp / "board", n_boot=10)
    return summary, tmp / "board"


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM and CHROMEDRIVER, "chromium and chromium-driver are required (make setup-test installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--disable-background-networking"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


# every element whose box ends right of the window: what a reader would have to scroll sideways to see
OVERFLOW = """const width = document.documentElement.clientWidth;
return [document.documentElement.scrollWidth, width,
        Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > width + 1)
             .map(e => e.tagName + ': ' + e.textContent.slice(0, 80))];"""


def test_the_page_has_no_horizontal_overflow_at_1280_px_and_names_policies_briefly(demo_board):
    summary, board = demo_board
    page = (board / "leaderboard.html").read_text(encoding="utf-8")
    overall = page.split("<h2>Overall (competitive games)</h2>")[1].split("</table>")[0]
    assert "smollm2 [temperature=0.7]" in overall and MAIN[0] not in overall       # short names in the tables
    legend = page.split("<h2>Policy names</h2>")[1].split("</table>")[0]
    for spec in (MAIN[0], *LIARS_DICE[:2]):                                        # and a legend of whole specs
        assert spec.replace("&", "&amp;") in legend
    driver = chromium()
    try:
        driver.get((board / "leaderboard.html").resolve().as_uri())
        scroll_width, width, wider = driver.execute_script(OVERFLOW)
    finally:
        driver.quit()
    assert width > 1200                                                            # the window, less a scroll bar
    assert scroll_width <= width and wider == [], f"wider than the {width}-px window: {wider[:5]}"


def test_the_figures_are_legible_at_a_page_s_width(demo_board):
    """The smallest text of each figure, scaled to a README's width, is still 10 px tall; the
    README's own figure too (it was 2,364 px wide with 7-pt labels: 4 px at that width)."""
    from PIL import Image

    from socialgym_benchmarks.leaderboard import plots
    from tests.test_docs import ROOT

    smallest_px = (plots.FONT_PT - 1) * plots.DPI / 72
    _, board = demo_board
    for figure in (board / "elo_heatmap.png", board / "role_gap.png", ROOT / "docs" / "assets" / "leaderboard.png"):
        with Image.open(figure) as image:
            width = image.size[0]
        assert smallest_px * min(1.0, README_WIDTH_PX / width) >= SMALLEST_TEXT_PX, f"{figure.name}: {width} px wide"


@pytest.mark.parametrize("cmap", ["RdBu_r", "PuOr"])
def test_cell_labels_contrast_with_their_cell(cmap):
    """Every colour of the figures' maps gets the label colour of higher contrast, at least 4.5:1
    (WCAG AA) where the map allows: black on the darkest cells is what failed."""
    import matplotlib

    from socialgym_benchmarks.leaderboard.plots import label_colour

    def luminance(rgb):
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    colours = matplotlib.colormaps[cmap](np.linspace(0, 1, 101))
    for rgba in colours:
        lum = luminance(rgba)
        ratio = {"black": (lum + 0.05) / 0.05, "white": 1.05 / (lum + 0.05)}
        assert ratio[label_colour(rgba)] == max(ratio.values()) >= 4.5
    assert label_colour(colours[0]) == label_colour(colours[-1]) == "white"       # the darkest ends
    assert label_colour(colours[50]) == "black"                                    # the pale middle


def test_the_heatmap_writes_white_on_its_darkest_cells(demo_board, monkeypatch):
    """The label colours the heatmap actually drew: white on the cell of the highest Elo."""
    import matplotlib.axes

    from socialgym_benchmarks.leaderboard.plots import plot_elo_heatmap

    summary, board = demo_board
    drawn = []
    original = matplotlib.axes.Axes.text
    monkeypatch.setattr(matplotlib.axes.Axes, "text",
                        lambda self, x, y, s, **kw: drawn.append((s, kw.get("color"))) or original(self, x, y, s, **kw))
    plot_elo_heatmap(summary, board / "again.png")
    best = max(e["elo"] for table in summary["per_game"].values() for e in table.values())
    worst = min(e["elo"] for table in summary["per_game"].values() for e in table.values())
    colours = dict(drawn)
    assert colours[f"{best:.0f}"] == colours[f"{worst:.0f}"] == "white"
