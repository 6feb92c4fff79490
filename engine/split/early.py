"""The preview of a large file made in a process of its own, started as the app starts (:func:`start`): it reads the
file on the second core while the window is made, and the window's first open of that file takes it (:func:`claim`)
instead of reading the file again. Only the standard library is imported here: this runs before Qt is.

The child (:mod:`splitscope.engine.split.preview_proc`) writes one JSON header line, then the model pickled with its
columns apart (:mod:`splitscope.engine.model.transfer`), so that reading it back never holds the interpreter long.
Anything that goes wrong there (a file it cannot read, a parser not installed, a crash) leaves the preview to the
window's own worker, as without it.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import subprocess
import threading
from pathlib import Path
from typing import Any, cast

PREVIEW_MIN_BYTES = 4_000_000
"""Files smaller than this are loaded whole before the first view (the full load takes well under a second)."""


class PreviewChild:
    """A preview being made in a child process: :meth:`result` waits for it, :meth:`kill` stops it. A thread reads
    the child's output as it comes, each part into a buffer of its own (reads that let other threads run; one
    joined string of a 1M-node model's 313 MB held the interpreter 0.1 s)."""

    def __init__(self, path: Path, parser: str) -> None:
        from splitscope.engine.entry import child_command, child_env

        env, root = child_env()
        self.path, self.parser = path, parser
        self.stamp = _stamp(path)
        """The file's size and modification time when the child started (a file written since: not taken)."""
        self._proc = subprocess.Popen(
            child_command("preview", str(path), parser),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root,
        )
        self._header: dict[str, Any] = {}
        self._parts: list[bytearray] = []
        self._done = threading.Event()
        threading.Thread(target=self._read, name="preview-child", daemon=True).start()

    def _read(self) -> None:
        from splitscope.engine.pipes import read_exactly

        out = cast("io.BufferedReader | None", self._proc.stdout)
        try:
            if out is None:
                return
            header = json.loads(out.readline())
            for n in header.get("sizes", []):
                buf = read_exactly(out, int(n))
                if buf is None:
                    return  # cut short: no header, no preview
                self._parts.append(buf)
            self._header = header
        except Exception:  # noqa: BLE001 - whatever the child wrote: no preview from it, the worker makes one
            return
        finally:
            if out is not None:
                out.close()
            self._proc.wait()
            self._done.set()

    def result(self, target: str, cancelled: Any = None) -> Any:
        """The child's ``(GraphModel, order)`` when it made one for ``target``; :data:`NONE` when it read the file
        and found no preview to make (the worker need not try again); None when it gave nothing usable (another
        target, a crash, a cancel). Waits for it, asking ``cancelled()`` every 0.1 s (true: the child is killed)."""
        while not self._done.wait(0.1):
            if cancelled is not None and cancelled():
                self.kill()
                return None
        header, parts = self._header, self._parts
        self._parts = []
        if self._proc.returncode != 0 or not isinstance(header, dict):
            return None
        if header.get("none") is True:
            return NONE
        if header.get("target") != target or not parts:
            return None
        from splitscope.engine.model.transfer import loads

        try:
            return loads(parts[0], parts[1:])
        except Exception:  # noqa: BLE001 - a stream that does not read back (memory, a version skew): made here
            return None

    def kill(self) -> None:
        """Stop the child if it still runs (and reap it)."""
        if self._proc.poll() is None:
            self._proc.kill()
        with contextlib.suppress(Exception):
            self._proc.wait(timeout=5)


NONE = "none"
"""What :meth:`PreviewChild.result` gives for a file the child read and found no preview in."""


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


_lock = threading.Lock()
_started: dict[tuple[str, str], PreviewChild] = {}


def _key(path: str | Path, parser: str) -> tuple[str, str]:
    return str(Path(path).resolve()), parser


def start(path: str | Path, parser: str) -> bool:
    """Start making the preview of ``path`` for ``parser`` in a child process, if the file is large enough to have
    one; whether a child runs for it now."""
    try:
        key = _key(path, parser)
        if Path(key[0]).stat().st_size < PREVIEW_MIN_BYTES:
            return False
    except OSError:
        return False
    with _lock:
        if key in _started:
            return True
        try:
            _started[key] = PreviewChild(Path(key[0]), parser)
        except OSError:
            return False
    return True


def claim(path: str | Path, parser: str) -> PreviewChild | None:
    """The child started for ``path`` and ``parser``, if any, now the caller's; any other started is stopped (the
    window opened something else first)."""
    key = _key(path, parser)
    with _lock:
        mine = _started.pop(key, None)
        others = list(_started.values())
        _started.clear()
    if mine is not None and mine.stamp != _stamp(mine.path):  # written since the app started: read it anew
        others.append(mine)
        mine = None
    for child in others:
        child.kill()
    return mine


@atexit.register
def stop_all() -> None:
    """Stop every child started and not taken (the app ends)."""
    claim("", "")
