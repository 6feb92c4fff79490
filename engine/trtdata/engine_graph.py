"""An engine drawn without its ONNX model: layers as nodes, tensors as edges, from the layer info.

Users often have only trtexec's files. The engine's own graph is written as an ONNX model (one node per
layer, named as the layer, its op the layer type in the ``trt.engine`` domain, marked by the metadata key
:data:`MARK`) so the same canvas, panels, lint and profile views show it; the analysis sees the mark and
treats every layer as what it is, already inside TensorRT (a plugin layer as a plugin).
"""

from __future__ import annotations

import re
from pathlib import Path

import onnx
from onnx import helper
from splitscope.engine.trtdata.mapping import metadata_nodes
from splitscope.engine.trtdata.readers import LayerInfo

MARK = "splitscope.engine_graph"
DOMAIN = "trt.engine"


def _op(layer_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", layer_type) or "Layer"


def to_onnx(info: LayerInfo, title: str = "engine") -> onnx.ModelProto:
    """The engine's graph as an ONNX model (no weights; shapes from the layers' tensors)."""
    produced: dict[str, int] = {}
    consumed: set[str] = set()
    layers = [x for x in info.layers if x.profile == 0]
    # A names-only file (--profilingVerbosity=layer_names_only) lists no tensors: its layers are chained in the
    # engine's own order, an ordered list to read with its times, not boxes without a single edge.
    names_only = not any(t.name for x in layers for t in (*x.inputs, *x.outputs))
    nodes = []
    for k, x in enumerate(layers):
        outs = [t.name for t in x.outputs if t.name] or [f"{x.name}:out"]
        for o in outs:
            produced.setdefault(o, k)
        ins = [t.name for t in x.inputs if t.name]
        if names_only and k > 0:
            ins = [nodes[-1].output[0]]
        consumed.update(ins)
        node = helper.make_node(_op(x.type), ins, outs, name=x.name, domain=DOMAIN)
        onnx_names = metadata_nodes(x.metadata) if x.metadata else []
        if onnx_names:  # the ONNX nodes the layer was built from, by its Metadata: shown in the inspector
            node.metadata_props.add(key="onnx_nodes", value=", ".join(onnx_names)[:4000])
        nodes.append(node)
    dims: dict[str, list[int]] = {}
    for x in layers:
        for t in (*x.inputs, *x.outputs):
            if t.dims:
                dims.setdefault(t.name, t.dims)
    graph_in = sorted({t for t in consumed if t not in produced})
    graph_out = [o for o in produced if o not in consumed] or list(produced)[-1:]

    def vi(name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(
            name, onnx.TensorProto.FLOAT, [max(d, 1) for d in dims.get(name, [])] or None
        )

    g = helper.make_graph(nodes, title, [vi(n) for n in graph_in], [vi(n) for n in graph_out])
    m = helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
        producer_name="splitscope (engine layers)",
    )
    m.metadata_props.add(key=MARK, value="names-only" if names_only else "1")
    return m


def write_engine_graph(paths: list[str], folder: Path) -> Path:
    """Read the layer info among ``paths`` and write the engine's own graph to ``folder`` (atomically, named by
    the file's content); its path. A profile alone is an :class:`EngineDataError`."""
    import hashlib
    import os
    import tempfile

    from splitscope.engine.trtdata.readers import EngineDataError, read_file

    infos = [x for x in (read_file(p) for p in paths) if isinstance(x, LayerInfo)]
    if not infos:
        raise EngineDataError(
            "A profile alone has no graph to draw: open the ONNX model first, or add the "
            "engine's --exportLayerInfo file."
        )
    folder.mkdir(parents=True, exist_ok=True)
    src = Path(str(infos[0].path))
    out = folder / f"{src.stem}-{hashlib.blake2b(src.read_bytes(), digest_size=4).hexdigest()}.onnx"
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        onnx.save(to_onnx(infos[0], src.stem), tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out
