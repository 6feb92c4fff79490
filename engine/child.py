"""The child's side of a job run in a process of its own (the parent is
:class:`splitscope.engine.process.JobProcess`): ``python -m splitscope.engine.child ARGS.json`` reads the job's
kind and arguments, runs it, and writes one JSON object per line to stdout: ``progress``, ``sample``, ``log``, and
at the end ``result`` or ``error``. A crash or a hang in ONNX Runtime, TensorRT or the driver ends the job with a
message, never the app.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import JobEvent, LogLine, Progress, Sample


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, default=_plain) + "\n")
    sys.stdout.flush()


def _plain(o: object) -> object:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def _profile(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    from splitscope.engine.runtime.profile import profile
    from splitscope.engine.split.analyze import analyze

    dims = {k: int(v) for k, v in (args.get("dims") or {}).items()}
    gm = yield from analyze(args["model"], parser=args.get("parser", "table"), dims=dims)
    res = yield from profile(
        args["model"],
        gm,
        backend=args.get("backend", "ort-cpu"),
        iterations=int(args.get("iterations", 100)),
        warmup=int(args.get("warmup", 10)),
        profiled=int(args.get("profiled", 20)),
        dims=dims,
        input_file=args.get("input"),
        custom_ops=args.get("custom_ops"),
    )
    return res.to_json()


def _calibrate(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    from splitscope.engine.calib.calibrate import calibrate

    return (
        yield from calibrate(
            args["model"],
            args["out"],
            data=args.get("data", "random"),
            method=args.get("method", "entropy"),
            precision=args.get("precision", "int8"),
            samples=int(args.get("samples", 32)),
            keep=list(args.get("keep") or []),
            dims={k: int(v) for k, v in (args.get("dims") or {}).items()},
            details=True,
            budget=args.get("budget"),
            half=list(args.get("half") or []),
            half_precision=args.get("half_precision", "fp16"),
            labels=args.get("labels"),
            recipe=args.get("recipe"),
            metric=args.get("metric", "auto"),
            percentile=float(args.get("percentile", 99.99)),
            sensitivity=bool(args.get("sensitivity", False)),
            backend=args.get("backend", "ort-cpu"),
        )
    )


def _generate(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """A generation profile: prefill, then decode steps feeding the cache back."""
    from splitscope.engine.runtime.generate import GENERATIONS, generate

    res = yield from generate(
        args["model"],
        args.get("backend", "ort-cpu"),
        args["prompt_len"],
        args["steps"],
        generations=args.get("generations", GENERATIONS),
    )
    return res.document(args["model"])


def _sweep_cell(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """One cell of a sweep: calibrate if its precision asks, then profile."""
    from splitscope.engine.sweep.cell import run_cell

    return (yield from run_cell(**args))


def _plugin_parse(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """The real parser with a generated plugin's creator registered (it may abort)."""
    from splitscope.engine.kernel.plugin import registered_parse

    return (yield from registered_parse(args["model"], args["plugin"], args.get("backend", "rtx")))


