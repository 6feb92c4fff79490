"""Child process that asks the real TensorRT ONNX parser about every node.

Run as ``python -m splitscope.engine.split.parser_proc MODULE MODEL [CUT]`` (CUT: a JSON file
listing node indices to cut out before the first call); it writes JSON lines to
stdout (``version``, ``progress``, then one ``result``). It runs in its own
process because the parser can crash the process (DOMAIN.md section 3), because
a hard cancel must be able to kill it, and so the parent can build its own graph
model while the parser works.

Why iterate: one ``supports_model_v2`` call cannot colour every node. Once a
node fails, every subgraph is reported unverified, a failing op kind is often
reported only the first time, and a model-level failure (a uint64 tensor) names
no node. So: cut the nodes the parser named out of the *whole* model (their
outputs become inputs, as the next engine partition would see them), together
with the nodes of the same signature the parser would report only once, and
parse again, until a call succeeds or no further node can be named.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from itertools import chain
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

SIGNATURE_NOTE = "same op, attributes and input types as '{}', which the parser rejected"


def emit(obj: dict[str, Any]) -> None:
    """Write one JSON event line."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


NAMES_PER_LINE = 20_000
"""Nodes named per ``names`` event: the parent decodes each line in one call that holds its interpreter (a million
nodes' answer in one line held it 150 ms, and the window's thread with it)."""


def emit_result(result: dict[str, Any]) -> None:
    """Write the ``result`` event, its named nodes (``plugin``, ``unverified``) first in ``names`` events of at most
    :data:`NAMES_PER_LINE` each."""
    out = dict(result)
    for key in ("plugin", "unverified"):
        items = list(out.pop(key).items())
        for k in range(0, len(items), NAMES_PER_LINE):
            emit({"event": "names", "key": key, "part": dict(items[k : k + NAMES_PER_LINE])})
        out[key] = {}
    emit(out)


def _outer_refs(node: onnx.NodeProto) -> set[str]:
    """Names a node's bodies read from the enclosing scope."""
    refs: set[str] = set()
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for n in g.node:
                local.update(n.output)
            for n in g.node:
                refs.update(i for i in n.input if i and i not in local)
                refs.update(r for r in _outer_refs(n) if r not in local)
    return refs


def _body_node_names(node: onnx.NodeProto) -> list[str]:
    """Names of the nodes in a node's bodies, at any depth."""
    out: list[str] = []
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                if n.name:
                    out.append(n.name)
                out.extend(_body_node_names(n))
    return out


def _signature(node: onnx.NodeProto, types: dict[str, tuple[int, int | None]], consts: set[str]) -> str:
    attrs = sorted(
        (a.name, str(onnx.helper.get_attribute_value(a))[:200])
        for a in node.attribute
        if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    )
    ins = [(types.get(i), i in consts) for i in node.input]
    outs = [bool(o) for o in node.output]
    return repr((node.domain, node.op_type, attrs, ins, outs))


