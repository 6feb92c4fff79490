"""An op (or any selection of nodes) of the main graph as a standalone ONNX with its real signature at the dims in
force, its real input tensors captured from a run of the model, and a reference output.

The extract is cut as the verifying build cuts a partition (:func:`splitscope.engine.runtime.verify.cut`): what the
nodes read from elsewhere (captured outer tensors of a body included) becomes an input of its concrete shape,
what others read becomes an output, and the weights they use come along. Its inputs are captured by running the
part of the model upstream of them with ONNX Runtime on the CPU (the op itself need not run there). The reference
is ONNX Runtime on the extract, or a numpy function the user points at (a template is generated), or none, said.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.model import GraphModel


class KernelError(SplitscopeError):
    """The workbench cannot do what was asked; the message says what to give instead."""


@dataclass
class TensorSig:
    """One input or output of the extract: its name, numpy dtype and shape at the dims in force (None: unknown)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape) if self.shape is not None else None}


@dataclass
class Extract:
    """The selected nodes on their own."""

    nodes: list[int]
    labels: list[str]
    op_types: list[str]
    inputs: list[TensorSig]
    outputs: list[TensorSig]
    model: bytes
    domain: str = ""
    """The op's domain (one node), for the plugin's namespace."""
    opset: int = 1
    attributes: dict[str, Any] = field(default_factory=dict)
    """The op's attributes (one node), as Python values."""
    flops: int = 0
    bytes_moved: int = 0
    custom: bool = False
    """Whether an op of a custom domain is in the selection (ONNX Runtime has no kernel for it)."""
    operands: list[int] = field(default_factory=list)
    """For one node: each of its inputs as an index into :attr:`inputs` (-1: an optional input left out). An
    operand read twice (``Mul(x, x)``) is one input of the extract."""

    @property
    def op(self) -> str:
        """The op type for one node; ``Fused`` for a selection of several."""
        return self.op_types[0] if len(self.op_types) == 1 else "Fused"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.labels,
            "op_types": self.op_types,
            "op": self.op,
            "domain": self.domain,
            "attributes": {k: _jsonable(v) for k, v in self.attributes.items()},
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            "flops": self.flops,
            "bytes": self.bytes_moved,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, int | float | str) or v is None:
        return v
    return str(v)


def _np_dtype(elem: int) -> str:
    try:
        return str(onnx.helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, ValueError, TypeError):
        return "float32"


def _sig(vi: onnx.ValueInfoProto) -> TensorSig:
    tt = vi.type.tensor_type
    shape = None
    if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
        shape = tuple(int(d.dim_value) for d in tt.shape.dim)
    return TensorSig(vi.name, _np_dtype(tt.elem_type), shape)


def resolve_nodes(gm: GraphModel, names: list[str]) -> list[int]:
    """Node indices for labels, names or indices as a user writes them; an unknown one raises, naming examples."""
    by = {n.label: n.index for n in gm.nodes} | {n.name: n.index for n in gm.nodes if n.name}
    out: list[int] = []
    for name in names:
        if name in by:
            out.append(by[name])
        elif name.isdigit() and int(name) < len(gm.nodes):
            out.append(int(name))
        else:
            plugins = [n.label for n in gm.nodes if n.status.value == "plugin"][:3]
            hint = f" (its plugin nodes: {', '.join(plugins)})" if plugins else ""
            raise KernelError(f"No node '{name}' in {gm.path.name if gm.path else 'the model'}{hint}.")
    return sorted(set(out))


def default_nodes(gm: GraphModel) -> list[int]:
    """The first plugin node (by topological order) when the user names none."""
    pos = {i: k for k, i in enumerate(gm.order)}
    plugins = sorted((n.index for n in gm.nodes if n.status.value == "plugin"), key=lambda i: pos.get(i, i))
    if not plugins:
        raise KernelError("Every node is delegated: name the nodes to work on (e.g. a LayerNorm and its GELU).")
    return plugins[:1]


