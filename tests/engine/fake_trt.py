"""FakeEngineSession: a named fake of TensorRT engine *execution*, the one boundary that cannot run here (no
GPU TensorRT-RTX supports, no TensorRT). The build before it is real (TensorRT-RTX on the CPU); the fake
stands for ``Runtime``, ``ICudaEngine``, ``IExecutionContext`` and ``EngineInspector`` and for cuda-python's
buffers, with exactly the members :data:`splitscope.engine.runtime.trt.API_USED` lists, which
``test_trt_backend`` checks against the real ``tensorrt_rtx`` classes.

Its engine has one layer per pair of consecutive ONNX nodes, named as TensorRT names fusions
(``a + b``) and carrying ``[ONNX Layer: …]`` metadata as TensorRT 10 and 11 write it; each layer
"takes" a time proportional to its nodes' FLOPs.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import onnx
from splitscope.engine.runtime.trt import EngineSession, trt_module


def _real() -> Any:
    """The real tensorrt_rtx (its enums and callback interfaces), imported when a fake is first used."""
    return trt_module("rtx")


class FakeCuda:
    """cuda-python's runtime calls that EngineSession makes."""

    class cudaMemcpyKind:
        cudaMemcpyHostToDevice = 1
        cudaMemcpyDeviceToHost = 2

    def __init__(self) -> None:
        self.next = 0x1000
        self.live: set[int] = set()

    def cudaMalloc(self, n: int) -> tuple[int, int]:
        self.next += n + 256
        self.live.add(self.next)
        return 0, self.next

    def cudaFree(self, ptr: int) -> tuple[int]:
        self.live.discard(ptr)
        return (0,)

    def cudaMemcpy(self, *args: Any) -> tuple[int]:
        return (0,)

    def cudaStreamCreate(self) -> tuple[int, int]:
        return 0, 7

    def cudaStreamSynchronize(self, stream: int) -> tuple[int]:
        return (0,)

    def cudaStreamDestroy(self, stream: int) -> tuple[int]:
        return (0,)


class FakeInspector:
    def __init__(self, layers: list[dict[str, Any]]) -> None:
        self.layers = layers

    def get_engine_information(self, fmt: Any) -> str:
        return json.dumps({"Layers": self.layers, "Bindings": []})


class FakeContext:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.profiler: Any = None
        self.addresses: dict[str, int] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.runs = 0

    def set_tensor_address(self, name: str, ptr: int) -> bool:
        self.addresses[name] = ptr
        return True

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        self.shapes[name] = tuple(shape)
        return True

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.engine.get_tensor_shape(name)

    def execute_async_v3(self, stream: int) -> bool:
        assert set(self.addresses) == set(self.engine.names), "every I/O tensor needs an address before a run"
        self.runs += 1
        if self.profiler is not None:
            for layer in self.engine.layers:
                self.profiler.report_layer_time(layer["Name"], layer["_ms"])
        return True


class FakeEngine:
    def __init__(self, model: onnx.ModelProto, flops: dict[str, int]) -> None:
        inits = {i.name for i in model.graph.initializer}
        self.inputs = [i for i in model.graph.input if i.name not in inits]
        self.outputs_ = list(model.graph.output)
        self.names = [i.name for i in self.inputs] + [o.name for o in self.outputs_]
        nodes = [n for n in model.graph.node if n.name]
        self.layers = []
        for k in range(0, len(nodes), 2):
            pair = nodes[k : k + 2]
            self.layers.append(
                {
                    "Name": " + ".join(n.name for n in pair),
                    "LayerType": "CaskConvolution",
                    "Metadata": "\x1e".join(f"[ONNX Layer: {n.name}]" for n in pair),
                    "_ms": 0.001 + 1e-12 * sum(flops.get(n.name, 0) for n in pair),
                }
            )
        self.num_layers = len(self.layers)
        self.num_io_tensors = len(self.names)

    def get_tensor_name(self, i: int) -> str:
        return self.names[i]

    def get_tensor_mode(self, name: str) -> Any:
        inputs = {i.name for i in self.inputs}
        return _real().TensorIOMode.INPUT if name in inputs else _real().TensorIOMode.OUTPUT

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        vi = next(v for v in [*self.inputs, *self.outputs_] if v.name == name)
        return tuple(max(d.dim_value, 1) for d in vi.type.tensor_type.shape.dim)

    def get_tensor_dtype(self, name: str) -> Any:
        return _real().DataType.FLOAT

    def create_execution_context(self) -> FakeContext:
        return FakeContext(self)

    def create_engine_inspector(self) -> FakeInspector:
        return FakeInspector(self.layers)


class FakeRuntime:
    def __init__(self, model: onnx.ModelProto, flops: dict[str, int]) -> None:
        self.model, self.flops = model, flops

    def deserialize_cuda_engine(self, plan: bytes) -> FakeEngine:
        assert isinstance(plan, bytes) and len(plan) > 1000, "a real serialized plan from the real builder"
        return FakeEngine(self.model, self.flops)


class _FakeTrt:
    """The module as EngineSession sees it: the real enums and callback interfaces, the fake runtime."""

    def __init__(self, model: onnx.ModelProto, flops: dict[str, int]) -> None:
        real = _real()
        self._runtime = FakeRuntime(model, flops)
        self.Logger = real.Logger
        self.TensorIOMode = real.TensorIOMode
        self.LayerInformationFormat = real.LayerInformationFormat
        self.IProfiler = real.IProfiler

    def Runtime(self, logger: Any) -> FakeRuntime:
        return self._runtime


def fake_session_factory(model_path: str, flops: dict[str, int]) -> Any:
    """A session factory for :func:`splitscope.engine.runtime.profile.profile` that runs the fake."""
    model = onnx.load(model_path, load_external_data=False)
    cuda = FakeCuda()

    def make(plan: bytes, backend: str, feeds: dict[str, np.ndarray]) -> EngineSession:
        s = EngineSession(plan, backend, feeds, trt=_FakeTrt(model, flops), cuda=cuda)
        make.cuda = cuda  # type: ignore[attr-defined]
        make.session = s  # type: ignore[attr-defined]
        return s

    return make


FAKES = {
    "Runtime": FakeRuntime,
    "ICudaEngine": FakeEngine,
    "IExecutionContext": FakeContext,
    "EngineInspector": FakeInspector,
}
"""Which fake stands for which real class (the members checked are the ones API_USED lists)."""
