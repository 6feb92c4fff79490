"""ONNX Runtime as a profiling backend: ``ort-cpu`` always, ``ort-cuda`` with onnxruntime-gpu and a GPU.

Latency runs use a session at full graph optimisation with no profiler attached; on CUDA the inputs
and outputs stay on the device (I/O binding), so the figure is the model's own time and the copies are
measured apart. Per-node times come from separate sessions with ONNX Runtime's profiler on at the same
full optimisation, so that the nodes profiled are the ones timed; what it fused or rewrote is given back to the model
node it came from (:func:`model_node_name`), and what it made up (the CPU's layout reorders) keeps a row of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.errors import BackendUnavailableError, SplitscopeError

BACKENDS = ("ort-cpu", "ort-cuda", "tensorrt", "rtx")


def ort_module() -> Any:
    """``onnxruntime``, imported on first use."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise BackendUnavailableError(
            "ONNX Runtime is not installed: pip install onnxruntime (or onnxruntime-gpu for ort-cuda)."
        ) from None
    return ort


def check_backend(backend: str) -> None:
    """Raise :class:`BackendUnavailableError` with what to do when ``backend`` cannot run here."""
    if backend not in BACKENDS:
        raise BackendUnavailableError(f"Unknown backend {backend!r}: use one of {', '.join(BACKENDS)}.")
    if backend == "ort-cuda":
        ort = ort_module()
        if hasattr(ort, "preload_dlls"):
            with contextlib.suppress(Exception):  # missing CUDA libraries show as no CUDA provider below
                ort.preload_dlls()
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise BackendUnavailableError(
                "ort-cuda needs onnxruntime-gpu and an NVIDIA GPU: pip install "
                "onnxruntime-gpu, or profile with --backend ort-cpu."
            )
    elif backend == "ort-cpu":
        ort_module()
    else:  # tensorrt, rtx: the module, cuda-python and a GPU
        from splitscope.engine.runtime.device import NoGpu, gpu_info
        from splitscope.engine.runtime.trt import trt_module

        trt_module(backend)
        try:
            gpu_info()
        except NoGpu as e:
            raise BackendUnavailableError(
                f"Running a {backend} engine needs an NVIDIA GPU ({e}); building one works "
                "without: profile with --backend ort-cpu here."
            ) from None


def named_model(path: Path) -> tuple[bytes | str, dict[str, int]]:
    """The model for a profiled session, and which main-graph node each profile name is.

    ONNX Runtime's profile names nodes by their names; an unnamed node is given its label here (``#12``, as
    the rest of the app shows it) and the model passed as bytes. A model that keeps its weights in external
    files is passed by path, unchanged (its unnamed nodes then go unmatched).
    """
    m = onnx.load(str(path), load_external_data=False)
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)
    taken = {n.name for n in m.graph.node if n.name}
    index: dict[str, int] = {}
    changed = False
    for i, n in enumerate(m.graph.node):
        if not n.name and not external and f"#{i}" not in taken:
            n.name = f"#{i}"
            changed = True
        if n.name:
            index.setdefault(n.name, i)
    return (m.SerializeToString() if changed else str(path)), index


