"""A set of trtexec files of one engine, read together: layers joined with their profile times by name, and
mapped onto an ONNX model when one is given."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.codec import stamp
from splitscope.engine.model import GraphModel
from splitscope.engine.trtdata.doc import EngineDoc
from splitscope.engine.trtdata.mapping import FOREIGN, Mapping, is_reformat, map_layers, metadata_nodes
from splitscope.engine.trtdata.precision import layer_precision
from splitscope.engine.trtdata.readers import EngineDataError, Layer, LayerInfo, Profile, Times, read_file


@dataclass(slots=True)
class EngineData:
    """What was imported for one engine."""

    layers: LayerInfo | None = None
    profile: Profile | None = None
    times: Times | None = None
    mapping: Mapping | None = None
    gm: GraphModel | None = None
    notes: list[str] = field(default_factory=list)
    _node_prec: dict[int, str] | None = None
    _doc: dict[str, Any] | None = None
    typed_doc: EngineDoc | None = None  # made by :func:`.lint.engine_doc`

    @property
    def rows(self) -> list[Layer]:
        """Layers of the first optimisation profile: from the layer info, else made from the profile's names."""
        if self.layers is not None:
            return [x for x in self.layers.layers if x.profile == 0]
        if self.profile is not None:
            return [Layer(r.name, base=r.base, profile=r.profile) for r in self.profile.records if r.profile == 0]
        return []

    def layer_ms(self) -> dict[str, float]:
        """Average milliseconds per layer name (first profile), from the profile."""
        if self.profile is None:
            return {}
        return {r.name: r.average_ms for r in self.profile.records if r.profile == 0}

    def node_ms(self) -> dict[int, float]:
        """Each mapped ONNX node's share of its layers' time (a layer's time split evenly among its nodes)."""
        if self.mapping is None:
            return {}
        ms = self.layer_ms()
        out: dict[int, float] = {}
        for k, layer in enumerate(self.rows):
            nodes = self.mapping.layer_nodes[k] if k < len(self.mapping.layer_nodes) else []
            t = ms.get(layer.name)
            if t is None or not nodes:
                continue
            for i in nodes:
                out[i] = out.get(i, 0.0) + t / len(nodes)
        return out

    def node_precision(self) -> dict[int, str]:
        """Each mapped ONNX node's precision (its layers'; ``mixed`` when they differ). Computed once."""
        if self.mapping is None:
            return {}
        if self._node_prec is not None:
            return self._node_prec
        out: dict[int, str] = {}
        for k, layer in enumerate(self.rows):
            p = layer_precision(layer)
            if not p:
                continue
            for i in self.mapping.layer_nodes[k]:
                prev = out.get(i)
                out[i] = p if prev in (None, p) else "mixed"
        self._node_prec = out
        return out

    def doc(self) -> dict[str, Any]:
        """:meth:`to_json`, made once (the window reads it at each node selected); for data no longer changed."""
        if self._doc is None:
            self._doc = self.to_json()
        return self._doc

    def to_json(self) -> dict[str, Any]:
        """The document of ``splitscope engine --json`` (lint and comparison are added by the caller)."""
        rows = self.rows
        ms = self.layer_ms()
        total = sum(ms.values()) or 0.0
        m = self.mapping
        layers = []
        for k, layer in enumerate(rows):
            t = ms.get(layer.name)
            if m is not None and self.gm:
                nodes, how = [self.gm.nodes[i].name or f"#{i}" for i in m.layer_nodes[k]], m.how[k]
            else:  # no model: the ONNX node names the layer's Metadata gives, confirmed once a model is opened
                nodes = metadata_nodes(layer.metadata) if layer.metadata else []
                how = "metadata" if nodes else ""
            layers.append(
                {
                    "name": layer.name,
                    "type": layer.type,
                    "precision": layer_precision(layer),
                    "ms": round(t, 6) if t is not None else None,
                    "share": round(t / total, 5) if t is not None and total else None,
                    "onnx_nodes": nodes,
                    "mapped_by": how,
                    "tactic": layer.tactic,
                    "origin": layer.origin,
                    "foreign": bool(FOREIGN.search(layer.base)),
                    "reformat": is_reformat(layer),
                }
            )
        doc: dict[str, Any] = {
            "layout": self.layers.layout if self.layers else "none",
            "detailed": self.layers.detailed if self.layers else False,
            "files": [str(x.path) for x in (self.layers, self.profile, self.times) if x is not None],
            "layers": layers,
            "total_layer_ms": round(total, 6),
            "profile_count": self.profile.count if self.profile else None,
            "other_profiles": sorted({x.profile for x in (self.layers.layers if self.layers else []) if x.profile}),
            "io_tensors": self.layers.io if self.layers else [],
            "times": self.times.summary() if self.times else None,
            "notes": self.notes,
        }
        if m is not None and self.gm is not None:
            doc["unmapped_layers"] = [{"name": rows[k].name, "unknown": m.unknown_names.get(k, [])} for k in m.unmapped]
            doc["mapped_node_share"] = m.mapped_node_share(len(self.gm.nodes))
            doc["mapped_data_node_share"] = m.mapped_data_share(self.gm)
            doc["mapped_layer_share"] = m.mapped_layer_share()
        else:  # no model to map onto: the same keys, none of them a figure
            doc["unmapped_layers"] = []
            doc["mapped_node_share"] = doc["mapped_data_node_share"] = doc["mapped_layer_share"] = None
        return stamp("engine", doc)


def import_files(paths: Sequence[str | os.PathLike[str]], gm: GraphModel | None = None) -> EngineData:
    """Read the files (each recognised from its content) as one engine, and map it onto ``gm``."""
    data = EngineData(gm=gm)
    for p in paths:
        got = read_file(p)
        slot = "layers" if isinstance(got, LayerInfo) else "profile" if isinstance(got, Profile) else "times"
        if getattr(data, slot) is not None:
            raise EngineDataError(
                f"{Path(p).name} and {Path(str(getattr(data, slot).path)).name} are both {slot} "
                "files: import the files of one engine at a time (use Compare for two)."
            )
        setattr(data, slot, got)
    if data.layers is not None and not data.layers.detailed:
        data.notes.append(
            "the layer info has names only (built with --profilingVerbosity=layer_names_only): "
            "rebuild with --profilingVerbosity=detailed for formats, precision and tactics"
        )
    if data.layers is not None and data.profile is not None:
        names = {x.name for x in data.layers.layers}
        missing = [r.name for r in data.profile.records if r.name not in names]
        if missing:
            data.notes.append(
                f"{len(missing)} profile records name no layer of the layer info (first: "
                f"{missing[0][:80]}): are they of the same engine?"
            )
    if gm is not None:
        data.mapping = map_layers(data.rows, gm)
        work = sum(1 for h in data.mapping.how if h not in ("reformat", "sync"))
        if work >= 2 and data.mapping.mapped_layer_share() == 0:
            name = gm.path.name if gm.path is not None else "the open model"
            raise EngineDataError(
                f"None of the engine's {work} layers maps to a node of {name}: these files are of another model. "
                "Open the model the engine was built from, or read the files with no model open."
            )
    return data
