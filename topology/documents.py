"""Reading the tool's input documents safely, and writing its output documents whole, in one
place.

Every way a JSON or YAML text can fail to decode (not UTF-8, bad syntax, nesting deeper than
the parser allows, a number out of range, an unpaired UTF-16 surrogate escape) becomes one
InputError line naming the file, never a traceback. JSON is decoded by pydantic-core (jiter):
it bounds nesting depth instead of recursing without limit, as the json module does, and it
refuses surrogate escapes that no UTF-8 text can hold. NaN and Infinity are read as floats, so
that readers can name the key that holds one.
"""

from __future__ import annotations

import gc
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic_core import from_json

from kafka_rebalance.core.errors import InputError

MAX_INPUT_BYTES = 4 * 2**30
"""The largest input file read (4 GiB): a snapshot of a million partitions is a few hundred
MB; more is another kind of file, and reading it would take the machine's memory."""


def read_text(path: Path, what: str, kind: str = "JSON", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of an input file of at most `limit` bytes; errors name the file and what
    to give instead. A device, pipe or socket is refused before it is opened (a pipe with no
    writer would wait forever, /dev/zero never ends)."""
    noun = what if what.endswith("file") else f"{what} file"
    try:
        info = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise InputError(f"{path}: not a regular file (a device, pipe or socket); give the "
                         f"{noun} itself")
    if info.st_size > limit:
        raise InputError(f"{path}: {info.st_size:,} bytes is more than a {noun} holds (at most "
                         f"{limit:,}); give the {noun} itself")
    try:
        return path.read_text(encoding="utf-8-sig")  # a leading byte order mark is dropped
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a {kind} text file (it is not UTF-8); give the {noun} "
                         "itself") from None


def parse_json(text: str | bytes, where: str) -> Any:
    """Decode one JSON text; InputError `where: not valid JSON (why at line L column C)`."""
    if not text.strip():
        raise InputError(f"{where}: the file is empty")
    try:
        return decode_json(text)
    except ValueError as exc:
        raise InputError(f"{where}: not valid JSON ({exc})") from None


def decode_json(text: str | bytes) -> Any:
    """Decode one JSON text; ValueError says why and where (for readers with their own errors).
    A UTF-8 byte order mark before it (as some Windows editors save) is passed over."""
    if isinstance(text, bytes):
        text = text.removeprefix(b"\xef\xbb\xbf")
    else:
        text = text.removeprefix("\ufeff")
    try:
        return from_json(text, allow_inf_nan=True)
    except ValueError as exc:
        raise ValueError(str(exc).replace("recursion limit exceeded", "nested too deeply")
                         ) from None
    except RecursionError:  # not expected of jiter; kept so no parser change can crash a read
        raise ValueError("nested too deeply") from None


def parse_yaml(text: str, where: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader,
               detail: bool = True) -> Any:
    """Decode YAML with a safe loader; without `detail` the parser's reason is left out (it
    may quote the file, which must not be echoed for files that hold secrets)."""
    try:
        return yaml.load(text, Loader=loader)
    except RecursionError:
        raise InputError(f"{where}: not valid YAML (nested too deeply)") from None
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0] if detail and str(exc) else ""
        raise InputError(f"{where}: not valid YAML" + (f": {reason}" if reason else "")) from None


@contextmanager
def bulk_objects() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large document becomes objects.

    Every object made is kept, so each collection pass would scan them all for nothing: on a
    400,000-partition snapshot those passes took more time than the read itself.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write_json_atomic(path: Path, doc: Mapping[str, Any], indent: int | None = None) -> None:
    """Write JSON to a temp file in the same directory, fsync, then rename over `path`."""
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}; choose a writable path") from None
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=indent)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a quota: the old file is left as it was
            raise InputError(f"cannot write {path}: {exc.strerror}") from None
        raise