class InferenceError(SplitscopeError):
    """A run of the model failed; ``raw``: ONNX Runtime's own text where there was one (which kernel is missing)."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


def _run_message(e: Exception) -> str:
    text = str(e).replace("\n", " ")
    if "Non-zero status code returned while running" in text:
        node = text.split("Name:'", 1)[1].split("'", 1)[0] if "Name:'" in text else "?"
        op = text.split("running ", 1)[1].split(" node", 1)[0] if "running " in text else "a"
        detail = text.rsplit("Status Message:", 1)[-1].strip()
        detail = detail.rsplit(" was false. ", 1)[-1] if " was false. " in detail else detail
        return (
            f"ONNX Runtime failed in {op} node '{node}': {detail[:200]} (the model may need other values for "
            "its symbolic dims: set them with --dim NAME=VALUE, or give real inputs with --input FILE.npz)"
        )
    return f"ONNX Runtime failed: {text[:300]}"


class OrtBackend:
    """Sessions of one model on one provider."""

    def __init__(
        self, path: Path, backend: str, threads: int = 0, custom_ops: list[str] | None = None, exact_fp32: bool = False
    ) -> None:
        """``exact_fp32``: an FP32 reference (calibration statistics, accuracy): CUDA runs with TF32 off, which
        is on by default and leaves CUDA's FP32 only about 70 dB from the CPU's."""
        check_backend(backend)
        self.ort = ort_module()
        self.ort.set_default_logger_severity(4)  # failures come back as exceptions, not red lines on stderr
        self.path = path
        self.cuda = backend == "ort-cuda"
        cuda: Any = ("CUDAExecutionProvider", {"use_tf32": "0"}) if exact_fp32 else "CUDAExecutionProvider"
        self.providers = [cuda, "CPUExecutionProvider"] if self.cuda else ["CPUExecutionProvider"]
        self.threads = threads
        self.custom_ops = list(custom_ops or [])
        self._tmp = Path(tempfile.mkdtemp(prefix="splitscope-ort-"))

    def _options(self, profile: bool, plain: bool = False) -> Any:
        so = self.ort.SessionOptions()
        so.log_severity_level = 4
        if self.threads:
            so.intra_op_num_threads = self.threads
        for lib in self.custom_ops:
            try:
                so.register_custom_ops_library(lib)
            except Exception as e:  # noqa: BLE001
                raise InferenceError(f"Could not load the custom-op library {lib}: {str(e)[:200]}") from None
        if profile:
            so.enable_profiling = True
            so.profile_file_prefix = str(self._tmp / "ort-profile")
            # The timed session's own level, so that the profiled nodes are the ones timed (a fused node keeps its
            # first node's name, the CPU's blocked-layout node its output's: to_model_nodes).
            so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        elif plain:  # every node runs as written (Q/DQ pairs too: accuracy of what TensorRT will see)
            so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        else:
            so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return so

    def session(self, profile: bool = False, model: bytes | str | None = None, plain: bool = False) -> Any:
        try:
            return self.ort.InferenceSession(
                model if model is not None else str(self.path), self._options(profile, plain), providers=self.providers
            )
        except Exception as e:  # noqa: BLE001 - ORT raises its own Fail/InvalidGraph/RuntimeException types
            text = str(e).replace("\n", " ")
            if "is not a registered function/op" in text:
                op = text.split("Fatal error: ", 1)[-1].split(" is not a registered", 1)[0]
                raise InferenceError(
                    f"ONNX Runtime has no kernel for {op}: register its custom-op library "
                    "(--custom-op-library PATH) to run it, or use an export without it."
                ) from None
            raise InferenceError(f"ONNX Runtime could not load the model: {text[:300]}") from None

    def graph_session(self) -> Any:
        """A session on CUDA alone that captures its first run as one CUDA graph and replays it after
        (``enable_cuda_graph``); ONNX Runtime's own error where it cannot (a node it would put on the CPU)."""
        cuda = self.providers[0]
        options = {**(cuda[1] if isinstance(cuda, tuple) else {}), "enable_cuda_graph": "1"}
        return self.ort.InferenceSession(
            str(self.path), self._options(False), providers=[("CUDAExecutionProvider", options)]
        )

    def runner(self, sess: Any, feeds: dict[str, np.ndarray]) -> Any:
        """A no-argument callable that runs one inference: on CUDA with inputs and outputs bound on the
        device (no copies inside the timed call), on CPU a plain run. A failing run raises
        :class:`InferenceError` with its first line."""
        if not self.cuda:

            def run_cpu() -> None:
                try:
                    sess.run(None, feeds)
                except Exception as e:  # noqa: BLE001 - ORT's Fail/RuntimeException/InvalidArgument
                    raise InferenceError(_run_message(e)) from None

            return run_cpu
        io = sess.io_binding()
        for name, a in feeds.items():
            io.bind_ortvalue_input(name, self.ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0))
        for o in sess.get_outputs():
            io.bind_output(o.name, "cuda", 0)

        def run() -> None:
            try:
                sess.run_with_iobinding(io)
                io.synchronize_outputs()
            except Exception as e:  # noqa: BLE001
                raise InferenceError(_run_message(e)) from None

        return run

    def close(self) -> None:
        """Remove the profiler's files."""
        shutil.rmtree(self._tmp, ignore_errors=True)


