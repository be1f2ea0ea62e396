"""The README's figures of the bundled example and its screenshot say what the code makes
today (issue: numbers that stay true); scripts/readme_example.py --write brings them back."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
FIX = "run `python scripts/readme_example.py --write`"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_example",
                                                  ROOT / "scripts" / "readme_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_readme_and_its_screenshot_show_the_example_as_planned_today(
        tmp_path: Path) -> None:
    script = _script()
    figures = script.plan_example(tmp_path / "plan.html")
    assert script.stale((ROOT / "README.md").read_text(), figures) == [], FIX
    assert script.screenshot_figures() == figures.recorded(), FIX


def test_a_stale_figure_is_found() -> None:
    script = _script()
    figures = script.Figures(84, "31h39m", "13h02m", "11h10m", 211)
    readme = ("on the bundled example (93 moves, the plan it makes) 31h39m one at a time, "
              "13h02m with x against a physical limit of 11h10m; the bundled example's "
              "84-move plan makes a 211 KB page")
    assert script.stale(readme, figures) == ["on the bundled example (84 moves,"]
