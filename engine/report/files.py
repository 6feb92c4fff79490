"""Writing files the user keeps: always atomically, with the permissions of any file they save."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from splitscope.engine.model import GraphModel


def _umask_mode() -> int:
    from splitscope.engine.paths import file_mode

    return file_mode()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], make_parents: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that wants a file name (an image or SVG
    library); on success it is renamed over ``path`` with ordinary permissions, on any error removed.
    A missing folder is an error unless ``make_parents``.
    """
    target = Path(path)
    if target.is_dir():  # else the error would name the temporary file
        raise IsADirectoryError(errno.EISDIR, f"{path} is a folder, not a file: give a file name (a path inside it)")
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=target.parent)
    except OSError as e:  # said of the file asked for, not of the temporary one beside it
        raise type(e)(e.errno, f"cannot write {path} ({e.strerror}): choose a folder you can write to") from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``.

    A crash, an exception in ``write`` or a cancel never leaves half a file, and
    never touches an existing file at ``path``. The result gets the permissions a
    plain ``open(path, "w")`` would give it (mkstemp's are 0600).
    """
    with atomic_path(path, make_parents=True) as tmp, open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return write_atomic(path, lambda f: f.write(data))  # type: ignore[arg-type, return-value]


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json(gm: GraphModel, path: str | os.PathLike[str], summary: dict[str, Any] | None = None) -> Path:
    """Write the analysis document atomically; indented for small models, compact past 5000 nodes."""
    from splitscope.engine.report.schema import to_json

    doc = to_json(gm, summary)
    text = json.dumps(doc, indent=1) if len(gm.nodes) <= 5000 else json.dumps(doc, separators=(",", ":"))
    return write_text_atomic(path, text)
