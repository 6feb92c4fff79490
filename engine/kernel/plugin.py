"""Plugin projects from the model, and the real parser's answer with the plugin registered.

A project is a folder: ``plugin.py`` (a Python IPluginV3 and its creator, named so the ONNX parser maps the node
to it: op type, version "1", namespace the node's domain), ``plugin.cu`` + ``CMakeLists.txt`` (a C++ IPluginV3 for
teams that ship C++), ``kernel.cu`` (the kernel, Splitscope's launch convention), ``launch.py`` (NVRTC and
cuda-python launching, used by the Python plugin and the test), ``inputs.npz`` / ``reference.npz`` (the op's real
tensors), ``test_plugin.py``, ``reference_template.py`` and ``README.md`` saying what was compiled or run here.
The folder is written beside its destination and renamed into place: a failed export leaves nothing.

The parser's answer: the generated creator registered in TensorRT-RTX's plugin registry, the model parsed again in
a child process. What TensorRT-RTX 1.7 does (found here, see README "Plugins and TensorRT-RTX"): its parser looks up
the creator by name, version and namespace (the node's domain first, then ""), creates the plugin, and then the
process aborts; its Python network has no ``add_plugin_v3``. So the answer is ``mapped``: the parser found and
created the plugin for the node; the engine with it cannot be built with TensorRT-RTX from Python.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.jobs import JobEvent, LogLine, Progress
from splitscope.engine.kernel.extract import Extract, Reference, TensorSig, _jsonable
from splitscope.engine.kernel.results import ParserAnswer
from splitscope.engine.model import GraphModel

_TRT_TYPES = {"float32": "FLOAT", "float16": "HALF", "int32": "INT32", "int64": "INT64", "int8": "INT8", "bool": "BOOL"}
_CPP_TYPES = {k: f"DataType::k{v}" for k, v in _TRT_TYPES.items()}


def _cls(op: str) -> str:
    name = re.sub(r"\W", "", op) or "Custom"
    return name[0].upper() + name[1:]


def _fields(attrs: dict[str, Any]) -> list[dict[str, str]]:
    """The node's attributes as plugin fields, typed as the ONNX parser passes them (ints INT32, floats FLOAT32,
    strings CHAR)."""
    out = []
    for k, v in attrs.items():
        vals = v if isinstance(v, list | tuple) else [v]
        if all(isinstance(x, bool | int) for x in vals):
            out.append({"name": k, "default": repr(vals[0] if len(vals) == 1 else list(vals)), "type": "INT32"})
        elif all(isinstance(x, int | float) for x in vals):
            default = repr(float(vals[0])) if len(vals) == 1 else repr([float(x) for x in vals])
            out.append({"name": k, "default": default, "type": "FLOAT32"})
        elif isinstance(v, bytes | str):
            out.append({"name": k, "default": repr(_jsonable(v)), "type": "CHAR"})
    return out


def _shape_exprs(ex: Extract) -> list[list[Any]]:
    """Each output's dims: ("in", i, k) where an input's dim has the same value (same axis first), else the int."""
    shapes = []
    for o in ex.outputs:
        dims: list[Any] = []
        for a, v in enumerate(o.shape or ()):
            found = None
            for i, t in enumerate(ex.inputs):
                s = t.shape or ()
                if a < len(s) and s[a] == v:
                    found = ("in", i, a)
                    break
            if found is None:
                found = next(
                    (("in", i, k) for i, t in enumerate(ex.inputs) for k, d in enumerate(t.shape or ()) if d == v), v
                )
            dims.append(found)
        shapes.append(dims)
    return shapes


def _render(name: str, **ctx: Any) -> str:
    from importlib import resources

    import jinja2

    text = resources.files("splitscope.resources").joinpath(name).read_text("utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(text).render(**ctx)


def write_project(
    folder: Path,
    gm: GraphModel,
    ex: Extract,
    inputs: dict[str, np.ndarray],
    ref: Reference,
    kernel_source: str,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    extra: dict[str, str] | None = None,
) -> list[str]:
    """Write the plugin project into ``folder`` (replacing it whole); the files written, relative. ``extra``: more
    files by name (the user's Python kernel)."""
    from splitscope.engine.kernel.cuda import attributes_for
    from splitscope.engine.kernel.extract import save_tensors
    from splitscope.engine.runtime import nvrtc

    op = ex.op if ex.op != "Fused" else "Fused" + _cls(ex.op_types[0])
    namespace = ex.domain if ex.domain not in ("", "ai.onnx") else ""
    cls = _cls(op)
    outs = [(tuple(t.shape or ()), t.dtype) for t in ex.outputs]
    ins = [np.asarray(inputs[t.name]) for t in ex.inputs]
    macros = nvrtc.macros(ins, outs, attributes_for(ex))
    try:
        launch_line: nvrtc.Launch | None = nvrtc.launch_spec(kernel_source, macros)
    except nvrtc.LaunchLineError:
        launch_line = None  # the C++ skeleton then launches one thread: the user's launch line is to be fixed
    shapes = _shape_exprs(ex)
    model = gm.path.name if gm.path is not None else "the model"
    py_types = {"float32": "float32", "float16": "float16", "int32": "int32", "int64": "int64", "bool": "bool"}
    io_types = [f"trt.{py_types.get(t.dtype, 'float32')}" for t in (*ex.inputs, *ex.outputs)]
    out_dtypes = [next((i for i, t in enumerate(ex.inputs) if t.dtype == o.dtype), None) for o in ex.outputs]
    ctx: dict[str, Any] = {
        "op": op,
        "domain": ex.domain,
        "namespace": namespace,
        "version": "1",
        "cls": cls,
        "model": model,
        "shapes": gm.shapes_label(),
        "fields": _fields(attributes_for(ex)),
        "field_names": ", ".join(attributes_for(ex)) or "none",
        "n_out": len(ex.outputs),
        "output_dtypes": repr(out_dtypes),
        "first_out_dtype": ex.outputs[0].dtype if ex.outputs else "float32",
        "first_out_trt": {"float16": "float16", "int32": "int32", "int64": "int64", "bool": "bool"}.get(
            ex.outputs[0].dtype if ex.outputs else "float32", "float32"
        ),
        "io_types": "[" + ", ".join(io_types) + "]",
        "output_shapes": "",
    }
    ctx["output_shapes"] = repr([[tuple(d) if isinstance(d, tuple) else d for d in s] for s in shapes])
    cpp_shapes = [[f"in[{d[1]}].d[{d[2]}]" if isinstance(d, tuple) else f"b.constant({d})" for d in s] for s in shapes]
    g = launch_line.grid if launch_line else (1, 1, 1)
    b = launch_line.block if launch_line else (1, 1, 1)
    ctypes_in = [_cpp_ptr(t, True) for t in ex.inputs]
    ctypes_out = [_cpp_ptr(t, False) for t in ex.outputs]
    call = [f"static_cast<{c}>(inputs[{i}])" for i, c in enumerate(ctypes_in)]
    call += [f"static_cast<{c}>(outputs[{i}])" for i, c in enumerate(ctypes_out)]
    cpp = _render(
        "plugin_cpp.cpp.j2",
        **ctx,
        macros=[{"name": k, "value": (f"{v!r}f" if isinstance(v, float) else v)} for k, v in macros.items()],
        cpp_types=", ".join(_CPP_TYPES.get(t.dtype, "DataType::kFLOAT") for t in (*ex.inputs, *ex.outputs)),
        out_types=[_CPP_TYPES.get(t.dtype, "DataType::kFLOAT") for t in ex.outputs],
        cpp_shapes=cpp_shapes,
        grid=f"({g[0]}, {g[1]}, {g[2]})",
        block=f"({b[0]}, {b[1]}, {b[2]})",
        shared=launch_line.shared if launch_line else 0,
        call_args=", ".join(call),
    )
    outputs_sig = [
        {"name": t.name, "var": f"out{i}", "shape": tuple(t.shape or ()), "dtype": t.dtype}
        for i, t in enumerate(ex.outputs)
    ]
    sig = lambda ts: ", ".join(f"{t.name} {t.dtype}{list(t.shape or ())}" for t in ts)  # noqa: E731
    files = {
        "plugin.py": _render("plugin_python.py.j2", **ctx),
        "plugin.cu": cpp,
        "CMakeLists.txt": _render("plugin_cmake.txt.j2", op=op, lib=f"{cls.lower()}_plugin", arch="90"),
        "kernel.cu": kernel_source,
        "launch.py": Path(nvrtc.__file__).read_text("utf-8"),
        "test_plugin.py": _render(
            "plugin_test.py.j2",
            op=op,
            model=model,
            shapes=gm.shapes_label(),
            reference_how=ref.how,
            inputs=repr([_key(t.name) for t in ex.inputs]),
            outputs=repr({_key(t.name): (list(t.shape or ()), t.dtype) for t in ex.outputs}),
            attributes=repr({k: _jsonable(v) for k, v in attributes_for(ex).items()}),
            atol=atol,
            rtol=rtol,
        ),
        "reference_template.py": _render(
            "plugin_reference.py.j2",
            op=op,
            domain=ex.domain,
            input_sig=sig(ex.inputs),
            output_sig=sig(ex.outputs),
            attributes={k: _jsonable(v) for k, v in ex.attributes.items()},
            outputs=outputs_sig,
        ),
        "README.md": _readme(ex, op, namespace, model, gm.shapes_label(), ref),
        **(extra or {}),
    }
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        save_tensors(tmp, inputs, ref)
        onnx.save(onnx.load_from_string(ex.model), str(tmp / "op.onnx"))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 is not what the user's folders get
        if folder.exists():
            old = folder.with_name(f".{folder.name}-old")
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
            try:
                tmp.rename(folder)
            except BaseException:
                old.rename(folder)  # the user's previous project comes back
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(p.name for p in folder.iterdir())


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def _key(name: str) -> str:
    return name.replace("/", "__")


def _cpp_ptr(t: TensorSig, const: bool) -> str:
    from splitscope.engine.kernel.cuda import C_TYPES

    c = C_TYPES.get(t.dtype, "float")
    return f"{'const ' if const else ''}{c}*"


def _readme(ex: Extract, op: str, namespace: str, model: str, shapes: str, ref: Reference) -> str:
    return f"""# {op} plugin, from {model} at {shapes}

Nodes: {", ".join(ex.labels)} ({", ".join(sorted(set(ex.op_types)))}). The ONNX parser maps a node to a plugin by
op type "{op}", version "1" and namespace "{namespace}" (the node's domain first, then "").

| file | what | compiled or run by Splitscope |
|---|---|---|
| op.onnx | the op alone at these shapes | run with ONNX Runtime (CPU) for the reference |
| inputs.npz | its real inputs, captured from a run of the model | yes |
| reference.npz | the reference outputs ({ref.how}) | {"yes" if ref.outputs else "no reference: " + ref.note} |
| kernel.cu | the kernel (launch convention in launch.py) | compiled with NVRTC and run on a GPU when the job had one |
| launch.py | NVRTC + cuda-python launching | yes, on a GPU |
| plugin.py | Python IPluginV3 + creator, `register()` | registered with TensorRT-RTX's parser; no engine built |
| plugin.cu, CMakeLists.txt | C++ IPluginV3 + creator for TensorRT 10.6+/11 | not compiled here |
| test_plugin.py | the kernel against reference.npz | runs where a GPU and cuda-python are |
| reference_template.py | a numpy reference to fill in (`--reference`) | template |
"""


def parse_with_plugin(
    gm: GraphModel, ex: Extract, project: Path, backend: str = "rtx", cancel: Any = None
) -> Generator[JobEvent, None, ParserAnswer]:
    """Parse the model again with the project's creator registered (in a child: the parser may abort) and count
    the partitions and boundary bytes before and after."""
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.model import Source, Status
    from splitscope.engine.process import JobCrashedError, JobProcess
    from splitscope.engine.split.analyze import set_partitions

    before = (len(gm.partitions), gm.boundary_bytes)
    answer = ParserAnswer(
        "not-run", backend, partitions_before=before[0], boundary_bytes_before=before[1], partitions_counted=True
    )
    yield Progress("parser", 0, 0, f"Parsing {gm.path.name if gm.path else 'the model'} with the plugin registered")
    logs: list[str] = []
    result: dict[str, Any] | None = None
    crashed = ""
    try:
        job = JobProcess(
            "plugin-parse", {"model": str(gm.path), "plugin": str(project / "plugin.py"), "backend": backend}
        )
        gen = job.events(cancel or CancelToken())  # a cancelled workbench job stops its parser child too
        while True:
            try:
                ev = next(gen)
            except StopIteration as stop:
                result = stop.value
                break
            if isinstance(ev, LogLine):
                logs.append(ev.text)
    except JobCrashedError as e:
        crashed = str(e)
    except SplitscopeError as e:  # no such TensorRT here, a plugin that does not import: said, not a failed job
        answer.message = str(e)
        return answer
    created = next((x for x in logs if "Successfully created plugin" in x), "")
    if result is not None:
        failed = set(result.get("failed_nodes", []))
        taken = [label for label in ex.labels if label not in failed]
        answer.how = "taken" if len(taken) == len(ex.labels) else ("not-found" if not created else "mapped")
        answer.message = result.get("message", "")
    elif created:
        answer.how, answer.message = (
            "mapped",
            (
                f"the parser found and created the plugin ({created.split(': ')[-1]}), then the process ended "
                f"({crashed.split('(')[-1].split(')')[0] if crashed else 'no result'}): TensorRT-RTX's Python network "
                "cannot add a plugin"
            ),
        )
        taken = list(ex.labels)
    else:
        answer.how, answer.message = "not-found", crashed or "the parser did not find the plugin"
        taken = []
    answer.nodes_after = taken
    saved = [(n.status, n.source, n.reason) for n in gm.nodes]
    by = {n.label: n for n in gm.nodes}
    for label in taken:
        n = by[label]
        n.status, n.source = Status.DELEGATE, Source.PARSER
    set_partitions(gm)
    answer.partitions_after, answer.boundary_bytes_after = len(gm.partitions), gm.boundary_bytes
    for n, (st, src, why) in zip(gm.nodes, saved, strict=True):
        n.status, n.source, n.reason = st, src, why
    set_partitions(gm)
    return answer


def registered_parse(model: str, plugin: str, backend: str = "rtx") -> Generator[JobEvent, None, dict[str, Any]]:
    """In the ``plugin-parse`` child: register the project's creator, ask the real parser about the whole model,
    and say which nodes it rejects. The parser's plugin lines go out as log events as they come (the process may
    end inside the parser)."""
    import json
    import os
    import sys

    from splitscope.engine.runtime.trt import MODULES, trt_module

    trt = trt_module(backend)
    os.environ["SPLITSCOPE_TRT_MODULE"] = MODULES[backend]  # the plugin registers in this TensorRT
    folder = str(Path(plugin).parent)
    sys.path.insert(0, folder)  # the plugin imports launch.py beside it
    from splitscope.engine.kernel.extract import import_file

    mod = import_file(plugin, "splitscope_plugin_under_test")
    registered = bool(mod.register(trt.get_plugin_registry()))
    yield LogLine(f"registered the creator {mod.NAME} v{mod.VERSION} namespace '{mod.NAMESPACE}': {registered}")

    class Logger(trt.ILogger):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            if "lugin" in msg:
                sys.stdout.write(json.dumps({"event": "log", "text": " ".join(str(msg).split())[:400]}) + "\n")
                sys.stdout.flush()

    logger = Logger()
    builder = trt.Builder(logger)
    network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
    parser = trt.OnnxParser(network, logger)
    data = Path(model).read_bytes()
    ok = bool(parser.supports_model_v2(data, model))
    failed, messages = [], []
    for i in range(parser.num_errors):
        err = parser.get_error(i)
        name = err.node_name() if hasattr(err, "node_name") else ""
        failed.append(name)
        messages.append(f"{name}: {err.desc()}")
    return {"ok": ok, "failed_nodes": failed, "message": "; ".join(messages)[:600], "registered": registered}
