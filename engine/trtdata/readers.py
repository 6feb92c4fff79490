"""Read trtexec's JSON files, recognising each from its content (never from a version string).

- layer info (``--exportLayerInfo``, the engine inspector): ``{"Layers": [...], "Bindings": [...]}`` up to
  TensorRT 10, ``{"Layers": [...], "I/O Tensors": [{Name, IOMode, ...}]}`` in 11, or a bare list of layers;
  layers are objects (detailed verbosity) or names only;
- profile (``--exportProfile``): ``[{"count": N}, {name, timeMs, averageMs, [medianMs,] percentage}, ...]``;
- times (``--exportTimes``): ``[{startEnqMs, ..., latencyMs}, ...]``.

Control characters inside strings (the ``\\x1E``/``\\x1F`` separators of ``Metadata``) are read as they are.
A file that cannot be read raises :class:`EngineDataError` with one line naming the file and the field.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.errors import SplitscopeError

PROFILE_SUFFIX = re.compile(r"^(.*) \[profile (\d+)\]$")
TIME_KEYS = ("latencyMs", "computeMs", "h2dMs", "d2hMs")


class EngineDataError(SplitscopeError):
    """A trtexec file that cannot be read."""


@dataclass(slots=True)
class TensorDesc:
    name: str
    dims: list[int]
    format: str
    location: str = ""


@dataclass(slots=True)
class Layer:
    """One engine layer."""

    name: str
    type: str = ""
    inputs: list[TensorDesc] = field(default_factory=list)
    outputs: list[TensorDesc] = field(default_factory=list)
    origin: str = ""
    tactic: str = ""
    metadata: str = ""
    profile: int = 0
    """Optimisation profile (the `` [profile k]`` suffix of multi-profile engines)."""
    base: str = ""
    """The name without that suffix."""
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LayerInfo:
    layout: str
    """``bindings`` (TensorRT 8.2-10), ``io_tensors`` (11) or ``none`` (a bare list, or no I/O field)."""
    layers: list[Layer]
    io: list[dict[str, Any]]
    detailed: bool
    path: str = ""


@dataclass(slots=True)
class ProfileRecord:
    name: str
    time_ms: float
    average_ms: float
    median_ms: float | None
    percentage: float
    profile: int = 0
    base: str = ""


@dataclass(slots=True)
class Profile:
    count: int
    records: list[ProfileRecord]
    path: str = ""


@dataclass(slots=True)
class Times:
    records: list[dict[str, float]]
    path: str = ""

    def summary(self) -> dict[str, dict[str, float]]:
        """Mean, p50, p99 and max of each timed phase (milliseconds)."""
        import numpy as np

        out = {}
        for k in TIME_KEYS:
            v = np.asarray([r[k] for r in self.records if isinstance(r.get(k), (int, float))], dtype=float)
            if len(v):
                p50, p99 = np.percentile(v, [50, 99])
                out[k] = {
                    "mean": round(float(v.mean()), 5),
                    "p50": round(float(p50), 5),
                    "p99": round(float(p99), 5),
                    "max": round(float(v.max()), 5),
                }
        return out


def _split_profile(name: str) -> tuple[str, int]:
    m = PROFILE_SUFFIX.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, 0)


def load_json(path: str | os.PathLike[str]) -> Any:
    """The file's JSON, with control characters allowed in strings; one-line errors."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise EngineDataError(f"{p.name}: no such file: check the path.") from None
    except IsADirectoryError:
        raise EngineDataError(f"{p.name} is a folder: pick the .json file trtexec wrote.") from None
    except OSError as e:
        raise EngineDataError(f"{p.name}: cannot read it ({e.strerror or e}).") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise EngineDataError(
            f"{p.name} is not UTF-8 text (byte {e.start}): is it the JSON file trtexec wrote, not the engine?"
        ) from None
    try:
        return json.loads(text, strict=False)  # strict=False: \x1e/\x1f separators inside strings
    except json.JSONDecodeError as e:
        raise EngineDataError(
            f"{p.name} is not valid JSON ({e.msg}; line {e.lineno}, column {e.colno}): "
            "the file is truncated or not a trtexec export."
        ) from None
    except RecursionError:
        raise EngineDataError(f"{p.name}: JSON nested too deeply to be a trtexec export.") from None


def kind_of(doc: Any) -> str:
    """``layers``, ``profile``, ``times`` or ``unknown``, from the content."""
    if isinstance(doc, dict):
        if isinstance(doc.get("Layers"), list):
            return "layers"
        for k in ("layers", "LayerInfo", "layerInfo"):
            if isinstance(doc.get(k), list):
                return "layers"
        return "unknown"
    if not isinstance(doc, list) or not doc:
        return "unknown" if not isinstance(doc, list) else "profile"
    first = doc[0]
    if isinstance(first, dict) and set(first) == {"count"}:
        return "profile"
    sample = [x for x in doc[:50] if isinstance(x, dict)]
    if sample and all("latencyMs" in x or "computeMs" in x for x in sample):
        return "times"
    if sample and all("name" in x and ("timeMs" in x or "averageMs" in x) for x in sample):
        return "profile"
    if all(isinstance(x, (str, dict)) for x in doc[:50]) and any(isinstance(x, str) or "Name" in x for x in doc[:50]):
        return "layers"
    return "unknown"


