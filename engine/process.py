"""Run a job in a process of its own: :class:`JobProcess` starts ``python -m splitscope.engine.child ARGS.json``
and relays the JSON lines it writes (``progress``, ``sample``, ``log``, then ``result`` or ``error``) as job events.
A crash or a hang in ONNX Runtime, TensorRT or the driver ends the job with a message, never the app; Cancel
terminates the child's whole process group. The child's side (what each kind runs) is
:mod:`splitscope.engine.child`; this module is apart so that any engine module may start a child.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from splitscope.engine.entry import child_command, child_env
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Progress, Sample

POLL_S = 0.05


def relay(
    lines: queue.Queue[Any],
    cancel: CancelToken | None,
    on_cancel: Callable[[], None],
    decode: Callable[[Any], tuple[str, Any]] = lambda item: item,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Yield the events a child's reader puts on ``lines`` (each item ``decode``d to ``(kind, value)``) until it
    puts None, calling ``on_cancel`` while ``cancel`` is set (it may raise); return the last value of every other
    kind (``result``, ``error``, ...). Shared by a local child (:class:`JobProcess`) and a remote one."""
    last: dict[str, Any] = {}
    while True:
        if cancel is not None and cancel.cancelled:
            on_cancel()
        try:
            item = lines.get(timeout=POLL_S)
        except queue.Empty:
            continue
        if item is None:
            return last
        kind, value = decode(item)
        if kind == "event":
            yield value
        else:
            last[kind] = value


class JobCrashedError(SplitscopeError):
    """The job's process ended without a result (a crash in a native library, a kill)."""


def decode_line(line: str) -> tuple[str, Any]:
    """One line of a child's stdout: ``("event", JobEvent)``, ``("result", value)``, ``("error", message)`` or
    ``("", None)`` for anything else (a library printing to stdout)."""
    try:
        ev = json.loads(line)
    except json.JSONDecodeError:
        return "", None
    if not isinstance(ev, dict):
        return "", None
    kind = ev.get("event")
    try:
        if kind == "progress":
            return "event", Progress(
                ev.get("stage", ""), int(ev.get("done", 0)), int(ev.get("total", 0)), ev.get("message", "")
            )
        if kind == "sample":
            return "event", Sample(ev["series"], float(ev["x"]), ev["values"])
        if kind == "log":
            return "event", LogLine(ev.get("text", ""), ev.get("level", "info"))
        if kind == "result":
            return "result", ev["value"]
        if kind == "error":
            return "error", str(ev.get("message", "the job failed"))
    except (KeyError, TypeError, ValueError):
        pass
    return "", None


class JobProcess:
    """A job run in a child process; iterate :meth:`events`, which returns the child's result (a dict)."""

    def __init__(self, kind: str, args: dict[str, Any]) -> None:
        fd, name = tempfile.mkstemp(prefix="splitscope-job-", suffix=".json")
        with open(fd, "w", encoding="utf-8") as f:
            json.dump({"kind": kind, "args": args}, f)
        self._args_file = Path(name)
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        env, root = child_env()
        self.proc = subprocess.Popen(
            child_command("job", name),
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            cwd=root,
            start_new_session=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True, name="job-child-reader")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def kill(self) -> None:
        """Stop the child: terminate, then kill after half a second; the children it started (the parser, a
        written-model check) are in its process group and go with it, not orphaned."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(0.5)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        self._close()

    def _signal(self, sig: int) -> None:
        """``sig`` to the child's whole process group (it leads one: started in a session of its own)."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError, AttributeError):  # no group left, or not POSIX
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def _close(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        self._args_file.unlink(missing_ok=True)

    def events(self, cancel: CancelToken | None = None) -> Generator[JobEvent, None, dict[str, Any]]:
        """Relay the child's events; return its result, or raise its error (one line)."""

        def cancelled() -> None:
            raise JobCancelledError()

        try:
            last = yield from relay(self._lines, cancel, cancelled, decode_line)
            rc = self.proc.wait()
        except BaseException:
            self.kill()
            raise
        result, error = last.get("result"), last.get("error")
        if cancel is not None and cancel.cancelled:
            self._close()
            raise JobCancelledError()
        tail = ""
        if result is None and error is None:
            self._stderr.seek(0)
            lines = [ln for ln in self._stderr.read().strip().splitlines() if ln.strip()]
            tail = lines[-1][:200] if lines else ""
        self._close()
        if error is not None:
            raise SplitscopeError(error)
        if result is None:
            how = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
            raise JobCrashedError(
                f"The job's process ended without a result ({how}){': ' + tail if tail else ''}; "
                "the app is fine: try again, or another backend."
            )
        return result