def extract(gm: GraphModel, proto: onnx.ModelProto, nodes: list[int]) -> Extract:
    """The nodes ``nodes`` of ``gm``'s main graph (analysed at the dims in force) as a standalone model."""
    from splitscope.engine.runtime.verify import cut

    if not nodes:
        raise KernelError("Select at least one node.")
    if gm.missing_dims:
        dims = ", ".join(gm.missing_dims)
        raise KernelError(f"Give a value for {dims} first (--dim NAME=VALUE): the op is cut at the shapes in force.")
    data, _ = cut(proto, nodes, gm)
    m = _weights_as_inputs(onnx.load_from_string(data), [gm.nodes[i] for i in sorted(nodes)])
    data = m.SerializeToString()
    first = gm.nodes[nodes[0]]
    src = proto.graph.node[nodes[0]]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in src.attribute if a.type != onnx.AttributeProto.GRAPH}
    std = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft"}
    ex = Extract(
        nodes=list(nodes),
        labels=[gm.nodes[i].label for i in nodes],
        op_types=[gm.nodes[i].op_type for i in nodes],
        inputs=[_sig(vi) for vi in m.graph.input],
        outputs=[_sig(vi) for vi in m.graph.output],
        model=data,
        domain=first.domain,
        opset=next((o.version for o in proto.opset_import if o.domain == first.domain), 1),
        attributes=attrs if len(nodes) == 1 else {},
        flops=sum(gm.nodes[i].flops or 0 for i in nodes),
        bytes_moved=sum(gm.nodes[i].bytes or 0 for i in nodes),
        custom=any(gm.nodes[i].domain not in std for i in nodes),
    )
    names = [t.name for t in ex.inputs]
    ex.operands = [names.index(x) if x in names else -1 for x in src.input] if len(nodes) == 1 else []
    return ex


def _weights_as_inputs(m: onnx.ModelProto, nodes: list[Any]) -> onnx.ModelProto:
    """The extract's weights as inputs too (a kernel, like a plugin, gets them as inputs), each keeping its value
    as the default (ONNX Runtime treats them as constants unless fed); the inputs in the order the nodes read
    them, so a single op's inputs keep their positions."""
    inits = {t.name: t for t in m.graph.initializer}
    have = {vi.name: vi for vi in m.graph.input}
    for name, t in inits.items():
        if name not in have:
            have[name] = onnx.helper.make_tensor_value_info(name, t.data_type, list(t.dims))
    order: list[str] = []
    for n in nodes:
        order.extend(x for x in n.all_inputs if x in have and x not in order)
    order.extend(x for x in have if x not in order)
    del m.graph.input[:]
    m.graph.input.extend(have[x] for x in order)
    return m


def upstream(gm: GraphModel, names: list[str]) -> list[int]:
    """The main-graph nodes that the tensors ``names`` depend on."""
    producer = {o: n.index for n in gm.nodes for o in n.outputs if o}
    seen: set[int] = set()
    stack = [producer[x] for x in names if x in producer]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        stack.extend(producer[x] for x in gm.nodes[i].all_inputs if x in producer and producer[x] not in seen)
    return sorted(seen)


def model_feeds(gm: GraphModel, proto: onnx.ModelProto, data: str = "random", seed: int = 0, recipe: str = "") -> dict:
    """One sample of the model's inputs: valid random data by default, or the first of the user's samples (a
    folder of .npy/.npz, or images with a recipe), at the dims in force."""
    from splitscope.engine.calib.data import batches, open_data
    from splitscope.engine.runtime.feeds import input_rules
    from splitscope.engine.runtime.inputs import input_specs, random_feeds

    specs = input_specs(proto)
    if data == "random":
        return random_feeds(specs, dict(gm.dims), seed, input_rules(proto))
    return next(iter(batches(open_data(data, specs, 1, dict(gm.dims), seed, recipe or None))))


