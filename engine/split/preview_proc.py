"""Child process for a large file's preview: ``python -m splitscope.engine.split.preview_proc MODEL PARSER``.

Writes one JSON header line (``target``: the operator table's target for the parser; ``sizes``: the byte counts
that follow), then the preview model and its order pickled with their columns apart
(:func:`splitscope.engine.model.transfer.dumps`): the stream, then each buffer. A file without a preview (small, or
one the light pass does not read) writes ``{"none": true}``. The parent is :class:`splitscope.engine.split.early.
PreviewChild`.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Make the preview of ``argv[0]`` for the parser ``argv[1]`` and write it to stdout."""
    gc.disable()  # a process that builds one model and ends
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.model.transfer import dumps
    from splitscope.engine.split.preview import preview_model, target_of

    try:
        target = target_of(argv[1])
    except SplitscopeError:
        target = None
    made = preview_model(Path(argv[0]), target) if target is not None else None
    out = sys.stdout.buffer
    if made is None:
        out.write(b'{"none": true}\n')
        return 0
    stream, buffers = dumps(made)
    raws = [b.raw() for b in buffers]
    out.write(json.dumps({"target": target, "sizes": [len(stream), *(r.nbytes for r in raws)]}).encode() + b"\n")
    out.write(stream)
    for r in raws:
        out.write(r)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
