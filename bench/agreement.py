"""Print how often the support table agrees with the TensorRT-RTX parser, and every disagreement.

Usage::

    python bench/agreement.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from splitscope.engine.split.agreement import measure

from tests.engine.models import agreement_models


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = agreement_models(Path(tmp))
        result = measure(paths)
    print(f"{len(paths)} models, {result.nodes} nodes, {result.unverified} unverified by the parser")
    print(
        f"table agrees with the parser on {result.agree} of {result.nodes - result.unverified} nodes "
        f"({result.rate:.2%})"
    )
    for d in result.disagreements:
        print(f"  {d['model']} {d['node']} ({d['op_type']}): table {d['table']}, parser {d['parser']}: {d['reason']}")


if __name__ == "__main__":
    main()
