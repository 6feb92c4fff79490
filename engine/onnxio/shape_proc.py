"""Child process for ONNX shape inference: ``python -m splitscope.engine.onnxio.shape_proc MODEL [DIMS_JSON]``
(with dims: inference with the inputs' symbolic dims fixed at those values).

Shape inference is one long C++ call that holds Python's GIL (0.7 s on a
50k-node model): run in a thread of the GUI process it would freeze the window.
Here it runs in its own process and writes one JSON header line, then the
inferred graph's value infos (and the nodes that own bodies) as a serialized
GraphProto.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnx


def main(argv: list[str]) -> int:
    """Infer shapes of ``argv[0]`` (at the dims of the JSON object ``argv[1]``, when given) and write the
    result to stdout."""
    from splitscope.engine.entry import lower_priority
    from splitscope.engine.errors import SplitscopeError

    lower_priority()
    from splitscope.engine.onnxio.loader import load_model
    from splitscope.engine.onnxio.shapes import infer_shapes

    try:
        loaded = load_model(Path(argv[0]))
    except SplitscopeError as e:
        sys.stdout.write(json.dumps({"error": e.message}) + "\n")
        return 2
    warnings: list[str] = []
    if len(argv) > 1:
        from splitscope.engine.onnxio.shapes import infer_concrete

        dims = {str(k): int(v) for k, v in json.loads(argv[1]).items()}
        m, assumed = infer_concrete(loaded.proto, dims, warnings)
    else:
        m, assumed = infer_shapes(loaded.proto, warnings)
    out = onnx.GraphProto()
    out.input.extend(m.graph.input)
    out.value_info.extend(m.graph.value_info)
    out.output.extend(m.graph.output)
    bodies = [
        i
        for i, n in enumerate(m.graph.node)
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute)
    ]
    out.node.extend(m.graph.node[i] for i in bodies)
    data = out.SerializeToString()
    header = {"assumed": sorted(assumed), "warnings": warnings, "bodies": bodies, "bytes": len(data)}
    sys.stdout.write(json.dumps(header) + "\n")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
