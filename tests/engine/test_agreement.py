"""Table vs parser agreement on the onnx package's light models and our own (target: >= 98%)."""

from __future__ import annotations

from splitscope.engine.split.agreement import measure

from tests.engine import models as M
from tests.engine.conftest import needs_rtx

pytestmark = needs_rtx

# Known, explained disagreements (see BENCHMARKS.md).
EXPECTED = {("restrictions.onnx", "topk_big")}


def test_table_agrees_with_rtx_parser(tmp_path):
    result = measure(M.agreement_models(tmp_path))
    print(f"\nagreement {result.rate:.4f} over {result.nodes} nodes; disagreements:")
    for d in result.disagreements:
        print("  ", d)
    assert result.unverified == 0
    assert {(d["model"], d["node"]) for d in result.disagreements} == EXPECTED
    assert result.rate >= 0.98