def _kernel(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """The kernel workbench: extract, capture, reference, project, parser, GPU run."""
    from splitscope.engine.kernel.job import kernel_job

    return (yield from kernel_job(**args))


def _verify(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """Build each partition at the dims in force; narrow down what fails."""
    from splitscope.engine.model import Partition
    from splitscope.engine.runtime.verify import verify
    from splitscope.engine.split.analyze import analyze

    dims = {k: int(v) for k, v in (args.get("dims") or {}).items()}
    gm = yield from analyze(args["model"], parser="table", dims=dims)
    gm.partitions = [Partition(k, list(nodes), []) for k, nodes in enumerate(args["parts"])]
    ranges = {k: [int(x) for x in v] for k, v in (args.get("ranges") or {}).items()}
    backend, budget = args.get("backend", "rtx"), float(args.get("budget", 300))
    report = yield from verify(args["model"], gm, backend, budget, ranges=ranges)
    return report.to_json()


def _build(args: dict[str, Any]) -> Generator[JobEvent, None, Any]:
    """A TensorRT(-RTX) build: its builder's log, for the layers it lists."""
    from splitscope.engine.runtime.trt import build_and_list_layers

    def phase(name: str, step: int, total: int) -> None:  # the builder calls back from its own C++ loop
        _emit({"event": "progress", "stage": "build", "done": step, "total": total, "message": f"Building: {name}"})

    yield Progress("build", 0, 0, f"Building {Path(args['model']).name} with {args.get('backend', 'rtx')}")
    t0 = time.perf_counter()
    plan, lines = build_and_list_layers(
        args["model"],
        args.get("backend", "rtx"),
        {k: int(v) for k, v in (args.get("dims") or {}).items()},
        None,
        phase,
    )
    return {"lines": lines, "engine_bytes": len(plan), "seconds": round(time.perf_counter() - t0, 3)}


KINDS: dict[str, Callable[[dict[str, Any]], Generator[JobEvent, None, Any]]] = {
    "profile": _profile,
    "calibrate": _calibrate,
    "generate": _generate,
    "sweep-cell": _sweep_cell,
    "plugin-parse": _plugin_parse,
    "kernel": _kernel,
    "verify": _verify,
    "build": _build,
}
"""Every job kind a child runs: its arguments (JSON) in, its events out, its result (JSON) at the end."""

EXTRA_KINDS = "SPLITSCOPE_JOB_KINDS"
"""More kinds, from the environment: ``NAME=FILE.py:FUNCTION`` entries separated by ``;`` (the tests' own kinds, a
child that hangs or crashes, come this way, and stay out of the product)."""


def job_kind(kind: str) -> Callable[[dict[str, Any]], Generator[JobEvent, None, Any]]:
    """The function that runs jobs of ``kind``: one of :data:`KINDS`, or one named in :data:`EXTRA_KINDS`."""
    if kind in KINDS:
        return KINDS[kind]
    for entry in os.environ.get(EXTRA_KINDS, "").split(";"):
        name, _, target = entry.partition("=")
        path, _, function = target.strip().rpartition(":")
        if name.strip() == kind and path and function:
            import importlib.util

            spec = importlib.util.spec_from_file_location(f"splitscope_job_kind_{kind.replace('-', '_')}", path)
            if spec is None or spec.loader is None:
                break
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return getattr(module, function)
    raise SplitscopeError(f"unknown job kind {kind!r}")


def main(argv: list[str] | None = None) -> int:
    """Child entry point: run the job in ``argv[0]`` (a JSON file), streaming events to stdout."""
    argv = list(sys.argv[1:] if argv is None else argv)
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))

    def _stop(*_: object) -> None:  # Cancel sends SIGTERM: unwind, so half-written files are removed
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    if hasattr(os, "nice"):
        # A CPU backend takes every core; a slightly lower priority leaves the window's thread its frame
        # when it needs one (the measured latency is only touched while the window is busy).
        with contextlib.suppress(OSError):
            os.nice(4)
    try:
        gen = job_kind(spec["kind"])(spec.get("args", {}))
        while True:
            try:
                ev = next(gen)
            except StopIteration as stop:
                _emit({"event": "result", "value": stop.value})
                return 0
            if isinstance(ev, Progress):
                _emit(
                    {"event": "progress", "stage": ev.stage, "done": ev.done, "total": ev.total, "message": ev.message}
                )
            elif isinstance(ev, Sample):
                _emit({"event": "sample", "series": ev.series, "x": ev.x, "values": ev.values})
            elif isinstance(ev, LogLine):
                _emit({"event": "log", "text": ev.text, "level": ev.level})
    except SplitscopeError as e:
        _emit({"event": "error", "message": e.message})
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - anything else reaches the parent as one line, the traceback on stderr
        traceback.print_exc()
        _emit({"event": "error", "message": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"})
        return 1


if __name__ == "__main__":
    sys.exit(main())
