"""Every model Splitscope writes is run where users run it before it is reported as written: ONNX Runtime's
CPU provider at its default optimisation level (where it has kernels for the model) and TensorRT-RTX's ONNX
parser, each in a child process (``check`` in :mod:`splitscope.engine.entry`), since either can crash.

The outcomes, for the written model's notes:

- runs: nothing to say beyond one line;
- ONNX Runtime has no CPU kernel for an op (FP16/BF16 ops): said, and not an error;
- ONNX Runtime crashes at its default level but runs at ``ORT_ENABLE_BASIC``: ONNX Runtime's own bug, said in
  one line with the workaround;
- ONNX Runtime fails with any other error: a model Splitscope wrote wrong; :class:`WrittenModelError`, and the
  caller writes nothing.

Run as a child: ``python -m splitscope.engine.runtime.written MODEL ort|ort-basic|rtx [DIMS_JSON]``; it
prints one JSON line ``{"ok": bool, "error": str, "kind": "no-kernel"|"error"|""}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken

CHECK_TIMEOUT_S = 600.0


class WrittenModelError(SplitscopeError):
    """A model Splitscope wrote does not run in ONNX Runtime: nothing is written."""


@dataclass(slots=True)
class WrittenChecks:
    """What running the written model found."""

    ort: str
    """``runs``, ``no-kernel``, ``crashes-at-default`` (runs at ORT_ENABLE_BASIC), ``crashes``, ``timeout``,
    ``not-run`` (the check itself could not run), or ``sizes`` (the source fails at these sizes too)."""
    rtx: str = "not-run"
    """``parses``, ``rejects``, ``crashes`` or ``not-run`` (TensorRT-RTX not installed)."""
    notes: list[str] = field(default_factory=list)


def _exited(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    """Whether ``proc`` has exited, waiting up to ``wait_s`` for it."""
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def _check_in_child(
    path: Path, how: str, dims: dict[str, int] | None, cancel: CancelToken | None, timeout: float
) -> tuple[dict[str, Any] | None, int, str]:
    """Run one check in a child; returns (its JSON answer or None, return code, the last line of its stderr).
    Its output goes to files, not pipes: TensorRT's logger writes to stdout, and a full pipe would stall it."""
    from splitscope.engine.entry import child_command, child_env

    env, root = child_env()
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err,
    ):
        proc = subprocess.Popen(
            child_command("check", str(path), how, json.dumps(dims or {})),
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root,
        )
        t0 = time.monotonic()
        try:
            while not _exited(proc, 0.05):  # back at once when it exits, every 50 ms to look at Cancel
                if cancel is not None and cancel.cancelled:
                    raise JobCancelledError()
                if time.monotonic() - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    return {"ok": False, "kind": "timeout", "error": f"no answer in {timeout:.0f} s"}, 0, ""
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        err.seek(0)
        line = next((ln for ln in reversed(out.read().splitlines()) if ln.startswith("{")), None)
        tail = next((ln.strip() for ln in reversed(err.read().splitlines()) if ln.strip()), "")
    return (json.loads(line) if line else None), proc.returncode, tail[:200]


def ort_crashes_on(
    path: str | Path,
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    timeout: float = CHECK_TIMEOUT_S,
) -> bool:
    """Whether ONNX Runtime's CPU provider crashes (a signal, not an error) creating and running ``path`` at its
    default optimisation level: asked in a child, before a caller runs the model in its own process."""
    res, rc, _ = _check_in_child(Path(path), "ort", dims, cancel, timeout)
    return res is None and rc < 0


def verify_written(
    path: str | Path,
    dims: dict[str, int] | None = None,
    *,
    source: str | Path | None = None,
    rtx: bool = True,
    cancel: CancelToken | None = None,
    timeout: float = CHECK_TIMEOUT_S,
) -> WrittenChecks:
    """Load and run ``path`` in ONNX Runtime CPU at its default optimisation level and parse it with
    TensorRT-RTX (when installed); what was found, with the notes to report. Raises :class:`WrittenModelError`
    when ONNX Runtime refuses the model for a reason other than a missing kernel, unless the ``source`` model it
    was made from fails there too (sizes a traced model cannot take: said in a note)."""
    import onnxruntime as ort
    from splitscope.engine._optional import installed

    path = Path(path)
    res, rc, tail = _check_in_child(path, "ort", dims, cancel, timeout)
    checks = WrittenChecks("runs")
    notes = checks.notes
    if res is None and rc >= 0:  # an exit without an answer: the check could not run (not ONNX Runtime's crash)
        checks.ort = "not-run"
        notes.append(f"{path.name} could not be checked in ONNX Runtime (exit code {rc}{': ' + tail if tail else ''})")
    elif res is None:  # killed by a signal: ONNX Runtime crashed
        basic, _, _ = _check_in_child(path, "ort-basic", dims, cancel, timeout)
        if basic is not None and basic.get("ok"):
            checks.ort = "crashes-at-default"
            notes.append(
                f"ONNX Runtime {ort.__version__}'s CPU provider crashes on {path.name} at its default "
                f"optimisation level (signal {-rc}; its bug: the model is valid ONNX): load it with "
                "SessionOptions.graph_optimization_level = ORT_ENABLE_BASIC"
            )
        else:
            checks.ort = "crashes"
            notes.append(
                f"ONNX Runtime {ort.__version__}'s CPU provider crashes on {path.name} (signal {-rc}), also at "
                "its basic optimisation level: run it on another provider"
            )
    elif res.get("ok"):
        notes.append(f"{path.name} loads and runs in ONNX Runtime {ort.__version__} (CPU, default optimisation)")
    elif res.get("kind") == "no-kernel":
        checks.ort = "no-kernel"
        notes.append(
            f"ONNX Runtime's CPU provider has no kernel for part of {path.name} ({res['error'][:120]}): "
            "not run on the CPU"
        )
    elif res.get("kind") == "timeout":
        checks.ort = "timeout"
        notes.append(f"{path.name} was not run in ONNX Runtime: {res['error']}")
    else:
        src = _check_in_child(Path(source), "ort", dims, cancel, timeout)[0] if source is not None else None
        if src is not None and not src.get("ok"):
            checks.ort = "sizes"
            notes.append(
                f"{path.name} was not run in ONNX Runtime at these sizes: the original fails there too "
                f"({src.get('error', '')[:120]}); give the model's dims with --dim"
            )
        else:
            raise WrittenModelError(
                f"The written model does not run in ONNX Runtime ({res.get('error', '')[:200]}):"
                " nothing was written; report it with the model."
            )
    if rtx and installed("tensorrt_rtx"):
        res, rc, tail = _check_in_child(path, "rtx", None, cancel, timeout)
        if res is None:
            checks.rtx = "crashes"
            notes.append(f"TensorRT-RTX's parser crashed on {path.name} (exit {rc}{': ' + tail if tail else ''})")
        elif res.get("ok"):
            checks.rtx = "parses"
            notes.append(f"TensorRT-RTX's parser takes {path.name}")
        else:
            checks.rtx = "rejects"
            notes.append(f"TensorRT-RTX's parser reports on {path.name}: {res.get('error', '')[:200]}")
    return checks


def _answer(ok: bool, error: str = "", kind: str = "") -> int:
    sys.stdout.write(json.dumps({"ok": ok, "error": error, "kind": kind}) + "\n")
    sys.stdout.flush()
    return 0


def _check_ort(path: Path, dims: dict[str, int], basic: bool) -> int:
    import onnx
    import onnxruntime as ort
    from splitscope.engine.runtime.feeds import input_rules
    from splitscope.engine.runtime.inputs import input_specs, random_feeds

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if basic:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    try:
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        proto = onnx.load(str(path), load_external_data=False)
        # Whether the written model runs at all: a dim without a value may be 1 here (no figure comes of it).
        feeds = random_feeds(input_specs(proto), dims, 0, input_rules(proto), fill=1)
        sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's own error types
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        no_kernel = "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text
        return _answer(False, text[:400], "no-kernel" if no_kernel else "error")
    return _answer(True)


def _check_rtx(path: Path) -> int:
    from splitscope.engine.runtime.trt import trt_module

    trt = trt_module("rtx")

    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if parser.parse_from_file(str(path)):
        return _answer(True)
    errs = [parser.get_error(i).desc() for i in range(parser.num_errors)]
    return _answer(False, f"{len(errs)} errors; the first: {(errs or ['none named'])[0][:300]}", "error")


def main(argv: list[str] | None = None) -> int:
    """Child entry point: ``MODEL ort|ort-basic|rtx [DIMS_JSON]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    path, how = Path(argv[0]), argv[1]
    dims = {k: int(v) for k, v in json.loads(argv[2]).items()} if len(argv) > 2 else {}
    if how in ("ort", "ort-basic"):
        return _check_ort(path, dims, how == "ort-basic")
    if how == "rtx":
        return _check_rtx(path)
    return _answer(False, f"unknown check {how!r}", "error")


if __name__ == "__main__":
    sys.exit(main())
