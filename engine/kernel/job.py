"""The kernel workbench, whole, as one job (the ``kernel`` child, the CLI's ``splitscope kernel``): the op cut out
at the dims in force, its real inputs captured, the reference made, a starting kernel generated (or the user's
read), the plugin project written, the parser asked with the plugin registered, and the kernel run on the GPU when
there is one. The CPU parts run anywhere; without a GPU the JSON says the kernel did not run and why."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import onnx
from splitscope.engine.codec import stamp
from splitscope.engine.jobs import CancelToken, JobEvent, Progress


def kernel_job(
    model: str,
    nodes: list[str] | None = None,
    dims: dict[str, int] | None = None,
    data: str = "random",
    recipe: str = "",
    source: str | None = None,
    source_text: str | None = None,
    reference: str | None = None,
    compare_default: bool = True,
    out: str | None = None,
    parser: str = "auto",
    iters: int = 100,
    seed: int = 0,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    run_gpu: bool = True,
    ask_parser: bool = True,
    cancel: CancelToken | None = None,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Everything the workbench does for ``nodes`` (labels; the first plugin node when none) of ``model``."""
    from splitscope.engine.kernel.cuda import generate
    from splitscope.engine.kernel.extract import (
        KernelError,
        capture,
        default_nodes,
        extract,
        model_feeds,
        resolve_nodes,
    )
    from splitscope.engine.kernel.extract import (
        reference as make_reference,
    )
    from splitscope.engine.split.analyze import analyze

    cancel = cancel or CancelToken()
    gm = yield from analyze(model, parser=parser, dims=dict(dims or {}), require_dims=True, cancel=cancel)
    yield Progress("extract", 1, 6, "Cutting the op out at the shapes in force")
    proto = onnx.load(model)
    idx = resolve_nodes(gm, list(nodes)) if nodes else default_nodes(gm)
    ex = extract(gm, proto, idx)
    yield Progress("capture", 2, 6, "Capturing its real inputs (ONNX Runtime on the CPU)")
    inputs = capture(gm, proto, ex, model_feeds(gm, proto, data, seed, recipe))
    cancel.raise_if_cancelled()
    yield Progress("reference", 3, 6, "Making the reference")
    ref = make_reference(ex, inputs, reference)
    from splitscope.engine.kernel.extract import TensorSig

    ex.outputs = [  # a data-dependent output (NonMaxSuppression's) takes the size the reference gives it
        TensorSig(o.name, o.dtype, tuple(ref.outputs[o.name].shape)) if o.shape is None and o.name in ref.outputs else o
        for o in ex.outputs
    ]
    gen = generate(ex, inputs)
    if source_text is not None:
        text, origin = source_text, "edited"
    elif source:
        path = Path(source)
        if not path.is_file():
            raise KernelError(f"--source {source}: no such file.")
        text, origin = path.read_text("utf-8"), str(path)
    else:
        text, origin = gen.source, f"generated ({gen.kind})"
    python = bool(source) and Path(str(source)).suffix == ".py"  # a CuPy / Triton function, run from its file
    run_source = str(source) if python else text
    cu_text = gen.source if python else text  # the plugin project's kernel.cu; the .py goes beside it
    extra = {Path(str(source)).name: text} if python else {}
    delegated = all(gm.nodes[i].status.value == "delegate" for i in idx)
    from splitscope.engine.runtime.store import content_key

    doc: dict[str, Any] = stamp(
        "kernel",
        {
            "model": str(model),
            "model_key": content_key(model),
            "shapes": gm.shapes_label(),
            "dims": dict(gm.dims),
            "nodes": ex.labels,
            "extract": ex.to_json(),
            "delegated": delegated,
            "reference": ref.to_json(),
            "source": {"origin": origin, "kind": gen.kind, "complete": gen.complete, "note": gen.note, "text": text},
            "plugin": None,
            "kernel": None,
        },
    )
    if ask_parser:  # a scratch copy of the project, registered with the real parser
        import os
        import shutil
        import tempfile

        from splitscope.engine.kernel.plugin import parse_with_plugin, write_project

        yield Progress("plugin", 4, 6, "Asking the parser with the plugin registered")
        _sweep_scratch()
        scratch = Path(tempfile.mkdtemp(prefix=f"splitscope-plugin-{os.getpid()}-"))
        try:
            write_project(scratch / "plugin", gm, ex, inputs, ref, cu_text, atol, rtol)
            if gm.parser.name != "table":
                backend = "rtx" if "rtx" in gm.parser.name else "tensorrt"  # the parser that split the model
                answer = yield from parse_with_plugin(gm, ex, scratch / "plugin", backend, cancel)
                doc["plugin"] = {"folder": None, "files": [], "parser": answer.to_json()}
            else:
                doc["plugin"] = {"folder": None, "files": [], "parser": {"how": "not-run", "message": "no parser"}}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    cancel.raise_if_cancelled()
    if run_gpu:
        from splitscope.engine.kernel.workbench import run_kernel

        yield Progress("gpu", 5, 6, "Running the kernel on the GPU")
        result = yield from run_kernel(
            ex,
            inputs,
            ref,
            run_source,
            iters=iters,
            compare_default=compare_default,
            delegated=delegated,
            atol=atol,
            rtol=rtol,
            cancel=cancel,
        )
        doc["kernel"] = result.to_json()
    cancel.raise_if_cancelled()
    if out:  # last, whole or not at all: a cancelled job leaves nothing
        from splitscope.engine.kernel.plugin import write_project

        files = write_project(Path(out), gm, ex, inputs, ref, cu_text, atol, rtol, extra)
        doc["plugin"] = {**(doc["plugin"] or {"parser": None}), "folder": str(out), "files": files}
    yield Progress("done", 6, 6, "Done")
    return doc


def _sweep_scratch() -> None:
    """Remove the scratch projects of workbench jobs whose process is gone (a job killed by Cancel cannot remove
    its own)."""
    import os
    import shutil
    import tempfile

    for d in Path(tempfile.gettempdir()).glob("splitscope-plugin-*-*"):
        pid = d.name.split("-")[2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass
