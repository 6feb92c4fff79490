"""Run a sweep's cells: on Ray (a local one by default, a cluster's address when given), or in sequence.

Each cell runs in a child process of its own (:mod:`splitscope.engine.sweep.cell` through
:class:`splitscope.engine.process.JobProcess`, or over SSH for a remote target), so a crash, a timeout or a Cancel
ends that cell only: it is marked and the rest go on. Finished cells are kept by key
(:mod:`splitscope.engine.sweep.store`) and reused by the next run of the same cells. On Ray, a GPU cell asks for one
GPU (so cells spread over a machine's GPUs); a CPU cell asks for every CPU of a node, so two CPU cells never share a
machine's cores and time each other. Without Ray installed the same cells run in sequence, and the result says so.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from splitscope.engine.codec import stamp
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample, run_to_end
from splitscope.engine.sweep import store
from splitscope.engine.sweep.grid import Cell, cell_key

CELL_TIMEOUT_S = 900.0


def _version() -> str:
    import splitscope

    return str(getattr(splitscope, "__version__", "0"))


def _job(cell: Cell) -> Any:
    """The cell's child process (here, or on its SSH target)."""
    args = cell.params()
    if cell.target != "local":
        from splitscope.engine.remote.job import RemoteJob
        from splitscope.engine.remote.target import parse_target

        return RemoteJob(parse_target(cell.target), "sweep-cell", args, push=("model",))
    from splitscope.engine.process import JobProcess

    return JobProcess("sweep-cell", args)


