"""The README's figures of the bundled example, made from the code so they cannot go stale.

    python scripts/readme_example.py            # print the figures and what the README says
    python scripts/readme_example.py --write    # put them into README.md and re-take the
                                                # screenshot docs/report-plan.png (Chromium)

The figures are those of `scripts/demo.sh`'s plan (the bundled example, three brokers added):
the number of moves, the review's ETA one at a time and with --concurrency auto, the physical
limit, and the size of the plan's HTML page. The planner's search is a fixed number of rounds
from a fixed seed, so the same code gives the same plan on any machine.
`tests/unit/test_readme_numbers.py` fails when README.md (or the screenshot's recorded figures)
no longer match, and names this script.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCREENSHOT = ROOT / "docs" / "report-plan.png"
ADDED = (13, 14, 15)
RATE_BYTES_PER_SEC = 50e6  # the review's default --rate-mbps
SCREENSHOT_WIDTH = 1400
SCREENSHOT_HEIGHT = 2700  # the headline, the three resource charts and the bytes heatmap
# The PNG text key under which the screenshot records the figures it shows.
PNG_KEY = "kafka-rebalance-example"


@dataclass(frozen=True)
class Figures:
    moves: int
    one_at_a_time: str
    side_by_side: str
    limit: str
    page_kb: int

    def fragments(self) -> dict[str, str]:
        """README sentences (as regular expressions of their old text) and their text now."""
        return {
            r"on the bundled example \(\d+ moves,":
                f"on the bundled example ({self.moves} moves,",
            r"makes\) \d+h\d\dm one at a time, \d+h\d\dm with":
                f"makes) {self.one_at_a_time} one at a time, {self.side_by_side} with",
            r"against a physical limit of \d+h\d\dm":
                f"against a physical limit of {self.limit}",
            r"bundled example's \d+-move plan makes a \d+ KB page":
                f"bundled example's {self.moves}-move plan makes a {self.page_kb} KB page",
        }

    def recorded(self) -> str:
        return (f"moves={self.moves} one={self.one_at_a_time} auto={self.side_by_side} "
                f"limit={self.limit}")


def hours(seconds: float) -> str:
    """31h39m: the README's way of saying a long time (to the nearest minute)."""
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


def plan_example(page: Path) -> Figures:
    """Plan the bundled example as the demo does and write its HTML page to `page`."""
    sys.path.insert(0, str(ROOT))
    from kafka_rebalance.commands.report_cmd import write_plan_html
    from kafka_rebalance.report.review import review_eta
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan
    from planner.goals import Budget, Goals
    from topology.capacities import read_capacities
    from topology.snapshot import read_snapshot

    capacities = read_capacities(ROOT / "examples" / "capacities.yaml")
    topology = read_snapshot(ROOT / "examples" / "cluster.json", capacities)
    plan = build_plan(topology, PlanSettings(goals=Goals(add_brokers=frozenset(ADDED)),
                                             budget=Budget()))
    eta = review_eta(plan, RATE_BYTES_PER_SEC)
    write_plan_html(page, plan, RATE_BYTES_PER_SEC, "Plan review: plan.json")  # as the demo
    return Figures(len(plan.moves), hours(eta.one_at_a_time.eta_seconds),
                   hours(eta.side_by_side.eta_seconds), hours(eta.limit_seconds),
                   round(page.stat().st_size / 1000))


def stale(readme: str, figures: Figures) -> list[str]:
    """The README's sentences about the example that do not say `figures` (empty: none)."""
    return [new for old, new in figures.fragments().items()
            if not re.search(old, readme) or new not in readme]


def screenshot_figures(path: Path = SCREENSHOT) -> str | None:
    """The figures the screenshot recorded when it was taken (None: none recorded)."""
    from PIL import Image

    with Image.open(path) as image:
        text = getattr(image, "text", {})
        return text.get(PNG_KEY) if isinstance(text, dict) else None


def take_screenshot(page: Path, figures: Figures) -> None:
    """The top of `page` in headless Chromium (the headline and the charts), recording
    `figures` in it."""
    import os

    from PIL import Image, PngImagePlugin
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                     "--disable-dev-shm-usage", f"--window-size={SCREENSHOT_WIDTH},1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"),
                              options=options)
    try:
        driver.get(page.resolve().as_uri())
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(SCREENSHOT_WIDTH, min(int(height) + 100, 16000))
        raw = SCREENSHOT.with_suffix(".raw.png")
        assert driver.save_screenshot(str(raw))
    finally:
        driver.quit()
    info = PngImagePlugin.PngInfo()
    info.add_text(PNG_KEY, figures.recorded())
    with Image.open(raw) as image:
        top = image.crop((0, 0, image.width, min(image.height, SCREENSHOT_HEIGHT)))
        top.save(SCREENSHOT, pnginfo=info, optimize=True)
    raw.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="update README.md and re-take docs/report-plan.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "plan.html"
        figures = plan_example(page)
        print(figures)
        readme = README.read_text()
        if args.write:
            for old, new in figures.fragments().items():
                readme = re.sub(old, new.replace("\\", "\\\\"), readme)
            README.write_text(readme)
            take_screenshot(page, figures)
        left = stale(README.read_text(), figures)
        for sentence in left:
            print(f"README.md does not say: {sentence}")
        if screenshot_figures() != figures.recorded():
            print(f"{SCREENSHOT.relative_to(ROOT)} shows other figures "
                  f"({screenshot_figures()})")
            left.append("screenshot")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
