"""The plugins TensorRT ships (its open-source plugin folder, ``resources/trt_plugins.json``), and which of
them serves a node that needs custom work.

A match is one of three kinds, strongest first:

- ``exact``: the node is a custom op carrying a shipped plugin's creator name (``EfficientNMS_TRT``); the
  parser loads the plugin once its library is registered (``initLibNvInferPlugins``);
- ``op``: the node is a standard ONNX op the plugin implements (``RoiAlign`` → ``ROIAlign_TRT``); the note
  says where the layouts differ;
- ``related``: the custom op's name looks like the plugin's family (``DCNv4`` → ``ModulatedDeformConv2d``);
  a lead to check, not a drop-in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

KINDS = ("exact", "op", "related")


@dataclass(frozen=True, slots=True)
class ShippedPlugin:
    name: str
    versions: tuple[int, ...]
    folder: str
    deprecated: bool
    onnx_ops: tuple[str, ...]
    patterns: tuple[str, ...]
    note: str


@dataclass(frozen=True, slots=True)
class PluginMatch:
    plugin: ShippedPlugin
    kind: str
    """``exact``, ``op`` or ``related`` (see the module docstring)."""

    def describe(self) -> str:
        what = {
            "exact": "the same op: register TensorRT's plugin library and the parser loads it",
            "op": "implements this ONNX op",
            "related": "a related plugin to adapt or check",
        }[self.kind]
        dep = " (deprecated)" if self.plugin.deprecated else ""
        return f"{self.plugin.name}{dep}, {self.plugin.folder}: {what}" + (
            f"; {self.plugin.note}" if self.plugin.note else ""
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin.name,
            "kind": self.kind,
            "folder": self.plugin.folder,
            "versions": list(self.plugin.versions),
            "deprecated": self.plugin.deprecated,
            "note": self.plugin.note,
        }


@cache
def catalog() -> tuple[ShippedPlugin, ...]:
    """Every plugin in the bundled table."""
    doc = json.loads(resources.files("splitscope.resources").joinpath("trt_plugins.json").read_text("utf-8"))
    return tuple(
        ShippedPlugin(
            p["name"],
            tuple(p["versions"]),
            p["folder"],
            p["deprecated"],
            tuple(p["onnx_ops"]),
            tuple(p["patterns"]),
            p["note"],
        )
        for p in doc["plugins"]
    )


@cache
def source() -> str:
    """Where the table comes from (its ``source`` record)."""
    doc = json.loads(resources.files("splitscope.resources").joinpath("trt_plugins.json").read_text("utf-8"))
    return str(doc["source"])


def _norm(op: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()


def match(op_type: str, domain: str = "") -> list[PluginMatch]:
    """The shipped plugins that serve a node of ``op_type`` in ``domain``, strongest match first (within one
    kind, the plugins that are not deprecated first)."""
    out: list[PluginMatch] = []
    seen: set[str] = set()
    std = domain in ("", "ai.onnx")
    low = _norm(op_type)
    flat = op_type.lower()
    for p in catalog():
        if p.name == op_type and not std:
            out.append(PluginMatch(p, "exact"))
        elif std and op_type in p.onnx_ops:
            out.append(PluginMatch(p, "op"))
        elif not std and any(re.search(pat, low) or re.search(pat, flat) for pat in p.patterns):
            out.append(PluginMatch(p, "related"))
        else:
            continue
        seen.add(p.name)
    out.sort(key=lambda m: (KINDS.index(m.kind), m.plugin.deprecated))
    return out
