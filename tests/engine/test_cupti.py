"""Per-node device times from CUPTI's records (issue 20): the attribution of kernels to the ONNX Runtime nodes
that launched them, on records shaped as CUPTI gives them (its timestamps, correlation ids); the real recording ran
on an H200 (BENCHMARKS.md). Without cupti-python the profile says it keeps the host times."""

from __future__ import annotations

from splitscope.engine.runtime.cupti_times import Kernel, Trace, attribute, available


def test_kernels_go_to_the_node_that_launched_them():
    off = 1000  # CUPTI's clock runs 1000 ns ahead of the host's here
    trace = Trace(
        kernels=[
            Kernel("gemm", 1_300 + off, 1_800 + off, 1),
            Kernel("relu", 2_100 + off, 2_200 + off, 2),
            Kernel("gemm2", 2_250 + off, 2_750 + off, 3),
            Kernel("orphan", 3_000 + off, 3_100 + off, 9),
        ],
        launches={1: 1_100 + off, 2: 2_050 + off, 3: 2_060 + off},
        offset_ns=off,
    )
    nodes = [("/fc/Gemm", 1_000, 1_200), ("/act/Relu", 2_000, 2_080)]
    per, cover = attribute(trace, nodes, runs=[(1_000, 3_000)])
    assert per == {"/fc/Gemm": 0.5, "/act/Relu": 0.6}  # µs; Relu's node launched two kernels
    assert cover["unattributed_us"] == 0.1 and cover["device_us"] == 1.1 and cover["gaps_us"] == 0.9
    assert cover["source"] == "cupti" and cover["kernels"] == 4


def test_without_cupti_python_it_says_why():
    why = available()
    assert why == "" or "cupti" in why.lower()
