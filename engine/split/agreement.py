"""Measure how often the support table's prediction agrees with the real parser."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from splitscope.engine.split.analyze import analyze_model


@dataclass(slots=True)
class Agreement:
    """Agreement of table and parser over a set of models."""

    nodes: int = 0
    agree: int = 0
    unverified: int = 0
    disagreements: list[dict[str, str]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Share of parser-verified nodes where the table said the same."""
        checked = self.nodes - self.unverified
        return self.agree / checked if checked else 1.0


def measure(paths: list[str | os.PathLike[str]], parser: str = "rtx") -> Agreement:
    """Analyse each model with the parser and compare with the table's prediction per node."""
    out = Agreement()
    for p in paths:
        gm = analyze_model(p, parser=parser)
        for n in gm.nodes:
            out.nodes += 1
            if n.parser_status is None:
                out.unverified += 1
            elif n.table_status is n.parser_status:
                out.agree += 1
            else:
                out.disagreements.append(
                    {
                        "model": os.path.basename(str(p)),
                        "node": n.label,
                        "op_type": n.op_type,
                        "table": n.table_status.value if n.table_status else "",
                        "parser": n.parser_status.value,
                        "reason": n.reason,
                    }
                )
    return out
