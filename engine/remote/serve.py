"""The target's side of a remote job: ``python -m splitscope.engine.remote.serve JOB.json``.

It starts the same child as a local job (:mod:`splitscope.engine.child`, its JSON lines going straight to this
process's stdout, the SSH channel) in a process group of its own, and watches stdin: a ``cancel`` line, or the
end of stdin (the workstation closed the channel, or the connection dropped), terminates the whole group, so
nothing keeps running on the GPU box for a job nobody waits for. The job's file is removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from splitscope.engine.entry import child_command, child_env


def describe() -> dict[str, Any]:
    """What the target is: Splitscope's version, the host, Python, and the GPU NVML names (none without one)."""
    import splitscope

    gpus: list[str] = []
    with contextlib.suppress(Exception):  # no NVML, no driver, no GPU: the target runs CPU jobs
        import importlib

        nv = importlib.import_module("pynvml")
        nv.nvmlInit()
        try:
            for i in range(nv.nvmlDeviceGetCount()):
                name = nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(i))
                gpus.append(name.decode() if isinstance(name, bytes) else str(name))
        finally:
            nv.nvmlShutdown()
    return {
        "version": getattr(splitscope, "__version__", "0"),
        "host": platform.node(),
        "python": platform.python_version(),
        "gpus": gpus,
    }


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 0.5), (signal.SIGKILL, None)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        if wait is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(wait)


def main(argv: list[str] | None = None) -> int:
    """Run the job in ``argv[0]``; stop it when stdin says ``cancel`` or ends."""
    argv = list(sys.argv[1:] if argv is None else argv)
    job = Path(argv[0])
    env, root = child_env()
    sys.stdout.write(json.dumps({"event": "log", "text": f"running on {platform.node()}", "level": "info"}) + "\n")
    sys.stdout.flush()
    proc = subprocess.Popen(
        child_command("job", str(job)), stdin=subprocess.DEVNULL, env=env, cwd=root, start_new_session=True
    )

    def watch() -> None:
        for line in sys.stdin:
            if line.strip() == "cancel":
                break
        _stop(proc)

    threading.Thread(target=watch, daemon=True, name="remote-job-watch").start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        _stop(proc)
        rc = 130
    finally:
        job.unlink(missing_ok=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
