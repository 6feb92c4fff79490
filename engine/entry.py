"""Every way into the engine, in one registry: the CLI's verbs and the child processes it starts.

The launcher (``main.py``, which is also the frozen app's entry point), the PyInstaller spec and the tests all
read these tables, so a verb or child added here works the same from a checkout, an installed package and the
bundle. A frozen app has no ``python -m``: a child re-enters the app binary as ``--engine-child NAME ARGS``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path

VERBS = ("analyze", "optimize", "profile", "engine", "calibrate", "kernel", "report", "sweep", "targets")
"""The CLI's verbs (``splitscope VERB ...``); the bundle runs the CLI when its first argument is one."""

CHILDREN: dict[str, str] = {
    "parser": "splitscope.engine.split.parser_proc",
    "shapes": "splitscope.engine.onnxio.shape_proc",
    "job": "splitscope.engine.child",
    "check": "splitscope.engine.runtime.written",
    "preview": "splitscope.engine.split.preview_proc",
}
"""Child processes by name: the module whose ``main(argv)`` runs in the child. ``job`` runs the native jobs
(profile, calibrate, the TensorRT build) through one event protocol (:mod:`splitscope.engine.child`)."""

FROZEN_FLAG = "--engine-child"


BACKGROUND_ENV = "SPLITSCOPE_CHILD_BACKGROUND"
"""Set in a child's environment when its parent asked for analysing children at a lower priority."""

BACKGROUND_NICE = 10
"""How much lower (Unix's niceness) an analysing child runs when asked."""

_background = False


def analyse_in_background() -> None:
    """From now on, this process's analysing children (the parser's, shape inference) run at a lower priority: the
    window's call. On two cores, two such children, the worker and the window's thread asked for more than the
    machine has, and the window's thread waited its turn (stalls of 120-190 ms while a million-node model was
    analysed); now it comes first. Measuring children (profile, calibration) keep theirs."""
    global _background
    _background = True


def lower_priority() -> None:
    """An analysing child's first call: run at a lower priority if the parent asked (:func:`analyse_in_background`;
    nothing where the system has no niceness)."""
    if os.environ.get(BACKGROUND_ENV) == "1" and hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(BACKGROUND_NICE)


def child_env() -> tuple[dict[str, str], str]:
    """Environment and working folder for an engine child process (a checkout's folders on its path)."""
    import splitscope

    root = str(Path(splitscope.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if _background:
        env[BACKGROUND_ENV] = "1"
    return env, root


def child_command(name: str, *args: str) -> list[str]:
    """Command line that runs the child ``name`` (a key of :data:`CHILDREN`) with ``args``."""
    module = CHILDREN[name]
    if getattr(sys, "frozen", False):
        return [sys.executable, FROZEN_FLAG, name, *args]
    return [sys.executable, "-m", module, *args]


def run_child(name: str, argv: list[str]) -> int:
    """Run the child ``name`` in this process (the frozen app's ``--engine-child``); 2 for an unknown one."""
    if name not in CHILDREN:
        sys.stderr.write(f"splitscope: unknown engine child {name!r} (known: {', '.join(CHILDREN)})\n")
        return 2
    return int(importlib.import_module(CHILDREN[name]).main(argv))
