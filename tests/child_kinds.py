"""Job kinds for the tests of the job machinery, run by a child process as the product's kinds are (named to it
through ``SPLITSCOPE_JOB_KINDS`` by the ``test_job_kinds`` fixture, and by the test SSH server's environment)."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from splitscope.engine.jobs import JobEvent, Progress

KINDS = {"test-sleep": "sleep", "test-crash": "crash"}


def entries() -> str:
    """The ``SPLITSCOPE_JOB_KINDS`` value naming these kinds."""
    return ";".join(f"{kind}={Path(__file__).resolve()}:{fn}" for kind, fn in KINDS.items())


def sleep(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """A child that hangs (until cancelled)."""
    yield Progress("sleep", 0, 0, "sleeping")
    time.sleep(float(args.get("seconds", 60)))
    return {}


def crash(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """A child that dies as a native library would."""
    yield Progress("crash", 0, 0, "about to crash")
    os.abort()
