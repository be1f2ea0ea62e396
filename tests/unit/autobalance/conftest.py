"""Make the executor's fakes importable as `executor_fakes` here too (same module, one name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if "executor_fakes" not in sys.modules:
    _path = Path(__file__).resolve().parents[1] / "executor" / "fakes.py"
    _spec = importlib.util.spec_from_file_location("executor_fakes", _path)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["executor_fakes"] = _module
    _spec.loader.exec_module(_module)
