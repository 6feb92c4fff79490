"""Ask the real TensorRT (or TensorRT-RTX) ONNX parser which nodes it takes.

The parser runs in a child process (:mod:`splitscope.engine.split.parser_proc`): it may crash on
odd models, a hard cancel must be able to kill it, and the parent builds its
graph model meanwhile. This module starts it, relays its progress and turns its
answer into per-node verdicts.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine._optional import installed
from splitscope.engine.entry import child_command, child_env
from splitscope.engine.errors import JobCancelledError, ParserUnavailableError
from splitscope.engine.jobs import CancelToken, Progress

BACKENDS = {"tensorrt": "tensorrt", "rtx": "tensorrt_rtx"}
DISPLAY = {"tensorrt": "tensorrt", "tensorrt_rtx": "tensorrt-rtx"}


def resolve_backend(parser: str) -> str | None:
    """Module to use for ``--parser`` (auto|tensorrt|rtx|table); None means the table.

    Raises
    ------
    ParserUnavailableError
        When a named parser is not installed.
    """
    if parser == "table":
        return None
    if parser == "auto":
        for module in ("tensorrt", "tensorrt_rtx"):
            if installed(module):
                return module
        return None
    module = BACKENDS.get(parser)
    if module is None:
        raise ParserUnavailableError(f"Unknown parser '{parser}': use auto, tensorrt, rtx or table.")
    if not installed(module):
        extra = "tensorrt" if parser == "tensorrt" else "rtx"
        raise ParserUnavailableError(
            f"The {DISPLAY[module]} Python package is not installed: pip install 'splitscope[{extra}]', "
            "or use --parser table."
        )
    return module


_EARLY: dict[tuple[str, Path], ParserProcess] = {}
"""Parser children started before the analysis asked (:func:`start_early`), by module and model path."""


def start_early(parser: str, model: str) -> None:
    """Start the parser on ``model`` now, before the rest of the engine is imported (the command line's
    ``analyze``: the parser is the longest part, so it goes first); the analysis takes it (:func:`take_early`).
    Nothing starts for the table, a parser not installed, or a path that is not a file (the analysis says why)."""
    try:
        module = resolve_backend(parser)
    except ParserUnavailableError:
        return
    path = Path(model).resolve()
    if module is not None and path.is_file() and (module, path) not in _EARLY:
        _EARLY[(module, path)] = ParserProcess(module, path)


def take_early(module: str, model: Path) -> ParserProcess | None:
    """The parser started early on ``model`` with ``module``, now the caller's; None when there is none."""
    return _EARLY.pop((module, model.resolve()), None)


def drop_early() -> None:
    """Stop the parsers started early that no analysis took (it failed before asking)."""
    while _EARLY:
        _EARLY.popitem()[1].kill()


@dataclass(slots=True)
class ParserAnswer:
    """What the parser said about the main graph's nodes (by index)."""

    module: str
    version: str = ""
    plugin: dict[int, str] = field(default_factory=dict)
    unverified: dict[int, str] = field(default_factory=dict)
    calls: int = 0
    seconds: float = 0.0
    first_call: dict[str, Any] = field(default_factory=dict)
    """The first call's answer in brief: ``supported`` (the whole model), ``subgraph_sizes`` (nodes in each subgraph
    it reported), ``errors`` (how many)."""
    notes: list[str] = field(default_factory=list)
    cut: dict[int, str] = field(default_factory=dict)
    """Nodes cut from the model before the parser was asked (malformed ONNX, or after a crash)."""
    failure: str = ""
    """Non-empty when the parser could not answer at all (crash, import error)."""
    crashed: bool = False
    """The child died (a signal or an unexpected exit), rather than reporting an error."""
    crashers: dict[int, str] = field(default_factory=dict)
    """Nodes the parser process crashes on (found by :mod:`splitscope.engine.split.crash`), with why."""


class ParserProcess:
    """A running parser child; iterate :meth:`events` then read :attr:`answer`."""

    def __init__(self, module: str, model: Path, cut: dict[int, str] | None = None) -> None:
        """Start the child on ``model``; nodes in ``cut`` (index: why) are cut out before the first call."""
        self.module = module
        self.model = model
        self.answer = ParserAnswer(module, cut=dict(cut or {}))
        env, root = child_env()
        # stderr goes to a file: TensorRT may log a lot, and a full pipe would block the child.
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        args = [module, str(model.resolve())]
        self._cut_file: Path | None = None
        if cut:
            # A file, not an argument: tens of thousands of indices pass the OS's argument-length limit.
            fd, name = tempfile.mkstemp(prefix="splitscope-cut-", suffix=".json")
            with open(fd, "w", encoding="utf-8") as f:
                json.dump(sorted(cut), f)
            self._cut_file = Path(name)
            args.append(name)
        self.proc = subprocess.Popen(
            child_command("parser", *args),
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            cwd=root,
        )

    def kill(self) -> None:
        """Hard-stop the child (cancel)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close()

    def _close(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        if self._cut_file is not None:
            self._cut_file.unlink(missing_ok=True)

    def events(self, cancel: CancelToken | None = None) -> Generator[Progress, None, ParserAnswer]:
        """Relay the child's progress; return its answer when it exits."""
        assert self.proc.stdout is not None
        a = self.answer
        try:
            for line in self.proc.stdout:
                if cancel is not None and cancel.cancelled:
                    raise JobCancelledError()
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue
                kind = ev.get("event")
                if kind == "version":
                    a.version = ev.get("version", "")
                elif kind == "progress":
                    rem = ev.get("remaining")
                    msg = f"{DISPLAY[self.module]} parser call {ev.get('call')}"
                    if rem is not None:
                        msg += f": {ev.get('plugin')} rejected, re-checking {rem} nodes"
                    yield Progress("parser", int(ev.get("call", 0)), 0, msg)
                elif kind == "names" and ev.get("key") in ("plugin", "unverified"):
                    getattr(a, ev["key"]).update({int(k): v for k, v in ev["part"].items()})
                elif kind == "result":
                    a.plugin.update({int(k): v for k, v in ev["plugin"].items()})
                    a.unverified.update({int(k): v for k, v in ev["unverified"].items()})
                    a.calls = int(ev["calls"])
                    a.seconds = float(ev.get("seconds", 0.0))
                    a.first_call = ev.get("first_call", {})
                    a.notes = list(ev.get("notes", []))
                elif kind == "error":
                    a.failure = f"{DISPLAY[self.module]} {ev.get('kind')} failed: {ev.get('message')}"
            rc = self.proc.wait()
            if cancel is not None and cancel.cancelled:
                raise JobCancelledError()
            if rc != 0 and not a.failure:
                self._stderr.seek(0)
                tail = self._stderr.read().strip().splitlines()[-1:] or [""]
                sig = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
                a.failure = f"{DISPLAY[self.module]} parser crashed ({sig}) {tail[0][:200]}".strip()
                a.crashed = True
        except BaseException:
            self.kill()
            raise
        self._close()
        return a
