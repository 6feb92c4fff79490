"""Compile a CUDA C++ kernel at run time with NVRTC and launch it on real tensors (cuda-python's driver and NVRTC
bindings): numerics against a reference, time by CUDA events.

This module is self-contained (numpy and ``cuda.bindings`` only): it is copied as ``launch.py`` into every
exported plugin project, where the plugin's ``enqueue`` and the project's test use it too.

The launch convention, for a kernel written by hand or generated:

- ``extern "C" __global__ void kernel(const T* in0, ..., T* out0, ...)``: the extract's inputs in order, then its
  outputs, as device pointers (the first ``extern "C" __global__`` function when none is named ``kernel``).
- Sizes are compile-time macros: ``N`` (elements of output 0), ``ROWS`` and ``COLS`` (output 0 as rows of its last
  axis), ``IN{i}_N``, ``IN{i}_RANK``, ``IN{i}_D{k}``, the same for ``OUT{i}``, and ``ATTR_{NAME}`` for the op's
  numeric attributes (upper case).
- One comment line sets the launch: ``// launch: grid=CEIL_DIV(N, 256) block=256 shared=0``; its expressions use
  the macros above, ``CEIL_DIV``, ``MIN`` and ``MAX``; ``grid`` and ``block`` take up to three values
  (``grid=(ROWS, 1, 1)``).
"""

from __future__ import annotations

import ast
import hashlib
import math
import operator
import os
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

LAUNCH_RE = re.compile(r"//\s*launch:\s*(.*)")
ERROR_RE = re.compile(r"\((\d+)\):\s*(error|warning)\s*:?\s*(.*)")


class CompileError(Exception):
    """NVRTC said no; ``line`` is the first error's line in the source (1-based) and ``log`` the whole log."""

    def __init__(self, message: str, line: int | None = None, log: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.log = log


class LaunchError(Exception):
    """The launch failed (the kernel compiled)."""


class LaunchLineError(LaunchError):
    """The launch line is missing or wrong, or the source declares no kernel."""


def macros(
    inputs: list[np.ndarray], outputs: list[tuple[tuple[int, ...], Any]], attributes: dict[str, Any] | None = None
) -> dict[str, int | float]:
    """The compile-time sizes and attributes of the launch convention."""
    out: dict[str, int | float] = {}
    for tag, shapes in (("IN", [a.shape for a in inputs]), ("OUT", [s for s, _ in outputs])):
        for i, shape in enumerate(shapes):
            out[f"{tag}{i}_N"] = int(math.prod(shape))
            out[f"{tag}{i}_RANK"] = len(shape)
            for k, d in enumerate(shape):
                out[f"{tag}{i}_D{k}"] = int(d)
    first = outputs[0][0] if outputs else ()
    out["N"] = int(math.prod(first))
    out["COLS"] = int(first[-1]) if first else 1
    out["ROWS"] = out["N"] // max(int(out["COLS"]), 1)
    for name, v in (attributes or {}).items():
        key = "ATTR_" + re.sub(r"\W", "_", name).upper()
        if isinstance(v, bool | np.bool_ | int | np.integer):
            out[key] = int(v)
        elif isinstance(v, float | np.floating):
            out[key] = float(v)
    return out


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,
    ast.Mod: operator.mod,
    ast.USub: operator.neg,
}
_FUNCS: dict[str, Callable[..., int]] = {
    "CEIL_DIV": lambda a, b: -(-int(a) // int(b)),
    "MIN": min,
    "MAX": max,
}


def _eval(node: ast.AST, names: dict[str, int | float]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise LaunchLineError(f"launch line: unknown name {node.id} (macros: N, ROWS, COLS, IN0_D0, ...)")
        return int(names[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left, names), _eval(node.right, names))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand, names))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        return int(_FUNCS[node.func.id](*(_eval(a, names) for a in node.args)))
    raise LaunchLineError(f"launch line: cannot evaluate '{ast.unparse(node)}'")


def _dims3(text: str, names: dict[str, int | float]) -> tuple[int, int, int]:
    tree = ast.parse(text.strip(), mode="eval").body
    parts = tree.elts if isinstance(tree, ast.Tuple) else [tree]
    vals = [max(int(_eval(p, names)), 1) for p in parts][:3]
    while len(vals) < 3:
        vals.append(1)
    return vals[0], vals[1], vals[2]


