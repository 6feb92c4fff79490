"""Finding nodes by name or op type through one lowered string: the same nodes a test of every node's label and op
finds, on real exports of several kinds, whatever the case or the characters typed."""

from __future__ import annotations

from pathlib import Path

import pytest
from splitscope.engine.api import analyze
from splitscope.engine.view.find import LabelIndex

DATA = Path(__file__).resolve().parents[1] / "data"
QUERIES = ["conv", "CONV", "/", "relu", "mat", "#1", "layers.0/", "no-such-node", "a", "İ", "_output", "If", "\n", ""]


@pytest.mark.parametrize("name", ["torch_detector_if.onnx", "torch_transformer_dynamo.onnx", "decoder_kv_tiny.onnx"])
def test_the_index_finds_what_a_scan_of_every_node_finds(name):
    gm = analyze(DATA / name, parser="table", require_dims=False).model
    index = LabelIndex(gm.nodes)
    for q in QUERIES:
        low = q.lower()
        want = [
            n.index
            for n in gm.nodes
            if low and "\n" not in low and (low in n.label.lower() or low in n.op_type.lower())
        ]
        assert index.find(q) == want, q
