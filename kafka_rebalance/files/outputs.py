"""Output-path safety for every command that writes a file, checked before any work is done.

Three rules: an output is never one of the command's own input files (same resolved path, or
the same inode when both exist); an existing file is replaced only when it is a file of the
kind the command writes (a plan by `plan`, a snapshot by `snapshot`, ...) or `--force` is
given; and directories, devices and pipes are never replaced. Each refusal is an InputError
(exit code 2) naming the path and the way out.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_rebalance.core.errors import InputError

# A plan or snapshot of this tool is far smaller: a bigger file is not read to recognize it.
MAX_RECOGNIZED_BYTES = 1 << 30

InputFiles = Mapping[str, Path | None]
"""A command's input files by flag, e.g. {"--snapshot": Path("snap.json")}."""


@dataclass(frozen=True, slots=True)
class Output:
    """A file a command is about to write: its flag, what it holds, and how to recognize one
    this tool wrote (`ours`), which may be replaced without --force."""

    path: Path
    flag: str
    what: str
    ours: Callable[[Path], bool]


def same_file(first: Path, second: Path) -> bool:
    """True when both name one file: the same inode if both exist (hard and symbolic links
    included), else the same fully resolved path."""
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
    except OSError:
        pass
    return os.path.realpath(first) == os.path.realpath(second)


def refuse_inputs(output: Output, inputs: InputFiles) -> None:
    """The output must not be any of the command's input files."""
    for input_flag, path in sorted(inputs.items()):
        if path is not None and same_file(output.path, path):
            raise InputError(f"{output.flag} {output.path} is the {input_flag} file "
                             f"{path}: writing the {output.what} there would overwrite an input "
                             f"of this command; choose another {output.flag} path")


def check_output(output: Output, inputs: InputFiles, force: bool) -> None:
    """Refuse, before any work, an output that would overwrite an input, a directory, a device
    or (without --force) an existing file of another kind than the command writes."""
    refuse_inputs(output, inputs)
    path, flag = output.path, output.flag
    if path.exists() and not output.ours(path):
        if path.is_dir():
            raise InputError(f"{flag} {path}: it is a directory; give a file path for the "
                             f"{output.what} (a directory is never replaced)")
        if not path.is_file():
            raise InputError(f"{flag} {path} is not a regular file (a device, pipe or socket); "
                             f"give a file path for the {output.what}")
        if not force:
            raise InputError(f"{flag} {path} exists and is not a {output.what} written by "
                             f"rebalance; choose another {flag} path, or pass --force to "
                             "replace it")
    check_writable(path, flag)


FILE_FLAGS = ("--out", "--html")


def refuse_directory_paths(argv: list[str]) -> None:
    """A file output given with a trailing slash ('--out plans/') names a directory, but the
    path the command receives has lost the slash and would be written as a file named like
    the directory: refused, on the words as typed, before anything runs. (`history export
    --out` is a directory.)"""
    if argv[:2] == ["history", "export"]:
        return
    for i, token in enumerate(argv):
        flag, equals, value = token.partition("=")
        if flag not in FILE_FLAGS:
            continue
        if not equals:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        if value.endswith(("/", os.sep)):
            name = ("report.html" if flag == "--html"
                    else {"snapshot": "snapshot.json", "weights": "weights.json"}.get(
                        argv[0] if argv else "", "plan.json"))
            raise InputError(f"{flag} {value}: ends with '/', so it names a directory; give "
                             f"a file path (such as {value}{name})")


def check_writable(path: Path, flag: str) -> None:
    """The nearest existing directory above `path` must be a writable directory."""
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: {parent} is not a directory; choose a writable path")
    if not os.access(parent, os.W_OK | os.X_OK) or not _can_create_in(parent):
        raise InputError(f"{flag} {path}: the directory {parent} is not writable; choose a "
                         "writable path")


def _can_create_in(directory: Path) -> bool:
    """Whether a file can really be made there: os.access answers yes for root on a
    read-only or pseudo file system (/sys, /proc) and knows nothing of ACLs or quotas. A
    probe file is made and removed at once."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".rebalance-probe.", dir=directory)
    except OSError:
        return False
    os.close(fd)
    Path(probe).unlink(missing_ok=True)
    return True


def check_new_directory(path: Path, flag: str) -> None:
    """An output directory must be new or empty (nothing in it is ever replaced)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"{flag} {path} exists and is not an empty directory; choose another")
    check_writable(path, flag)


# ---- recognizing the files this tool writes -------------------------------------------------


def _json_object(path: Path) -> dict[str, Any] | None:
    """The file's top-level JSON object, or None when it is not one (or is too big)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_RECOGNIZED_BYTES:
            return None
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return doc if isinstance(doc, dict) else None


def is_plan_file(path: Path) -> bool:
    """A plan file of this tool: version 1 with Kafka's partitions, moves and a fingerprint."""
    doc = _json_object(path)
    return (doc is not None and doc.get("version") == 1
            and isinstance(doc.get("partitions"), list) and isinstance(doc.get("moves"), list)
            and isinstance(doc.get("fingerprint"), str))


def is_snapshot_file(path: Path) -> bool:
    """A snapshot file of this tool: version 1 with brokers and partitions (and no moves)."""
    doc = _json_object(path)
    return (doc is not None and doc.get("version") == 1 and "moves" not in doc
            and isinstance(doc.get("brokers"), list)
            and isinstance(doc.get("partitions"), list))


def plan_output(path: Path) -> Output:
    return Output(path, "--out", "plan", is_plan_file)


def snapshot_output(path: Path) -> Output:
    return Output(path, "--out", "snapshot", is_snapshot_file)


@contextmanager
def no_empty_directory_left(path: Path) -> Iterator[None]:
    """If the block fails, remove `path` when it did not exist before and is still empty: a
    refused or failed export leaves nothing behind."""
    existed = path.exists()
    try:
        yield
    except BaseException:
        if not existed and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        raise