def parse_ort_profile(
    path: str | os.PathLike[str], skip_runs: int = 0
) -> tuple[dict[str, float], dict[str, str], int, float]:
    """Per-node kernel microseconds summed over the profiled runs after the first ``skip_runs``, each node's op
    type, how many runs were kept, and those runs' own total microseconds (what the node times cover). Node
    events are ``{cat: Node, name: NAME_kernel_time, dur, ts, args}``, runs ``{cat: Session, name: model_run}``."""
    events = json.loads(Path(path).read_text(encoding="utf-8"))
    runs = sorted(
        (e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    kept = runs[skip_runs:]
    if not kept:
        return {}, {}, 0, 0.0
    lo = kept[0][0]
    per: dict[str, float] = {}
    ops: dict[str, str] = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time") or e.get("ts", 0) < lo:
            continue
        node = name[: -len("_kernel_time")]
        per[node] = per.get(node, 0.0) + float(e.get("dur", 0))
        ops.setdefault(node, str(e.get("args", {}).get("op_name", "")))
    return per, ops, len(kept), float(sum(b - a for a, b in kept))


def model_node_name(name: str, index_of: Mapping[str, int], producer_of: Mapping[str, str] | None = None) -> str | None:
    """The model's node an ONNX Runtime profiler name stands for: the name itself, or, for a node ONNX Runtime made
    from it, which keeps its name followed by the fusion's or the rewrite's (``/blocks.0/attn/MatMul/MatMulAddFusion``,
    ``.../MatMul_1/MatMulScaleFusion//MatmulTransposeFusion/``, ``.../Reshape_5_new_reshape``), the longest leading
    part of it, ending before a ``/`` or a ``_``, that is a model node's name; None for a node the runtime made up
    (``gemm_input_reshape``, ``Gelu_token_12``). What follows a ``_`` must not be a number (``MatMul_10`` is another
    node than ``MatMul``'s) nor ``token_N`` (the runtime's generated names). The CPU's blocked-layout node is
    named after its output tensor (``conv1_out_nchwc``): with ``producer_of`` (tensor -> node), the node that
    writes that tensor."""
    if name in index_of:
        return name
    if producer_of is not None and name.endswith(_NCHWC) and name[: -len(_NCHWC)] in producer_of:
        return producer_of[name[: -len(_NCHWC)]]
    for k in range(len(name) - 1, 0, -1):
        if name[k] in "/_" and name[:k] in index_of and not _GENERATED.fullmatch(name[k:]):
            return name[:k]
    return None


_GENERATED = re.compile(r"_(token_)?\d+")
_NCHWC = "_nchwc"


_FUSED_INTO_CONV = frozenset({"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Add", "Sum"})
"""What ONNX Runtime's CPU folds into the convolution before it (FusedConv, NCHWc's sum and activation)."""


def blocked_owners(nodes: Any, tensors: Any, index_of: Mapping[str, int]) -> dict[str, str]:
    """Tensor -> the model node a blocked-layout node writing it holds at heart: its producer, or, where that is
    an activation or a sum the CPU folds into the convolution before it (``Conv -> Relu`` runs as one node named
    after the Relu's output), that convolution, so that the time goes to the node that does the work."""
    name_of = {i: name for name, i in index_of.items()}

    def owner(i: int) -> int:
        j = i
        for _ in range(3):
            if nodes[j].op_type not in _FUSED_INTO_CONV:
                break
            feeds = [k for t in nodes.inputs_of(j) if (k := tensors.producer_of(t)) is not None]
            conv = next((k for k in feeds if nodes[k].op_type == "Conv"), None)
            if conv is not None:
                return conv
            if not feeds:
                break
            j = feeds[0]
        return i

    out: dict[str, str] = {}
    for name, i in index_of.items():
        if i < len(nodes):
            heart = name_of.get(owner(i), name)
            out.update(dict.fromkeys(nodes.outputs_of(i), heart))
    return out


def to_model_nodes(
    us: Mapping[str, float], index_of: Mapping[str, int], producer_of: Mapping[str, str] | None = None
) -> tuple[dict[str, float], int]:
    """Per-node times keyed by the model's node names (:func:`model_node_name`; a runtime-inserted node keeps its
    own name), and how many of the runtime's names were given to a model node."""
    out: dict[str, float] = {}
    moved = 0
    for name, v in us.items():
        key = model_node_name(name, index_of, producer_of)
        moved += key is not None and key != name
        key = key or name
        out[key] = out.get(key, 0.0) + v
    return out, moved