def capture(gm: GraphModel, proto: onnx.ModelProto, ex: Extract, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The extract's real inputs: model inputs from ``feeds``, weights from the model (wherever it keeps them),
    and the rest from running the part of the model upstream of them with ONNX Runtime on the CPU."""
    from splitscope.engine.onnxio.weights import constant_values
    from splitscope.engine.runtime.verify import cut

    weights = constant_values(proto, [sig.name for sig in ex.inputs if sig.name not in feeds])
    out: dict[str, np.ndarray] = {}
    inner = []
    for sig in ex.inputs:
        if sig.name in feeds:
            out[sig.name] = feeds[sig.name]
        elif sig.name in weights:  # an initializer, a Constant node's value, a chain of constants folded
            out[sig.name] = weights[sig.name]
        else:
            inner.append(sig.name)
    if inner:
        part = upstream(gm, inner)
        data, _ = cut(proto, part, gm)
        m = onnx.load_from_string(data)
        have = {o.name for o in m.graph.output}
        for name in inner:  # an upstream tensor also read elsewhere is an output already
            if name not in have:
                m.graph.output.append(onnx.helper.make_tensor_value_info(name, 0, None))
        try:
            values = _run_ort(m.SerializeToString(), feeds, inner)
        except Exception as e:  # noqa: BLE001 - ORT's errors name the node that fails
            raise KernelError(
                f"The part of the model before the op cannot run in ONNX Runtime ({_first_line(e)}): give its "
                "inputs as --input feeds.npz."
            ) from None
        out.update(values)
    return out


def _first_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:200]


def _run_ort(model: bytes, feeds: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    res = sess.run(names, {k: v for k, v in feeds.items() if k in wanted})
    return dict(zip(names, (np.asarray(r) for r in res), strict=True))


@dataclass
class Reference:
    """The reference outputs and how they were made: ``onnxruntime-cpu``, ``python:PATH`` or ``none`` (why)."""

    how: str
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "note": self.note,
            "outputs": [{"name": k, "dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.outputs.items()],
        }


def reference(ex: Extract, inputs: dict[str, np.ndarray], python: str | Path | None = None) -> Reference:
    """ONNX Runtime on the CPU on the extract; a custom-domain op ORT has no kernel for takes the user's numpy
    function ``reference(inputs, attributes)`` (a module path); otherwise no reference, said."""
    if python:
        return _python_reference(ex, inputs, Path(python))
    names = [o.name for o in ex.outputs]
    try:
        return Reference("onnxruntime-cpu", _run_ort(ex.model, inputs, names))
    except Exception as e:  # noqa: BLE001
        why = _first_line(e)
        try:  # static shapes can fail ONNX Runtime's checks of a body the data never takes (silero's 8 kHz If)
            return Reference("onnxruntime-cpu", _run_ort(_loose(ex.model), inputs, names), "run with its shapes open")
        except Exception:  # noqa: BLE001 - the first error is the one to say
            pass
        if ex.custom:
            why = f"ONNX Runtime has no kernel for {ex.domain}::{ex.op} ({why}); give --reference ref.py"
        return Reference("none", note=why)


def _loose(model: bytes) -> bytes:
    """The extract with its inputs' and outputs' dims open (same ranks), for ONNX Runtime's type inference."""
    m = onnx.load_from_string(model)
    for vi in (*m.graph.input, *m.graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for k, d in enumerate(vi.type.tensor_type.shape.dim):
                d.Clear()
                d.dim_param = f"{vi.name}_{k}"
    del m.graph.value_info[:]
    return m.SerializeToString()


def import_file(path: str | Path, prefix: str) -> Any:
    """A user's Python file (a reference, a kernel, a generated plugin) as a module of its own; ImportError when
    it is not one; what its code raises, as it raises it."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{abs(hash(str(path)))}", str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _python_reference(ex: Extract, inputs: dict[str, np.ndarray], path: Path) -> Reference:
    if not path.is_file():
        raise KernelError(f"--reference {path}: no such file; write one from the generated reference_template.py.")
    try:
        mod = import_file(path, "splitscope_ref")
        fn = mod.reference
        res = fn({k: v.copy() for k, v in inputs.items()}, dict(ex.attributes))
    except ImportError as e:
        raise KernelError(f"--reference {e}.") from None
    except AttributeError:
        raise KernelError(f"--reference {path}: define reference(inputs, attributes) (see the template).") from None
    except Exception as e:  # noqa: BLE001 - the user's code
        raise KernelError(f"--reference {path} raised {type(e).__name__}: {_first_line(e)}") from None
    names = [o.name for o in ex.outputs]
    if isinstance(res, dict):
        outs = {k: np.asarray(res[k]) for k in names if k in res}
    else:
        seq = list(res) if isinstance(res, list | tuple) else [res]
        outs = {k: np.asarray(v) for k, v in zip(names, seq, strict=False)}
    missing = [k for k in names if k not in outs]
    if missing:
        raise KernelError(f"--reference {path} returned no '{missing[0]}': return a dict by output name.")
    for o in ex.outputs:
        if o.shape is not None and tuple(outs[o.name].shape) != o.shape:
            raise KernelError(
                f"--reference {path}: '{o.name}' has shape {list(outs[o.name].shape)}, the model says {list(o.shape)}."
            )
    return Reference(f"python:{path}", outs)


def save_tensors(folder: Path, inputs: dict[str, np.ndarray], ref: Reference) -> list[Path]:
    """The real inputs and the reference outputs as ``inputs.npz`` and ``reference.npz`` (written atomically)."""
    from splitscope.engine.report.files import atomic_path

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, arrays in (("inputs.npz", inputs), ("reference.npz", ref.outputs)):
        if not arrays and name == "reference.npz":
            continue
        named: dict[str, Any] = {_key(k): v for k, v in arrays.items()}
        with atomic_path(folder / name) as tmp, open(tmp, "wb") as f:
            np.savez(f, **named)
        written.append(folder / name)
    return written


def _key(name: str) -> str:
    """An npz key for a tensor name (npz keys are file names inside a zip)."""
    return name.replace("/", "__")