class Session:
    """One model under iterative analysis."""

    def __init__(self, trt: Any, model_path: Path, cut: list[int] | None = None) -> None:
        self.trt = trt
        self.cut = sorted(set(cut or ()))
        self.path = model_path
        self.data = model_path.read_bytes()
        self.full: onnx.ModelProto | None = None
        self.layout: Any = None
        self.value_types: dict[str, onnx.TypeProto] = {}
        self.types: dict[str, tuple[int, int | None]] = {}
        self.consts: set[str] = set()
        self.assumed: set[str] = set()
        self.guessed: set[str] = set()
        # A C++-side logger: a Python ILogger subclass costs a Python call per
        # message, about a second on a 50k-node model. Errors go to stderr, which
        # the parent keeps in a file and shows if the parser crashes.
        self.logger = trt.Logger(trt.Logger.ERROR)
        self.builder = trt.Builder(self.logger)
        self.calls = 0

    def call(self, data: bytes) -> tuple[bool, list[tuple[int, str, str, str, list[str]]], list[list[int]]]:
        """One supports_model_v2 call: (ok, errors as (node, name, op, desc, function stack), subgraphs)."""
        self.calls += 1
        # Keep the network alive as long as its parser (a temporary network crashes).
        network = self.builder.create_network(0)
        parser = self.trt.OnnxParser(network, self.logger)
        ok = bool(parser.supports_model_v2(data, str(self.path)))
        errors = []
        for i in range(parser.num_errors):
            e = parser.get_error(i)
            name = e.node_name() if hasattr(e, "node_name") else ""
            op = e.node_operator() if hasattr(e, "node_operator") else ""
            desc = str(e.desc()).strip()
            if len(desc) < 16:  # e.g. "false": say which check failed instead
                code = str(e.code()).rsplit(".", 1)[-1]
                desc = f"{code} in {e.func()}" + (f" ({desc})" if desc and desc != "false" else "")
            stack = list(e.local_function_stack()) if hasattr(e, "local_function_stack") else []
            if stack:
                desc = f"{desc} [in local function {' > '.join(str(s) for s in stack)}]"
            errors.append((int(e.node()), name or "", op or "", desc, [str(x) for x in stack]))
        subgraphs = [list(parser.get_subgraph_nodes(i)) for i in range(parser.num_subgraphs)]
        del parser, network
        return ok, errors, subgraphs

    def load_proto(self) -> onnx.ModelProto:
        """Decode the model's structure once (never its weights) and infer types for cut boundaries."""
        if self.full is None:
            from splitscope.engine.onnxio.loader import SMALL_INITIALIZER_ELEMENTS, prepare_model
            from splitscope.engine.onnxio.shapes import infer_shapes
            from splitscope.engine.onnxio.wire import ModelLayout, read_structure

            self.layout = ModelLayout(self.data)
            self.full = onnx.ModelProto.FromString(read_structure(self.path, SMALL_INITIALIZER_ELEMENTS))
            for t in self.full.graph.initializer:
                self.types[t.name] = (t.data_type, len(t.dims))
                self.consts.add(t.name)
            for n in self.full.graph.node:
                if n.op_type == "Constant":
                    self.consts.update(n.output)
            light = onnx.ModelProto()
            light.CopyFrom(self.full)
            prepare_model(light, self.path)
            inferred, self.assumed = infer_shapes(light, [])
            g = inferred.graph
            for vi in chain(g.input, g.value_info, g.output):
                self.value_types[vi.name] = vi.type
                tt = vi.type.tensor_type
                self.types.setdefault(vi.name, (tt.elem_type, len(tt.shape.dim) if tt.HasField("shape") else None))
        return self.full

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        tp = self.value_types.get(name)
        if name in self.assumed or tp is None or not tp.tensor_type.HasField("shape"):
            self.guessed.add(name)
        if tp is not None and tp.tensor_type.elem_type:
            vi = onnx.ValueInfoProto()
            vi.name = name
            vi.type.CopyFrom(tp)
            return vi
        return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)

    def cut_model(self, keep: list[int]) -> bytes:
        """The whole model less the cut nodes: cut outputs become inputs, cut inputs outputs.

        Written by copying the kept nodes' and used initializers' byte ranges from
        the original file, so weights are never decoded or re-encoded.
        """
        full = self.load_proto()
        fg = full.graph
        kept_nodes = [fg.node[i] for i in keep]
        keep_set = set(keep)
        produced: set[str] = set()
        used: set[str] = set()
        for n in kept_nodes:
            produced.update(o for o in n.output if o)
            used.update(i for i in n.input if i)
            used.update(_outer_refs(n))
        init_names = {t.name for t in fg.initializer}
        orig_inputs = {i.name: i for i in fg.input}
        inputs = [
            orig_inputs[name] if name in orig_inputs else self._value_info(name)
            for name in sorted(used - produced - init_names)
        ]
        outs = [
            o if o.type.tensor_type.elem_type else self._value_info(o.name)
            for o in fg.output
            if o.name in produced or o.name in orig_inputs
        ]
        out_names = {o.name for o in outs}
        for i, n in enumerate(fg.node):
            if i in keep_set:
                continue
            for name in n.input:
                if name in produced and name not in out_names:
                    outs.append(self._value_info(name))
                    out_names.add(name)
        if not outs and kept_nodes:
            outs.extend(self._value_info(o) for o in kept_nodes[-1].output if o)
        return self.layout.write(
            keep,
            [t.name for t in fg.initializer if t.name in used],
            [v.SerializeToString() for v in inputs],
            [v.SerializeToString() for v in outs],
        )

    def run(self) -> dict[str, Any]:
        """Iterate until every node is proven or nothing more can be named."""
        t0 = time.perf_counter()
        keep0: list[int] = []
        if self.cut:
            n_nodes = len(self.load_proto().graph.node)
            gone = {i for i in self.cut if 0 <= i < n_nodes}
            keep0 = [i for i in range(n_nodes) if i not in gone] if gone else []
            if gone and not keep0:
                return _Naming(self, [], {}, t0, read=False).result()
        ok, errors, subgraphs = self.call(self.cut_model(keep0) if keep0 else self.data)
        first = {  # sizes only: a million nodes' lists here were one line of JSON the parent decoded for nothing
            "supported": ok,
            "subgraph_sizes": [len(s) for s in subgraphs],
            "errors": len(errors),
        }
        emit({"event": "progress", "call": 1, "seconds": time.perf_counter() - t0})
        if ok:
            return _Naming(self, [], first, t0, read=False).result()
        naming = _Naming(self, keep0, first, t0)
        while not naming.step(errors):
            ok, errors, _ = self.call(self.cut_model(naming.keep))
            if ok:
                break
        return naming.result()


