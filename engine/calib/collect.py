"""Run the FP32 model over the calibration data once, folding every activation the Q/DQ plan needs into its
:class:`TensorStats` batch by batch (nothing kept beyond its batch), with progress and cancel; the statistics
are cached per (model, data) so that switching method or setting is instant."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper
from splitscope.engine.calib.data import CalibData, Prefetched, batches
from splitscope.engine.calib.stats import TensorStats
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Progress, Sample
from splitscope.engine.runtime.ort import InferenceError
from splitscope.engine.runtime.ort_runner import OrtRunner
from splitscope.engine.runtime.runner import Runner, open_ort


def _with_outputs(
    path: Path, tensors: list[str], proto: onnx.ModelProto | None = None
) -> tuple[bytes | str, Path | None]:
    """The model with ``tensors`` added as graph outputs: bytes, or (with external data) a file written beside
    the original so its data paths still resolve. ``proto``: the model as read already (external data not loaded),
    for its outputs' names.

    The file is not parsed and written again (a second or more for a model of hundreds of megabytes): its bytes
    are followed by a model holding only the new outputs, which a protobuf parser merges into the first, as it
    merges every message field that appears twice (the repeated outputs appended)."""
    m = proto if proto is not None else onnx.load(str(path), load_external_data=False)
    have = {o.name for o in m.graph.output}
    extra = onnx.ModelProto()
    extra.graph.output.extend(helper.make_empty_tensor_value_info(t) for t in dict.fromkeys(tensors) if t not in have)
    data = path.read_bytes() + extra.SerializeToString()
    from splitscope.engine.onnxio.writer import locations_in

    if not locations_in(m):
        return data, None
    fd, name = tempfile.mkstemp(prefix=".splitscope-calib-", suffix=".onnx", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return name, Path(name)


def _device_folder(runner: Runner, tensors: list[str], where: list[str]) -> Any:
    """A :class:`~splitscope.engine.calib.devstats.DeviceFolder` where the pass runs on CUDA and cuda-python's
    driver and NVRTC are there, else None (the host folds); ``where`` gets which, said in the result."""
    if not runner.on_device:
        where.append("host")
        return None
    try:
        from splitscope.engine.calib.devstats import DeviceFolder
        from splitscope.engine.paths import cache_dir

        folder = DeviceFolder(tensors, cache_dir() / "kernels")
    except Exception as e:  # noqa: BLE001 - no cuda-python, no NVRTC, no driver: the host folds them, as on CPU
        why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        where.append(f"host (the GPU's fold is unavailable: {why})")
        return None
    where.append("GPU")
    return folder


def _activations(want: list[str], outs: list[Any]) -> list[Any]:
    """The :class:`~splitscope.engine.calib.devstats.Activation` views of one batch's outputs left on the GPU
    (OrtValues: keep them while folding)."""
    from splitscope.engine.calib.devstats import Activation

    return [
        Activation(n, int(v.data_ptr()), int(np.prod(v.shape(), dtype=np.int64)), v.data_type(), v.numpy)
        for n, v in zip(want, outs, strict=True)
    ]


def fold_threads() -> int:
    """Threads folding the host's statistics: one on a small machine (ONNX Runtime keeps the other cores), a
    quarter of the cores (at most 8) on a large one, where one thread folding falls behind the inference."""
    return max(1, min(8, _cores() // 4))


def _cores() -> int:
    """The cores this process may run on (its affinity, which a container's CPU set narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 2


class _HostFolder:
    """Each batch's statistics folded on helper threads while ONNX Runtime runs the next batch (both release the
    GIL), the batch's tensors shared out by size; one batch in flight at most, and each tensor's statistics
    written by one thread at a time."""

    def __init__(self, want: list[str], stats: dict[str, TensorStats], threads: int) -> None:
        self.want, self.stats, self.threads = want, stats, max(1, threads)
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="splitscope-stats")
        self.pending: list[Future[None]] = []

    def _fold(self, part: list[tuple[str, np.ndarray]]) -> None:
        for n, a in part:
            self.stats[n].update(a)

    def submit(self, outs: list[np.ndarray]) -> None:
        parts: list[list[tuple[str, np.ndarray]]] = [[] for _ in range(self.threads)]
        load = [0] * self.threads
        for n, a in sorted(zip(self.want, outs, strict=True), key=lambda na: -na[1].size):
            k = load.index(min(load))
            parts[k].append((n, a))
            load[k] += a.size
        self.pending = [self.pool.submit(self._fold, p) for p in parts if p]

    def wait(self) -> dict[str, float] | None:
        """The previous batch folded: the live ranges of the first tensors (None before the first batch)."""
        if not self.pending:
            return None
        for f in self.pending:
            f.result()
        self.pending = []
        return {n: self.stats[n].absmax for n in self.want[:8]}

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _run_sample(runner: Runner, feeds: dict[str, np.ndarray], want: list[str], on_device: bool, done: int) -> Any:
    """One calibration sample through the runner: its outputs (and, on the device, the activations to fold there);
    an error names the sample and what to do."""
    try:  # left on the GPU only where they are folded there
        outs = runner.infer(feeds, want, on_host=not on_device)
    except InferenceError as e:
        hint = str(e).replace("give real inputs with --input FILE.npz", "give real samples with --data DIR")
        raise InferenceError(f"Calibration sample {done + 1}: {hint}") from None
    return outs, (_activations(want, outs) if on_device else None)


