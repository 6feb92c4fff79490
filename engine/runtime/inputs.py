"""The feeds of a profiling run: shapes for symbolic dims, seeded random data per dtype, or the user's file.

Every mismatch (a missing input, a wrong shape or dtype, an unknown file) is a :class:`ProfileInputError`
with one line that says what to do, raised before anything runs.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.onnxio.concrete import input_dim_name
from splitscope.engine.runtime.feeds import InputRule, draw

_NP: dict[int, Any] = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.UINT16: np.uint16,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.UINT32: np.uint32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.UINT64: np.uint64,
    onnx.TensorProto.BOOL: np.bool_,
}


class ProfileInputError(SplitscopeError):
    """The feeds do not fit the model."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One graph input: name, numpy dtype, and dims (ints, or names of symbolic dims)."""

    name: str
    dtype: np.dtype
    dims: tuple[int | str, ...]

    def shape(self, dims: dict[str, int], fill: int | None = None) -> tuple[int, ...]:
        """The concrete shape with ``dims`` for the symbolic dims. A dim without a value is refused, naming it
        (never run at a guessed 1), unless ``fill`` is given (a check that only needs the model to run)."""
        out = []
        for d in self.dims:
            if isinstance(d, int):
                out.append(d)
            elif d in dims:
                out.append(int(dims[d]))
            elif fill is not None:
                out.append(fill)
            else:
                raise ProfileInputError(f"Input '{self.name}' has no value for {d}: give --dim {d}=VALUE.")
        return tuple(out)


def input_specs(model: onnx.ModelProto) -> list[InputSpec]:
    """The model's real inputs (not initializers), in order."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise ProfileInputError(
                f"Input '{vi.name}' is not a tensor (a sequence or map): profiling supports tensor inputs only."
            )
        np_type = _NP.get(tt.elem_type)
        if np_type is None:
            raise ProfileInputError(
                f"Input '{vi.name}' has element type "
                f"{onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type in onnx.TensorProto.DataType.values() else tt.elem_type}"  # noqa: E501
                ", which this profiler cannot feed; give the model a float or integer input."
            )
        dims: list[int | str] = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                dims.append(input_dim_name(vi.name, k, d.dim_param))
        out.append(InputSpec(vi.name, np.dtype(np_type), tuple(dims)))
    return out


def symbolic_dims(specs: list[InputSpec]) -> list[str]:
    """Names of the symbolic dims the inputs use, in first-use order."""
    seen: dict[str, None] = {}
    for s in specs:
        for d in s.dims:
            if isinstance(d, str):
                seen.setdefault(d)
    return list(seen)


def random_feeds(
    specs: list[InputSpec],
    dims: dict[str, int],
    seed: int = 0,
    rules: dict[str, InputRule] | None = None,
    fill: int | None = None,
) -> dict[str, np.ndarray]:
    """Seeded random data for each input by its rule (:mod:`splitscope.engine.runtime.feeds`: indices within the
    table they index, masks, positions); without rules floats from a standard normal, integers in [0, 8),
    booleans at random."""
    rng = np.random.default_rng(seed)
    rules = rules or {}
    shapes = {s.name: s.shape(dims, fill) for s in specs}
    check_memory(specs, shapes, dims)
    return {s.name: draw(rules.get(s.name), shapes[s.name], s.dtype, rng) for s in specs}


def physical_memory() -> int | None:
    """This machine's memory in bytes (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(specs: list[InputSpec], shapes: Mapping[str, Sequence[int]], dims: dict[str, int]) -> None:
    """Refuse inputs that alone would need more memory than the machine has, before anything is allocated: the
    bytes they would need, and the dims that make them so."""
    total = sum(int(np.prod(shapes[s.name], dtype=np.float64)) * np.dtype(s.dtype).itemsize for s in specs)
    have = physical_memory()
    if have is not None and total > have:
        from splitscope.engine.text import format_bytes

        given = ", ".join(f"{k}={v}" for k, v in dims.items()) or "the model's own"
        raise ProfileInputError(
            f"The inputs at these dims ({given}) need {format_bytes(total)}, more than this machine's "
            f"{format_bytes(have)}: give smaller --dim values."
        )


def file_feeds(path: Path, specs: list[InputSpec]) -> dict[str, np.ndarray]:
    """Feeds from a ``.npz`` (one array per input name) or a ``.npy`` (a model with one input), checked
    against the model's dtypes and fixed dims."""
    try:
        if path.suffix.lower() == ".npy":
            if len(specs) != 1:
                raise ProfileInputError(
                    f"{path.name} holds one array but the model has {len(specs)} inputs "
                    f"({', '.join(s.name for s in specs)}): save them together in a .npz."
                )
            arrays = {specs[0].name: np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
    except ProfileInputError:
        raise
    except FileNotFoundError:
        raise ProfileInputError(f"Input file {path} does not exist: pick a .npz or .npy file.") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ProfileInputError(
            f"Could not read {path.name} as .npz/.npy ({str(e).splitlines()[0][:120]}): save it with numpy.savez."
        ) from None
    missing = [s.name for s in specs if s.name not in arrays]
    if missing:
        raise ProfileInputError(
            f"{path.name} has no array for input {', '.join(repr(m) for m in missing)} "
            f"(it has {', '.join(repr(k) for k in arrays) or 'none'}): name the arrays after "
            "the model's inputs."
        )
    feeds = {}
    for s in specs:
        a = arrays[s.name]
        if a.dtype != s.dtype:
            raise ProfileInputError(
                f"Input '{s.name}' in {path.name} is {a.dtype}, the model wants {s.dtype}: save it as {s.dtype}."
            )
        if a.ndim != len(s.dims) or any(isinstance(d, int) and d != n for d, n in zip(s.dims, a.shape, strict=True)):
            want = "[" + ", ".join(str(d) for d in s.dims) + "]"
            raise ProfileInputError(
                f"Input '{s.name}' in {path.name} has shape {list(a.shape)}, the model wants {want}: reshape it."
            )
        feeds[s.name] = a
    return feeds


def dims_from_feeds(specs: list[InputSpec], feeds: dict[str, np.ndarray]) -> dict[str, int]:
    """The symbolic dims' values that the feeds imply (inconsistent ones are a ProfileInputError)."""
    out: dict[str, int] = {}
    for s in specs:
        for d, n in zip(s.dims, feeds[s.name].shape, strict=True):
            if isinstance(d, str) and out.setdefault(d, int(n)) != n:
                raise ProfileInputError(
                    f"Dim '{d}' is {out[d]} in one input and {n} in '{s.name}': make the arrays agree."
                )
    return out