_Error = tuple[int, str, str, str, list[str]]
"""A parser error: (node index in the model parsed, node name, op, description, local function stack)."""


class _Naming:
    """The nodes the parser has named so far (plugin, or unverified where it read a guessed type) and the nodes
    still kept: each :meth:`step` reads one call's errors and cuts what they name."""

    def __init__(self, session: Session, keep0: list[int], first: dict[str, Any], t0: float, read: bool = True) -> None:
        self.s, self.first, self.t0 = session, first, t0
        self.plugin: dict[int, str] = {}
        self.unverified: dict[int, str] = {}
        self.notes: list[str] = []
        self.retyped = False
        self.keep: list[int] = []
        if not read:
            return  # nothing to name (the model parsed, or nothing was left to parse): the model is not decoded
        self.nodes = session.load_proto().graph.node
        self.keep = keep0 or list(range(len(self.nodes)))
        self.by_name: dict[str, int] = {}
        self.nested: dict[str, int] = {}
        for i, n in enumerate(self.nodes):
            if n.name:
                self.by_name.setdefault(n.name, i)
            for inner in _body_node_names(n):
                self.nested.setdefault(inner, i)
        self._sigs: dict[int, str] = {}

    def result(self) -> dict[str, Any]:
        return {
            "event": "result",
            "plugin": self.plugin,
            "unverified": self.unverified,
            "calls": self.s.calls,
            "first_call": self.first,
            "notes": self.notes,
            "seconds": time.perf_counter() - self.t0,
        }

    def step(self, errors: list[_Error]) -> bool:
        """Cut the nodes ``errors`` name; True when there is nothing more to ask the parser."""
        new, doubtful, model_level = self._attribute(errors)
        if new:
            self._look_alikes(new, doubtful)
        if not new and not doubtful and model_level:
            self._untyped(new, model_level[0])
        if not new and not doubtful and not self.retyped and model_level:
            self.retyped = True  # untyped graph outputs fail the whole model: once more with inferred types
            return False
        if not new and not doubtful:
            why = f" ({model_level[0]})" if model_level else ""
            for i in self.keep:
                self.unverified[i] = "the parser stopped without naming a node" + why
            n = len(self.keep)
            self.notes.append(f"The parser stopped without naming a node; {n} node{'' if n == 1 else 's'} unverified.")
            return True
        self.plugin.update(new)
        self.unverified.update(doubtful)
        self.keep = [i for i in self.keep if i not in new and i not in doubtful]
        emit(
            {
                "event": "progress",
                "call": self.s.calls,
                "plugin": len(self.plugin),
                "remaining": len(self.keep),
                "seconds": time.perf_counter() - self.t0,
            }
        )
        return not self.keep

    def _attribute(self, errors: list[_Error]) -> tuple[dict[int, str], dict[int, str], list[str]]:
        """Each error's node in the full model: named (new), read a guessed type (doubtful), or none (model level)."""
        new: dict[int, str] = {}
        doubtful: dict[int, str] = {}
        model_level: list[str] = []
        for error in errors:
            found = self._locate(error)
            if found is None:
                model_level.append(error[3])
                continue
            orig, desc = found
            if orig in self.plugin or orig in self.unverified or orig in new or orig in doubtful:
                continue
            guessed = [i for i in self.nodes[orig].input if i in self.s.guessed]
            if guessed:
                doubtful[orig] = (
                    f"the parser rejected it, but it reads '{guessed[0]}', whose type or shape "
                    f"had to be guessed at a cut boundary: {desc}"
                )
            else:
                new[orig] = desc
        return new, doubtful, model_level

    def _locate(self, error: _Error) -> tuple[int, str] | None:
        """The full model's node an error is about, and its description; None when it names no node."""
        node_idx, name, op, desc, stack = error
        keep, by_name, nested = self.keep, self.by_name, self.nested
        if 0 <= node_idx < len(keep):
            cand = keep[node_idx]
            if not name or self.nodes[cand].name == name:
                return cand, desc
        if name in by_name:
            return by_name[name], desc
        if stack:
            # Inside a model-local function: the stack's first entry is "call-node (Function)".
            caller = stack[0].rsplit(" (", 1)[0]
            if caller in by_name and by_name[caller] in keep:
                return by_name[caller], f"in its function body, node '{name}' ({op}): {desc}"
        if name in nested and nested[name] in keep:
            return nested[name], f"in its body, node '{name}' ({op}): {desc}"
        return None

    def _sig(self, i: int) -> str:
        s = self._sigs.get(i)
        if s is None:
            s = self._sigs[i] = _signature(self.nodes[i], self.s.types, self.s.consts)
        return s

    def _look_alikes(self, new: dict[int, str], doubtful: dict[int, str]) -> None:
        """A failing op kind is often reported once: cut its look-alikes with it."""
        wanted = {self._sig(i): i for i in new}
        for i in self.keep:
            if i not in new and i not in doubtful:
                first_bad = wanted.get(self._sig(i))
                if first_bad is not None:
                    label = self.nodes[first_bad].name or f"#{first_bad}"
                    new[i] = f"{new[first_bad]} ({SIGNATURE_NOTE.format(label)})"

    def _untyped(self, new: dict[int, str], said: str) -> None:
        """The parser failed the model without naming a node: the nodes touching a type TensorRT lacks."""
        for i in self.keep:
            n = self.nodes[i]
            for nm in (*n.input, *n.output):
                tt = self.s.types.get(nm)
                if tt is not None and tt[0] and tt[0] not in _TRT_TYPES:
                    dt = onnx.TensorProto.DataType.Name(tt[0])
                    new[i] = (
                        f"tensor '{nm}' is {dt}, a type TensorRT does not have (the parser "
                        f"failed the model without naming a node: {said})"
                    )
                    break