def _fold_on_device(
    device: Any, acts: Any, stats: dict[str, TensorStats], want: list[str], done: int
) -> dict[str, float]:
    """Fold one sample's activations on the GPU, in place; the first tensors' ranges so far, for the live plot."""
    try:
        live = device.fold(acts, stats)
    except Exception as e:  # noqa: BLE001 - a CUDA error from the driver (a GPU gone, out of memory)
        raise InferenceError(
            f"Calibration sample {done + 1}: folding its statistics on the GPU failed ({e}); "
            "calibrate with --backend ort-cpu"
        ) from None
    return {n: live.get(n, stats[n].absmax) for n in want[:8]}


def collect(
    path: str | os.PathLike[str],
    tensors: list[str],
    data: CalibData,
    backend: str = "ort-cpu",
    cancel: CancelToken | None = None,
    where: list[str] | None = None,
    proto: onnx.ModelProto | None = None,
    phases: dict[str, float] | None = None,
) -> Generator[JobEvent, None, dict[str, TensorStats]]:
    """Statistics of ``tensors`` over ``data`` (one FP32 pass); ``where`` gets where they were folded (the GPU
    on CUDA where it can, else the host); ``proto``: the model as the caller read it (its external data not
    loaded), so that it is not read again; ``phases`` gets the seconds of the pass's parts (the model with its
    outputs, the session, the GPU's folder, the first sample, the other samples, and within those ONNX Runtime's runs
    and the wait for the host's folding threads)."""
    cancel = cancel or CancelToken()
    path = Path(path)
    stats = {t: TensorStats(t) for t in tensors}
    phases = phases if phases is not None else {}
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(phases.get(name, 0.0) + now - clock[0], 4)
        clock[0] = now

    model, tmp = _with_outputs(path, tensors, proto)
    lap("model_s")
    samples = Prefetched(batches(data))  # the first samples read and decoded while the session is made
    runner: OrtRunner | None = None
    try:
        threads = fold_threads()
        ort_threads = max(1, _cores() - threads) if threads > 1 and backend == "ort-cpu" else 0
        runner = open_ort(
            path, backend, "The calibration statistics pass", model=model, threads=ort_threads, exact_fp32=True
        )
        yield from runner.open()
        lap("session_s")
        names = [o.name for o in runner.outputs()]
        want = [n for n in names if n in stats]
        total = data.samples if data.random else len(data.files)
        done = 0
        host = _HostFolder(want, stats, 1 if runner.on_device else threads)

        where = where if where is not None else []
        device = _device_folder(runner, want, where)
        if device is not None:
            lap("folder_s")
        try:
            if device is not None:
                yield LogLine("Calibration statistics folded on the GPU: only ranges and histograms are copied back")
            with contextlib.closing(samples):  # the next sample made meanwhile
                for feeds in samples:
                    cancel.raise_if_cancelled()
                    r = time.perf_counter()
                    outs, acts = _run_sample(runner, feeds, want, device is not None, done)
                    phases["runs_s"] = round(phases.get("runs_s", 0.0) + time.perf_counter() - r, 4)
                    if device is not None:  # folded now, in place: this batch's ranges
                        folded, at = _fold_on_device(device, acts, stats, want, done), done + 1
                        del acts
                    else:  # folded on the host's threads while the next batch runs: the previous batch's ranges
                        w = time.perf_counter()
                        folded, at = host.wait(), done
                        phases["fold_wait_s"] = round(phases.get("fold_wait_s", 0.0) + time.perf_counter() - w, 4)
                        host.submit(outs)
                    del outs
                    done += 1
                    lap("first_sample_s" if done == 1 else "samples_s")
                    if want and folded is not None:
                        yield Sample("range", float(at), folded)
                    yield Progress("calibrate", done, total, f"Calibration sample {done}/{total}")
            folded = host.wait()
            if device is not None:
                try:
                    device.read(stats)  # the statistics kept on the GPU for the whole pass
                except Exception as e:  # noqa: BLE001 - a CUDA error from the driver
                    raise InferenceError(
                        f"Reading the calibration statistics back from the GPU failed ({e}); calibrate with "
                        "--backend ort-cpu"
                    ) from None
            lap("samples_s")
            if want and folded is not None:
                yield Sample("range", float(done), folded)
        finally:
            host.close()
            if device is not None:
                device.close()
        if done == 0:
            why = "; ".join(data.skipped[:3]) + (f"; and {len(data.skipped) - 3} more" if len(data.skipped) > 3 else "")
            raise InferenceError(
                f"No calibration sample could be read ({len(data.skipped)} skipped: {why})."
                if data.skipped
                else "No calibration sample could be read: the data gave none."
            )
    finally:
        if runner is not None:
            runner.close()
        samples.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return stats


def save_stats(stats: dict[str, TensorStats], file: Path) -> None:
    """The statistics, atomically (``np.savez``)."""
    from splitscope.engine.report.files import atomic_path

    arrays: dict[str, np.ndarray] = {}
    for k, (name, s) in enumerate(stats.items()):
        a = s.to_arrays()
        arrays[f"h{k}"], arrays[f"s{k}"] = a["hist"], a["scalars"]
        arrays[f"n{k}"] = np.array(name)
    file.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(file) as tmp, open(tmp, "wb") as f:
        savez: Any = np.savez  # numpy's stub takes the arrays' names for its keyword arguments
        savez(f, **arrays)


def load_stats(file: Path) -> dict[str, TensorStats] | None:
    """Cached statistics, or None (missing or unreadable: computed again)."""
    try:
        with np.load(file, allow_pickle=False) as z:
            n = sum(1 for k in z.files if k.startswith("n"))
            return {str(z[f"n{k}"]): TensorStats.from_arrays(str(z[f"n{k}"]), z[f"h{k}"], z[f"s{k}"]) for k in range(n)}
    except (OSError, ValueError, KeyError):
        return None