@dataclass
class Launch:
    """Where and how to launch: the kernel's name, grid, block and dynamic shared memory."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int = 0


def launch_spec(source: str, names: dict[str, int | float]) -> Launch:
    """The kernel's name and its launch, from the source's ``// launch:`` line."""
    m = LAUNCH_RE.search(source)
    if m is None:
        raise LaunchLineError("No launch line: add '// launch: grid=CEIL_DIV(N, 256) block=256' to the source.")
    text = m.group(1)
    keys = list(re.finditer(r"\b(grid|block|shared)\s*=", text))
    fields = {
        k.group(1): text[k.end() : keys[j + 1].start() if j + 1 < len(keys) else len(text)].strip()
        for j, k in enumerate(keys)
    }
    if "grid" not in fields or "block" not in fields:
        raise LaunchLineError("The launch line needs grid= and block= (e.g. grid=CEIL_DIV(N, 256) block=256).")
    kernels = re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)', source)
    if not kernels:
        raise LaunchLineError('No kernel: declare it extern "C" __global__ void kernel(...).')
    name = "kernel" if "kernel" in kernels else kernels[0]
    try:
        shared = int(_eval(ast.parse(fields.get("shared", "0"), mode="eval").body, names))
        return Launch(name, _dims3(fields["grid"], names), _dims3(fields["block"], names), shared)
    except SyntaxError as e:
        raise LaunchLineError(f"launch line: {e.msg}") from None
    except (ZeroDivisionError, TypeError, ValueError) as e:
        raise LaunchLineError(f"launch line: {e}") from None


def _driver() -> Any:
    import importlib

    return importlib.import_module("cuda.bindings.driver")  # compiled modules their stubs do not describe


def _nvrtc() -> Any:
    import importlib

    return importlib.import_module("cuda.bindings.nvrtc")