def run_one(cell: Cell, timeout_s: float = CELL_TIMEOUT_S, cancel: CancelToken | None = None) -> dict[str, Any]:
    """Run one cell to its end: its document, with ``status`` done, failed, timeout or cancelled (never raises)."""
    t0 = time.perf_counter()
    token = CancelToken()
    timed_out = threading.Event()
    stop = threading.Event()

    def watch() -> None:
        """The deadline and the sweep's Cancel, checked while the cell's child says nothing (a hung build)."""
        while not stop.wait(0.1):
            if time.perf_counter() - t0 > timeout_s:
                timed_out.set()
                token.cancel()
                return
            if cancel is not None and cancel.cancelled:
                token.cancel()
                return

    watcher = threading.Thread(target=watch, daemon=True, name="sweep-cell-watch")
    watcher.start()
    doc: dict[str, Any] = {}
    try:
        doc = {"status": "done", **(run_to_end(_job(cell).events(token)) or {})}
    except JobCancelledError:
        doc = (
            {"status": "timeout", "error": f"over {timeout_s:g} s: stopped"}
            if timed_out.is_set()
            else {"status": "cancelled", "error": "cancelled"}
        )
    except SplitscopeError as e:
        doc = {"status": "failed", "error": e.message}
    except Exception as e:  # noqa: BLE001 - a cell's failure is its own, as one line
        doc = {"status": "failed", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    finally:
        stop.set()
    doc["seconds"] = round(time.perf_counter() - t0, 3)
    return doc


def _ray_cell(params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """The Ray task: one cell in a child process of the worker (a Cancel interrupts it and the child is killed)."""
    return run_one(Cell(**{**params, "keep": tuple(params.get("keep") or ())}), timeout_s)


def ray_module() -> Any:
    """Ray, or None when it is not installed."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        return None


def run_sweep(
    cells: list[Cell],
    *,
    ray: str | bool | None = None,
    timeout_s: float = CELL_TIMEOUT_S,
    cancel: CancelToken | None = None,
    folder: Path | None = None,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Run ``cells`` (finished ones reused); yield a ``sweep`` :class:`Sample` per cell as it ends; return the sweep.

    ``ray``: an address (``ray://host:10001``, ``auto``), True or None for a local Ray when installed, False for
    the sequence."""
    cancel = cancel or CancelToken()
    from splitscope.engine.remote.job import content_hash

    version = _version()
    hashes: dict[str, str] = {}
    docs: list[dict[str, Any]] = []
    todo: list[int] = []
    for i, c in enumerate(cells):
        if c.model not in hashes:
            p = Path(c.model)
            hashes[c.model] = content_hash(p) if p.is_file() else f"missing:{c.model}"
        key = cell_key(c, hashes[c.model], version)
        doc = {"index": i, "key": key, "label": c.label(), "params": c.params()}
        kept = store.load(key, folder)
        if kept is not None:
            doc.update({k: v for k, v in kept.items() if k not in doc}, reused=True)
        else:
            doc.update(status="pending", reused=False)
            todo.append(i)
        docs.append(doc)
    notes: list[str] = []
    total, done = len(cells), len(cells) - len(todo)
    for d in docs:
        if d["reused"]:
            yield Sample("sweep", float(d["index"]), d)
    yield Progress("sweep", done, total, f"{done} of {total} cells ({len(cells) - len(todo)} reused)")

    def finish(i: int, result: dict[str, Any]) -> Sample:
        nonlocal done
        docs[i].update(result)
        store.save(docs[i]["key"], docs[i], folder)
        done += 1
        return Sample("sweep", float(i), docs[i])

    rmod = ray_module() if ray is not False else None
    if ray not in (None, False, True) and rmod is None:
        raise SplitscopeError(f"--ray {ray}: Ray is not installed here: pip install 'splitscope[sweep]'.")
    runner = "ray" if rmod is not None and todo else "sequence"
    if rmod is None and ray is not False and todo:
        notes.append("Ray is not installed: the cells ran in sequence here (pip install 'splitscope[sweep]').")
    if runner == "ray":
        assert rmod is not None
        yield from _on_ray(rmod, cells, todo, ray, timeout_s, cancel, finish, notes)
    else:
        for i in todo:
            if cancel.cancelled:
                break
            yield Progress("sweep", done, total, f"Cell {i + 1} of {total}: {cells[i].label()}")
            yield finish(i, run_one(cells[i], timeout_s, cancel))
    for d in docs:
        if d.get("status") == "pending":
            d.update(status="cancelled", error="cancelled before it ran")
    yield Progress("sweep", total, total, "Done")
    if cancel.cancelled:
        raise JobCancelledError()
    return stamp("sweep", {"runner": runner, "cells": docs, "notes": notes, "version": version})


def _on_ray(rmod, cells, todo, address, timeout_s, cancel, finish, notes):  # type: ignore[no-untyped-def]
    started_here = not rmod.is_initialized()
    temp: str | None = None
    if started_here:
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if isinstance(address, str):
            kw["address"] = address
        else:
            temp = kw["_temp_dir"] = tempfile.mkdtemp(prefix="ss-ray-")  # not the user's /tmp/ray
            kw["num_cpus"] = os.cpu_count() or 1
        rmod.init(**kw)
    try:
        resources = rmod.cluster_resources()
        gpus = float(resources.get("GPU", 0))
        node_cpus = min((float(n["Resources"].get("CPU", 1)) for n in rmod.nodes() if n.get("Alive")), default=1.0)
        notes.append(
            f"Ray: {int(resources.get('CPU', 0))} CPUs and {int(gpus)} GPUs; a GPU cell takes one GPU, a CPU cell a "
            "whole node's cores (so that no two CPU cells time each other)."
        )
        task = rmod.remote(_ray_cell)
        refs: dict[Any, int] = {}
        for i in todo:
            c = cells[i]
            if c.target != "local":
                continue  # an SSH target's cells run one at a time from here (below): they never share its GPU
            if c.needs_gpu and gpus < 1:
                yield finish(i, {"status": "failed", "error": f"{c.backend} needs a GPU and the Ray cluster has none"})
                continue
            opts = {"num_gpus": 1, "num_cpus": 1} if c.needs_gpu else {"num_gpus": 0, "num_cpus": node_cpus}
            refs[task.options(**opts).remote(c.params(), timeout_s)] = i
        total = len(cells)
        remote = [i for i in todo if cells[i].target != "local"]
        while refs or remote:
            if cancel.cancelled:
                for ref in refs:
                    rmod.cancel(ref)  # interrupts the task: its child process is killed on the way out
                for i in [*refs.values(), *remote]:
                    yield finish(i, {"status": "cancelled", "error": "cancelled"})
                refs.clear()
                remote.clear()
                break
            ready, _ = rmod.wait(list(refs), num_returns=1, timeout=0.2)
            if not ready and remote:
                i = remote.pop(0)  # meanwhile, the next SSH cell (its target does the work)
                yield Progress("sweep", total - len(refs) - len(remote), total, f"Cell {i + 1}: {cells[i].label()}")
                yield finish(i, run_one(cells[i], timeout_s, cancel))
                continue
            for ref in ready:
                i = refs.pop(ref)
                try:
                    result = rmod.get(ref)
                except Exception as e:  # noqa: BLE001 - a worker that died: that cell failed
                    result = {"status": "failed", "error": f"the Ray task failed: {str(e).splitlines()[0][:160]}"}
                yield finish(i, result)
                yield Progress("sweep", total - len(refs), total, f"Cell {i + 1}: {cells[i].label()}")
    finally:
        if started_here:
            rmod.shutdown()
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