_TRT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.BOOL,
    onnx.TensorProto.FLOAT8E4M3FN,
    onnx.TensorProto.INT4,
    onnx.TensorProto.FLOAT4E2M1,
    onnx.TensorProto.DOUBLE,
}


def main(argv: list[str]) -> int:
    """Entry point: ``MODULE MODEL``."""
    from splitscope.engine.entry import lower_priority

    lower_priority()
    module, model = argv[0], Path(argv[1])
    cut = [int(i) for i in json.loads(Path(argv[2]).read_text(encoding="utf-8"))] if len(argv) > 2 else []
    try:
        trt = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - reported to the parent as an event
        emit({"event": "error", "kind": "import", "message": f"{type(e).__name__}: {e}"})
        return 3
    emit({"event": "version", "module": module, "version": str(getattr(trt, "__version__", ""))})
    try:
        result = Session(trt, model, cut).run()
    except Exception as e:  # noqa: BLE001 - reported to the parent as an event
        emit({"event": "error", "kind": "parse", "message": f"{type(e).__name__}: {e}"})
        return 4
    emit_result(result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Out at once: the parser's network of the whole model is the OS's to free, not the interpreter's one object at
    # a time, and the parent reads the answer when this process ends (70 ms at 50k nodes).
    os._exit(code)
