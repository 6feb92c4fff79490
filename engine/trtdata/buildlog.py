"""The layers of an engine as the builder's verbose log lists them, for builds that cannot be inspected.

Where no engine can be deserialized (TensorRT-RTX on a machine without a GPU it supports), the builder still
logs, at the end of a build with detailed profiling verbosity, a ``Layers:`` message with one line per
engine layer in a text form of the inspector's JSON::

    Name: n0_myl0_1, LayerType: correlation, Inputs: [ { Name: r1, Dimensions: [1,3,224,224], Strides: [...],
    StrideOrder: [...], Datatype: Float, Format: (NHWC) Channel major format }], Constants: [...],
    Outputs: [...], TacticName: __myelin_CASK_STUB, StreamId: 0, Metadata: [ONNX Layer: n0]\\x1f[ONNX Layer: n1]

(found here with TensorRT-RTX 1.7 on a CPU-only machine). This module reads that text into the same
:class:`LayerInfo` the JSON importer makes, so every view of an imported engine works on our own builds.
"""

from __future__ import annotations

import re
from typing import Any

from splitscope.engine.trtdata.readers import EngineDataError, LayerInfo, parse_layers

_OPEN = {"[": "]", "{": "}"}


def _split_top(text: str) -> list[str]:
    """Split at ``, `` outside brackets and braces."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(depth - 1, 0)
        if depth == 0 and text.startswith(", ", i):
            out.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    if cur:
        out.append("".join(cur))
    return out


def _value(v: str) -> Any:
    v = v.strip()
    if v.startswith("[") and v.endswith("]") and ("{" in v or re.fullmatch(r"\[[-\d,\s]*\]", v)):
        inner = v[1:-1].strip()
        if not inner:
            return []
        if inner.startswith("{"):
            return [_object(p.strip()[1:-1]) for p in _split_top(inner) if p.strip().startswith("{")]
        return [int(x) for x in inner.split(",") if x.strip().lstrip("-").isdigit()]
    return v


def _object(text: str) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for part in _split_top(text.strip()):
        key, sep, val = part.partition(": ")
        if sep:
            obj[key.strip()] = _value(val)
    if "Datatype" in obj or "Format" in obj:  # the JSON's combined field, as the readers expect
        obj["Format/Datatype"] = f"{obj.get('Format', '')} {obj.get('Datatype', '')}".strip()
    return obj


def layers_from_log(lines: list[str] | str) -> LayerInfo:
    """The last ``Layers:`` listing in a build log (a list of messages, or the log's text)."""
    text = lines if isinstance(lines, str) else "\n".join(lines)
    at = text.rfind("Layers:\n")
    if at < 0:
        raise EngineDataError(
            "the build log lists no layers: build with profiling verbosity DETAILED and a logger at VERBOSE"
        )
    layers = []
    for line in text[at + len("Layers:\n") :].split("\n"):
        if not line.startswith("Name: "):
            if layers:
                break
            continue
        layers.append(_object(line))
    return parse_layers({"Layers": layers}, "build log")
