"""When the real parser crashes its process: find out which nodes it crashes on, and prove the rest.

A crash names no node. First the nodes the table rejects are cut (odd nodes crash the parser, and
the table flags most of them). If it still crashes, the node that triggers the crash is found by
bisection over a topological order: the parser is asked about ever shorter prefixes of the graph
(each prefix a whole model in itself, its cut-off tensors becoming outputs) until the shortest
prefix that still crashes is known; its last node is the culprit. It is cut, and the parser asked
again; up to :data:`MAX_CULPRITS` times. Each probe is a child process of its own, so this costs
about log2(nodes) parser runs per culprit, and is done only after a crash.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.split.parser import DISPLAY, ParserAnswer, ParserProcess
from splitscope.engine.text import plural

MAX_CULPRITS = 3
MAX_PROBES = 24
CRASH_REASON = "the parser process crashes on this node"


def recover(
    gm: GraphModel, answer: ParserAnswer, module: str, path: Path, cut: dict[int, str], cancel: CancelToken
) -> Generator[JobEvent, None, ParserAnswer]:
    """Ask the parser again after ``answer`` crashed; returns the first answer that did not crash
    (with the nodes that crash it in :attr:`ParserAnswer.crashers`), or the last crash."""
    name = DISPLAY[module]
    first_failure = answer.failure
    retry = {
        **{
            n.index: "the table rejects it, and the parser crashed on the whole model"
            for n in gm.nodes
            if n.status is Status.PLUGIN
        },
        **cut,
    }
    if retry.keys() - cut.keys():
        yield Progress(
            "parser",
            4,
            6,
            f"The {name} parser crashed; asking again without the {plural(len(retry), 'node')} the table rejects",
        )
        answer = yield from ParserProcess(module, path, retry).events(cancel)
        if not answer.crashed:
            if not answer.failure:
                answer.notes.insert(
                    0,
                    f"{first_failure}; a second call without the {plural(len(retry), 'node')} the table "
                    "rejects answered for the rest.",
                )
            return answer
        cut = retry
    crashers: dict[int, str] = {}
    for _ in range(MAX_CULPRITS):
        culprit = yield from _bisect(gm, module, path, cut, cancel)
        if culprit is None:
            break
        crashers[culprit] = f"{name}: {CRASH_REASON} ({first_failure})"
        cut = {**cut, culprit: CRASH_REASON}
        yield Progress(
            "parser", 4, 6, f"The {name} parser crashes on {gm.nodes[culprit].label}; asking about the rest without it"
        )
        answer = yield from ParserProcess(module, path, cut).events(cancel)
        if not answer.crashed:
            answer.crashers = crashers
            answer.notes.insert(
                0,
                f"{first_failure}; the parser crashes on "
                f"{', '.join(gm.nodes[i].label for i in crashers)} (found by bisection), "
                "and answered for the rest without them.",
            )
            return answer
    return answer


def _bisect(
    gm: GraphModel, module: str, path: Path, cut: dict[int, str], cancel: CancelToken
) -> Generator[JobEvent, None, int | None]:
    """The node whose addition to a prefix of the graph makes the parser crash, or None."""
    order = [i for i in gm.order if i not in cut]
    lo, hi = 0, len(order)  # a prefix of hi nodes crashes (the whole model did); of lo nodes it does not
    probes = 0
    while hi - lo > 1 and probes < MAX_PROBES:
        mid = (lo + hi) // 2
        keep = set(order[:mid])
        probe_cut = {**cut, **{i: "" for i in order if i not in keep}}
        probes += 1
        yield Progress(
            "parser",
            probes,
            0,
            f"The parser crashed: looking for the node it crashes on (probe {probes}, {hi - lo} candidates)",
        )
        answer = yield from ParserProcess(module, path, probe_cut).events(cancel)
        if answer.crashed:
            hi = mid
        else:
            lo = mid
    return order[hi - 1] if hi - lo == 1 and order else None
