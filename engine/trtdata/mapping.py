"""Which ONNX nodes went into each engine layer, and which layer(s) each ONNX node ended in.

In order of trust: the layer's ``Metadata`` (``[ONNX Layer: NAME]`` entries, TensorRT 8.6+); else its fused
name: ``a + b`` (vertical fusion), ``a || b`` (horizontal), ``PWN(a, b)`` (pointwise), and
``{ForeignNode[a...b]}`` (a Myelin region: the ONNX nodes from ``a`` to ``b`` in graph order); else the names
of its output tensors (the ONNX nodes that produce them). Reformat layers (``Reformatting CopyNode for ...``)
are TensorRT's own and map to no node. Tokens that name weights (``conv1.weight``) are skipped; anything
else that matches nothing leaves the layer *unmapped*, listed, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from splitscope.engine.model import GraphModel
from splitscope.engine.trtdata.readers import Layer

FOREIGN = re.compile(r"\{ForeignNode\[(.+?)\.\.\.(.+?)\]\}")


def metadata_nodes(meta: str) -> list[str]:
    """ONNX node names in a layer's ``Metadata`` (entries split by ``\\x1E`` or ``\\x1F``)."""
    out = []
    for part in re.split(r"[\x1e\x1f]", meta):
        part = part.strip()
        while part.startswith("[ONNX Layer:"):
            end = part.find("]")
            if end < 0:
                break
            out.append(part[len("[ONNX Layer:") : end].strip())
            part = part[end + 1 :].strip()
    return out


def name_tokens(name: str) -> list[str]:
    """The parts of a fused layer name: ``a + PWN(b, c) || d`` gives ``a, b, c, d``."""
    flat = re.sub(r"PWN\(", "", name).replace(")", "")
    return [t.strip() for t in re.split(r"\s\+\s|\s\|\|\s|,\s", flat) if t.strip()]


def is_reformat(layer: Layer) -> bool:
    """A layer TensorRT made to move data between layouts or types: a reformat, or a Myelin move/copy
    (``__myl_Move...``) that no ONNX node asked for."""
    return (
        layer.base.startswith("Reformatting CopyNode")
        or (layer.type == "Reformat" and layer.origin == "REFORMAT")
        or (layer.base.startswith("__myl_") and not metadata_nodes(layer.metadata))
    )


SYNC_TYPES = frozenset({"signal", "wait"})
"""Layers that only order streams (TREx drops them): TensorRT's own, with no ONNX node and no work."""


@dataclass(slots=True)
class Mapping:
    layer_nodes: list[list[int]]
    """ONNX node indices of each layer."""
    how: list[str]
    """How each layer was mapped: ``metadata``, ``name``, ``foreign``, ``tensor``, ``reformat``, ``sync`` (both
    TensorRT's own) or ``""`` (unmapped)."""
    node_layers: dict[int, list[int]] = field(default_factory=dict)
    unmapped: list[int] = field(default_factory=list)
    """Layers that name something and match no ONNX node."""
    unknown_names: dict[int, list[str]] = field(default_factory=dict)

    def mapped_node_share(self, total: int) -> float:
        """Share of all the model's nodes that ended in some layer."""
        return round(len(self.node_layers) / total, 4) if total else 0.0

    def mapped_data_share(self, gm: GraphModel) -> float:
        """Share of the nodes on the data path (not constants or shape arithmetic, which TensorRT folds at build
        time) that ended in some layer."""
        data = [i for i in range(len(gm.nodes)) if i not in foldable(gm)]
        return round(sum(1 for i in data if i in self.node_layers) / len(data), 4) if data else 0.0

    def mapped_layer_share(self) -> float:
        """Share of the layers that come from ONNX nodes (not reformats or stream syncs) that were mapped."""
        n = sum(1 for h in self.how if h not in ("reformat", "sync"))
        return round(sum(1 for h in self.how if h not in ("", "reformat", "sync")) / n, 4) if n else 0.0


def foldable(gm: GraphModel) -> set[int]:
    """Nodes no input data reaches: fed only by initializers, ``Shape``/``Size`` and other such nodes."""
    tensors = gm.graph.tensors
    out: set[int] = set()
    for i in gm.graph.adj.order:
        n = gm.nodes[i]
        if n.subgraphs:
            continue
        if n.op_type in ("Shape", "Size") or all(
            not name
            or (
                (t := tensors.get(name)) is not None
                and (t.is_initializer or (t.producer is not None and t.producer in out))
            )
            for name in n.inputs
        ):
            out.add(i)
    return out


def _by_foreign(layer: Layer, by_name: dict[str, int]) -> list[int]:
    """A Myelin region named by its first and last node (``{ForeignNode[A...B]}``): the nodes from A to B."""
    fm = FOREIGN.search(layer.base)
    if fm and fm.group(1) in by_name and fm.group(2) in by_name:
        a, b = sorted((by_name[fm.group(1)], by_name[fm.group(2)]))
        return list(range(a, b + 1))
    return []


def _by_names(layer: Layer, by_name: dict[str, int], weights: set[str]) -> tuple[list[int], list[str]]:
    """The nodes the layer's name names, and the names in it that are neither a node nor a weight."""
    found, missing = [], []
    for tok in name_tokens(FOREIGN.sub("", layer.base)):
        if tok in by_name:
            found.append(by_name[tok])
        elif tok not in weights and not tok.endswith((".weight", ".bias")):
            missing.append(tok)
    return found, missing


def _by_outputs(layer: Layer, tensors: Any) -> list[int]:
    """The nodes that produce the layer's output tensors (names the engine kept)."""
    found = []
    for t in layer.outputs:
        tt = tensors.get(t.name)
        if tt is not None and tt.producer is not None:
            found.append(tt.producer)
    return found


def map_layers(layers: list[Layer], gm: GraphModel) -> Mapping:
    """Map ``layers`` onto ``gm``'s main graph (see the module docstring)."""
    nodes = gm.nodes
    by_name = {n.name: n.index for n in nodes if n.name}
    tensors = gm.graph.tensors
    weights = {name for name, t in tensors.items() if t.is_initializer}
    m = Mapping([[] for _ in layers], ["" for _ in layers])
    for k, layer in enumerate(layers):
        found: list[int] = []
        if layer.metadata:
            found = [by_name[n] for n in metadata_nodes(layer.metadata) if n in by_name]
            if found:
                m.how[k] = "metadata"
        if not found and is_reformat(layer):
            m.how[k] = "reformat"
            continue
        if not found and layer.type in SYNC_TYPES:
            m.how[k] = "sync"
            continue
        if not found:
            found = _by_foreign(layer, by_name)
            if found:
                m.how[k] = "foreign"
        if not found:
            found, missing = _by_names(layer, by_name, weights)
            if found:
                m.how[k] = "name"
            if missing:
                m.unknown_names[k] = missing
        if not found:
            found = _by_outputs(layer, tensors)
            if found:
                m.how[k] = "tensor"
        if not found:
            m.unmapped.append(k)
            continue
        for i in dict.fromkeys(found):  # each node once, in the order found
            m.layer_nodes[k].append(i)
            m.node_layers.setdefault(i, []).append(k)
    return m