def _tensor(t: Any, where: str) -> TensorDesc:
    if isinstance(t, str):
        return TensorDesc(t, [], "")
    if not isinstance(t, dict):
        raise EngineDataError(f"{where}: a tensor is {type(t).__name__}, not an object")
    dims = t.get("Dimensions", [])
    fmt = t.get("Format/Datatype")
    if fmt is None:
        fmt = " ".join(str(t.get(k, "")) for k in ("Format", "Datatype") if t.get(k))
    return TensorDesc(
        str(t.get("Name", "")),
        [int(d) for d in dims if isinstance(d, (int, float))] if isinstance(dims, list) else [],
        str(fmt or ""),
        str(t.get("Location", "")),
    )


def parse_layers(doc: Any, path: str = "") -> LayerInfo:
    """Layer info from its JSON (see the module docstring for the layouts)."""
    name = Path(path).name if path else "layer info"
    io: list[dict[str, Any]] = []
    if isinstance(doc, dict):
        raw = next(
            (doc[k] for k in ("Layers", "layers", "LayerInfo", "layerInfo") if isinstance(doc.get(k), list)), None
        )
        if raw is None:
            raise EngineDataError(f"{name}: no 'Layers' list: is it a trtexec --exportLayerInfo file?")
        if isinstance(doc.get("I/O Tensors"), list):
            layout = "io_tensors"
            io = [t if isinstance(t, dict) else {"Name": str(t)} for t in doc["I/O Tensors"]]
        elif isinstance(doc.get("Bindings"), list):
            layout = "bindings"
            io = [{"Name": str(b)} for b in doc["Bindings"]]
        else:
            layout = "none"
    elif isinstance(doc, list):
        raw, layout = doc, "none"
    else:
        raise EngineDataError(f"{name}: a {type(doc).__name__} at the top, not layer info")
    layers = []
    detailed = bool(raw) and all(isinstance(x, dict) for x in raw)
    for k, x in enumerate(raw):
        where = f"{name}: Layers[{k}]"
        if isinstance(x, str):
            base, prof = _split_profile(x)
            layers.append(Layer(x, profile=prof, base=base))
            continue
        if not isinstance(x, dict):
            raise EngineDataError(f"{where} is {type(x).__name__}, not a layer object or name")
        if "Name" not in x:
            raise EngineDataError(f"{where} has no 'Name'")
        lname = str(x["Name"])
        base, prof = _split_profile(lname)
        ins, outs = x.get("Inputs", []), x.get("Outputs", [])
        layers.append(
            Layer(
                lname,
                str(x.get("LayerType", "")),
                [_tensor(t, f"{where}.Inputs") for t in (ins if isinstance(ins, list) else [])],
                [_tensor(t, f"{where}.Outputs") for t in (outs if isinstance(outs, list) else [])],
                str(x.get("Origin", "") or ""),
                str(x.get("TacticName", "") or ""),
                str(x.get("Metadata", "") or ""),
                prof,
                base,
                x,
            )
        )
    return LayerInfo(layout, layers, io, detailed, path)


def _num(x: dict[str, Any], key: str, where: str, required: bool = True) -> float | None:
    v = x.get(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise EngineDataError(f"{where}: '{key}' is {v!r}, not a number")
    return float(v)


def parse_profile(doc: Any, path: str = "") -> Profile:
    """A ``--exportProfile`` array (4- or 5-key records, with or without the ``{count}`` header)."""
    name = Path(path).name if path else "profile"
    if not isinstance(doc, list):
        raise EngineDataError(f"{name}: a {type(doc).__name__} at the top, not a profile array")
    count = 1
    recs = []
    for k, x in enumerate(doc):
        where = f"{name}: record {k}"
        if not isinstance(x, dict):
            raise EngineDataError(f"{where} is {type(x).__name__}, not an object")
        if "count" in x and "name" not in x:
            count = int(_num(x, "count", where) or 1)
            continue
        if "name" not in x:
            raise EngineDataError(f"{where} has no 'name'")
        t = _num(x, "timeMs", where, required="averageMs" not in x)
        avg = _num(x, "averageMs", where, required=t is None)
        lname = str(x["name"])
        base, prof = _split_profile(lname)
        recs.append(
            ProfileRecord(
                lname,
                t if t is not None else (avg or 0.0) * count,
                avg if avg is not None else (t or 0.0) / max(count, 1),
                _num(x, "medianMs", where, required=False),
                _num(x, "percentage", where, required=False) or 0.0,
                prof,
                base,
            )
        )
    return Profile(count, recs, path)


def parse_times(doc: Any, path: str = "") -> Times:
    name = Path(path).name if path else "times"
    if not isinstance(doc, list):
        raise EngineDataError(f"{name}: a {type(doc).__name__} at the top, not a times array")
    recs = []
    for k, x in enumerate(doc):
        if not isinstance(x, dict):
            raise EngineDataError(f"{name}: record {k} is {type(x).__name__}, not an object")
        recs.append({kk: float(v) for kk, v in x.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return Times(recs, path)


def read_file(path: str | os.PathLike[str]) -> LayerInfo | Profile | Times:
    """Read any of the three files, recognised from its content."""
    doc = load_json(path)
    kind = kind_of(doc)
    p = str(path)
    if kind == "layers":
        return parse_layers(doc, p)
    if kind == "profile":
        return parse_profile(doc, p)
    if kind == "times":
        return parse_times(doc, p)
    keys = " with keys " + ", ".join(list(doc)[:4]) if isinstance(doc, dict) else ""
    raise EngineDataError(
        f"{Path(p).name}: not a trtexec layer-info, profile or times file (its top level is "
        f"{type(doc).__name__}{keys})."
    )
