"""Make the executor fakes importable as `executor_fakes` (a name no other test dir uses)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("executor_fakes", Path(__file__).with_name(
    "fakes.py"))
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
sys.modules["executor_fakes"] = _module
_spec.loader.exec_module(_module)