def _ok(result: Any, what: str) -> Any:
    """The value of a cuda-python call, or an exception naming the call and the error."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise LaunchError(f"{what}: {name}")
    return rest[0] if len(rest) == 1 else rest


def compile_source(source: str, defs: dict[str, int | float], arch: str) -> tuple[bytes, str]:
    """NVRTC: the CUBIN for ``arch`` (``sm_90``) and the log; :class:`CompileError` with the first error's line."""
    nv = _nvrtc()
    prog = _ok(nv.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []), "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17"]  # no fast math: the numerics that ship
    opts += [f"-D{k}={v!r}".encode() if isinstance(v, float) else f"-D{k}={v}".encode() for k, v in defs.items()]
    try:
        (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
        size = _ok(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = bytes(max(size, 2))  # a fresh buffer: NVRTC writes into it (b" " * 1 is CPython's shared b" ")
        nv.nvrtcGetProgramLog(prog, buf)
        log = buf.decode("utf-8", "replace").split("\x00", 1)[0].rstrip()
        if int(err) != 0:
            first = next((m for m in map(ERROR_RE.search, log.splitlines()) if m and m.group(2) == "error"), None)
            line = int(first.group(1)) if first else None
            msg = f"line {line}: {first.group(3)}" if first else (log.splitlines() or ["NVRTC failed"])[0]
            raise CompileError(msg, line, log)
        size = _ok(nv.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = bytes(max(size, 2))
        nv.nvrtcGetCUBIN(prog, cubin)
        return cubin, log
    finally:
        nv.nvrtcDestroyProgram(prog)


def _cubin_file(source: str, defs: dict[str, int | float], arch: str, folder: Path) -> Path:
    version = _ok(_nvrtc().nvrtcVersion(), "nvrtcVersion")
    key = hashlib.sha256(repr((source, sorted(defs.items()), arch, version)).encode()).hexdigest()[:24]
    return folder / f"{key}-{arch}.cubin"


def forget_cubin(source: str, defs: dict[str, int | float], arch: str, folder: Path | None) -> None:
    """Remove :func:`cubin_cached`'s file (one the driver would not load)."""
    if folder is not None:
        _cubin_file(source, defs, arch, folder).unlink(missing_ok=True)


def cubin_cached(source: str, defs: dict[str, int | float], arch: str, folder: Path | None) -> bytes:
    """:func:`compile_source`'s CUBIN, kept in ``folder`` under a hash of the source, the macros, the architecture
    and NVRTC's version (compiled once per machine: a cold process then loads it in a millisecond)."""
    if folder is None:
        return compile_source(source, defs, arch)[0]
    file = _cubin_file(source, defs, arch, folder)
    try:
        return file.read_bytes()
    except OSError:
        pass
    cubin = compile_source(source, defs, arch)[0]
    try:  # written beside, then renamed: a second process never reads half a file
        folder.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}")
        tmp.write_bytes(cubin)
        os.replace(tmp, file)
    except OSError:
        pass  # a read-only cache: compiled again next time
    return cubin


_CONTEXT: dict[int, tuple[Any, str]] = {}


def context(device: int = 0) -> tuple[Any, str]:
    """The device's primary context, made current; and its ``sm_XY`` architecture."""
    cu = _driver()
    if device not in _CONTEXT:
        _ok(cu.cuInit(0), "cuInit")
        dev = _ok(cu.cuDeviceGet(device), "cuDeviceGet")
        ctx = _ok(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        attr = cu.CUdevice_attribute
        major = _ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute")
        minor = _ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute")
        _CONTEXT[device] = (ctx, f"sm_{major}{minor}")
    _ok(cu.cuCtxSetCurrent(_CONTEXT[device][0]), "cuCtxSetCurrent")
    return _CONTEXT[device]


@dataclass
class Compiled:
    """A loaded kernel and its launch."""

    function: Any
    module: Any
    launch: Launch
    log: str = ""


def load(source: str, defs: dict[str, int | float]) -> Compiled:
    """Compile ``source`` for this device and load it."""
    cu = _driver()
    _, arch = context()
    spec = launch_spec(source, defs)
    cubin, log = compile_source(source, defs, arch)
    module = _ok(cu.cuModuleLoadData(cubin), "cuModuleLoadData")
    try:
        fn = _ok(cu.cuModuleGetFunction(module, spec.name.encode()), f"cuModuleGetFunction({spec.name})")
    except LaunchError:
        cu.cuModuleUnload(module)
        raise
    return Compiled(fn, module, spec, log)


def params(pointers: list[int]) -> tuple[Any, list[Any]]:
    """The kernel's parameter block for device pointers (inputs then outputs): the array of addresses and the
    cells it points at (keep both alive while launching)."""
    cells = [np.array([int(p)], dtype=np.uint64) for p in pointers]
    return np.array([c.ctypes.data for c in cells], dtype=np.uint64), cells


def launch(k: Compiled, pointers: list[int] | tuple[Any, list[Any]], stream: Any = 0) -> None:
    """One launch on ``stream`` with device pointers (inputs then outputs), or a block :func:`params` made."""
    cu = _driver()
    block = pointers if isinstance(pointers, tuple) else params(pointers)
    g, b = k.launch.grid, k.launch.block
    _ok(cu.cuLaunchKernel(k.function, *g, *b, k.launch.shared, stream, block[0].ctypes.data, 0), "cuLaunchKernel")


@dataclass
class Timed:
    """The kernel's outputs (on the host) and its time per launch in ms."""

    outputs: list[np.ndarray]
    times_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    """Launch + stream synchronise, timed on the host: comparable with a runtime timed the same way."""


def run(
    source: str,
    inputs: list[np.ndarray],
    outputs: list[tuple[tuple[int, ...], Any]],
    attributes: dict[str, Any] | None = None,
    iters: int = 50,
    warmup: int = 5,
    on_time: Callable[[int, float], None] | None = None,
) -> Timed:
    """:func:`launches` driven to its end, ``on_time(i, ms)`` after each timed launch."""
    gen = launches(source, inputs, outputs, attributes, iters, warmup)
    while True:
        try:
            i, ms = next(gen)
        except StopIteration as stop:
            return stop.value
        if on_time is not None:
            on_time(i, ms)


def launches(
    source: str,
    inputs: list[np.ndarray],
    outputs: list[tuple[tuple[int, ...], Any]],
    attributes: dict[str, Any] | None = None,
    iters: int = 50,
    warmup: int = 5,
) -> Generator[tuple[int, float], None, Timed]:
    """Compile, copy ``inputs`` to the device, launch ``warmup`` times, then ``iters`` times each timed by CUDA
    events, yielding (i, ms) after each (close the generator to stop early); returns the outputs of the last
    launch and the times."""
    cu = _driver()
    defs = macros(inputs, outputs, attributes)
    k = load(source, defs)
    bufs: list[Any] = []
    stream: Any = None
    start: Any = None
    end: Any = None
    try:
        for a in inputs:
            a = np.ascontiguousarray(a)
            d = _ok(cu.cuMemAlloc(max(a.nbytes, 1)), "cuMemAlloc")
            bufs.append(d)
            if a.nbytes:
                _ok(cu.cuMemcpyHtoD(d, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")
        host = [np.zeros(shape, dtype=np.dtype(dt)) for shape, dt in outputs]
        for h in host:
            bufs.append(_ok(cu.cuMemAlloc(max(h.nbytes, 1)), "cuMemAlloc"))
        ptrs = params([int(d) for d in bufs])  # built once: the events time the launch, not the packing
        stream = _ok(cu.cuStreamCreate(0), "cuStreamCreate")
        start = _ok(cu.cuEventCreate(0), "cuEventCreate")
        end = _ok(cu.cuEventCreate(0), "cuEventCreate")
        for _ in range(warmup):
            launch(k, ptrs, stream)
        _ok(cu.cuStreamSynchronize(stream), "the kernel (warm-up)")
        times = []
        for i in range(iters):
            _ok(cu.cuEventRecord(start, stream), "cuEventRecord")
            launch(k, ptrs, stream)
            _ok(cu.cuEventRecord(end, stream), "cuEventRecord")
            _ok(cu.cuEventSynchronize(end), "the kernel")
            ms = float(_ok(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
            times.append(ms)
            yield i, ms
        import time

        host_ms = []
        for _ in range(min(iters, 50)):
            t0 = time.perf_counter()
            launch(k, ptrs, stream)
            _ok(cu.cuStreamSynchronize(stream), "the kernel")
            host_ms.append(1e3 * (time.perf_counter() - t0))
        for h, d in zip(host, bufs[len(inputs) :], strict=True):
            if h.nbytes:
                _ok(cu.cuMemcpyDtoH(h.ctypes.data, d, h.nbytes), "cuMemcpyDtoH")
        return Timed(host, times, host_ms)
    finally:  # also when the generator is closed early (Cancel) or a launch fails
        for ev in (start, end):
            if ev is not None:
                cu.cuEventDestroy(ev)
        if stream is not None:
            cu.cuStreamDestroy(stream)
        for d in bufs:
            cu.cuMemFree(d)
        cu.cuModuleUnload(k.module)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype (float16/32/64), elementwise."""
    kinds = {2: np.int16, 4: np.int32, 8: np.int64}
    it = kinds[a.dtype.itemsize]
    bits = 8 * a.dtype.itemsize

    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.ascontiguousarray(x).view(it).astype(np.int64)
        return np.where(i < 0, -(i & ((1 << (bits - 1)) - 1)), i)

    return np.abs(ordered(a) - ordered(b))


def compare(out: np.ndarray, ref: np.ndarray, atol: float = 1e-5, rtol: float = 1e-4) -> dict[str, Any]:
    """Max abs error, max ULP (floats), the share of elements beyond ``atol + rtol*|ref|`` and the worst one."""
    if out.shape != ref.shape:
        return {"ok": False, "error": f"shape {list(out.shape)}, the reference has {list(ref.shape)}"}
    if out.size == 0:
        return {"ok": True, "max_abs_err": 0.0, "max_ulp": 0, "beyond": 0.0, "worst": None}
    o, r = out.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(o - r)
    both_nan = np.isnan(o) & np.isnan(r)
    diff = np.where(both_nan, 0.0, np.where(np.isnan(diff), np.inf, diff))
    worst = np.unravel_index(int(np.argmax(diff)), out.shape)
    beyond = float(np.mean(diff > atol + rtol * np.abs(np.nan_to_num(r))))
    if ref.dtype.kind == "f":  # ULPs where the reference is above atol: near zero a ULP is meaningless
        big = np.abs(np.nan_to_num(r)) > atol
        ulp = int(ulp_distance(out.astype(ref.dtype)[big], ref[big]).max()) if big.any() else 0
    else:
        ulp = int(diff.max())
    return {
        "ok": beyond == 0.0,
        "max_abs_err": float(diff.max()),
        "max_ulp": ulp,
        "beyond": beyond,
        "worst": {"index": [int(i) for i in worst], "got": float(o[worst]), "want": float(r[worst])},
        "atol": atol,
        "rtol": rtol,
    }
