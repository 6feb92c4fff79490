"""The real parser's answers with generated plugins registered, read from the kernel workbench's results: light (no
ONNX, no numpy), for the planner, the report and the window's colours."""

from __future__ import annotations

from collections.abc import Iterable

from splitscope.engine.kernel.results import KernelDoc, ParserAnswer


def parser_answers(kernels: Iterable[KernelDoc]) -> dict[str, ParserAnswer]:
    """The real parser's answer with a generated plugin registered, by node label, from the workbench's results (a
    later one for the same node wins): what the planner counts instead of its estimate, and what the canvas colours
    after."""
    out: dict[str, ParserAnswer] = {}
    for doc in kernels:
        if doc.answer is not None and doc.answer.counted:
            out.update({label: doc.answer for label in doc.nodes})
    return out
