"""A generation profile of a decoder with a key/value cache: a prefill at the prompt length, then N decode steps
that feed each step's ``present`` back as the next step's ``past``, timed step by step.

The cache is found by name (``past_key_values.{i}.key``/``past.{i}``... in, ``present.{i}.key``/``present``... out,
paired in order), the cache's sequence axis as the one axis of a past input that is not a fixed size and not the
batch. ``attention_mask`` (ones over the whole sequence so far) and ``position_ids`` (the positions of the tokens
fed) are given when the model has them. The next token is the argmax of the last logits (random weights decode
something; what is timed is the model's work per token). Per-node time comes from ONNX Runtime's profiler, in a
second run of the same generation (the timed one runs without it: it costs microseconds a node), split into the
prefill's and the decode steps' (runs told apart by their order). Times are steady-state: a whole generation runs
untimed first (every cache length seen once), then several timed ones give each figure as a median with its spread.
On CUDA the cache stays on the device:
each step's outputs are bound there and fed back without copies.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Generator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.codec import read, stamp
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample

WARM = 2
"""Untimed runs first (a prefill and a decode step): a session's first runs allocate."""
PAST = re.compile(r"(?i)^(past_key_values|past_key|past_value|past)([._]\d+|$)")
PRESENT = re.compile(r"(?i)^(present_key_values|present_key|present_value|present)([._]\d+|$)")


def _is_value(name: str) -> bool:
    """A cache tensor of values: its last part says so (``past_key_values.3.value``), or its prefix
    (``past_value_3``)."""
    low = name.lower()
    return re.split(r"[._]", low)[-1] in ("v", "value", "values") or low.startswith(("past_value", "present_value"))


def _order(name: str) -> tuple[int, ...]:
    """Layer number(s), then key before value."""
    return tuple(int(x) for x in re.findall(r"\d+", name)) + ((1,) if _is_value(name) else (0,))


def cache_pairs(inputs: list[Any], outputs: list[Any]) -> list[tuple[str, str]]:
    """(past input, present output) name pairs, in layer order; [] when the model has no cache."""
    past = sorted((i.name for i in inputs if PAST.match(i.name)), key=_order)
    present = sorted((o.name for o in outputs if PRESENT.match(o.name)), key=_order)
    if not past or len(past) != len(present):
        return []
    return list(zip(past, present, strict=True))


@dataclass
class Generation:
    """The JSON's ``generation``."""

    backend: str
    prompt_len: int
    steps: int
    ttft_ms: float = 0.0
    """The prefill: the time to the first token (the median of the timed generations')."""
    tpot_ms: float = 0.0
    """The time per output token: the median of every decode step of the timed generations."""
    tokens_per_s: float = 0.0
    step_ms: list[float] = field(default_factory=list)
    """Each decode step, in order (the cache grows by one token a step): its median across the timed generations."""
    generations: int = 1
    """Timed generations, after a whole untimed one (files written before there was a warm generation: 1, timed
    after a one-step warm-up)."""
    ttft_range_ms: list[float] = field(default_factory=list)
    """The lowest and highest prefill of the timed generations."""
    tpot_range_ms: list[float] = field(default_factory=list)
    """The lowest and highest of each timed generation's own median step."""
    kv_bytes_per_token: int = 0
    kv_bytes_final: int = 0
    per_node: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """``prefill`` and ``decode``: the slowest nodes of each, ms per run."""
    verdict: str = ""
    why: str = ""
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def document(self, model: str | Path) -> dict[str, Any]:
        """The generation profile's document: the model, the backend and these figures (``--json``, the job's
        answer, the saved file), read back by :class:`GenerationDoc`."""
        return stamp("generation", {"model": str(model), "backend": self.backend, "generation": self.to_json()})

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Generation:
        """A generation read back (a child's result, a saved file, one written before a field existed: its
        default, and a file from before the warm generations counts 1 timed generation)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class GenerationDoc:
    """A finished generation profile as the window keeps it: the model, the backend and the figures, typed;
    :attr:`json` is the document it was read from (the report's section and the saved file)."""

    model: str
    backend: str
    generation: Generation
    json: dict[str, Any]

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> GenerationDoc:
        doc = read("generation", doc)
        g = Generation.from_json(doc.get("generation") or {})
        return cls(str(doc.get("model", "")), str(doc.get("backend") or g.backend), g, doc)

    def to_json(self) -> dict[str, Any]:
        """The document it was read from, unchanged."""
        return self.json


def _empty_past(shape: list[Any]) -> list[int]:
    """An empty cache of a past input's shape: its fixed dims kept, the first symbolic axis (the batch) 1, the
    second (the past sequence) 0; [batch, heads, seq, head_dim] and GPT-2's [2, batch, heads, seq, head_dim] alike."""
    symbolic = [k for k, d in enumerate(shape) if not isinstance(d, int) or d < 0]
    batch = symbolic[0] if symbolic else 0
    seq = symbolic[1] if len(symbolic) > 1 else len(shape) - 2
    return [
        1 if k == batch else 0 if k == seq else int(d) if isinstance(d, int) and d >= 0 else 1
        for k, d in enumerate(shape)
    ]


GENERATIONS = 3
"""Timed generations after the warm one: each step's time is their median, its spread their range."""


def generate(
    path: str | Path,
    backend: str = "ort-cpu",
    prompt_len: int = 128,
    steps: int = 32,
    seed: int = 0,
    cancel: CancelToken | None = None,
    generations: int = GENERATIONS,
) -> Generator[JobEvent, None, Generation]:
    """Prefill ``prompt_len`` tokens, then ``steps`` decode steps, timed in steady state: one whole generation first
    (untimed: every cache length is seen once, every buffer allocated), then ``generations`` timed ones (live
    samples of the first: ``step``, ms per step); then a profiled generation for the per-node times."""
    from splitscope.engine.runtime.ort import parse_ort_profile
    from splitscope.engine.runtime.runner import open_ort

    cancel = cancel or CancelToken()
    if prompt_len < 1 or steps < 1 or generations < 1:
        raise SplitscopeError("--prompt-len, --generate and --generations must be 1 or more.")
    runner = open_ort(Path(path), backend, "The generation profile (the cache fed back between steps)")
    try:
        yield from runner.open()  # the timed session; the profiled one is made after it
        dec = _Decoder.of(runner.inputs(), runner.outputs(), prompt_len, seed, Path(path).name)
        if runner.on_device:  # the cache lives on the device from the start
            dec.empty = {p: runner.to_device(a) for p, a in dec.empty.items()}
        res = Generation(backend, prompt_len, steps, generations=generations)
        step_run = _stepper(runner, dec.pairs, dec.out_names)
        timed: list[list[float]] = []
        for g in range(generations + 1):
            if g:
                yield Progress("generate", 0, steps, f"Generation {g} of {generations} (timed)")
            run_ms, past, total = yield from dec.run(step_run, steps + 1, cancel, live=g == 1)
            if g:
                timed.append(run_ms)
            else:
                res.kv_bytes_final = int(sum(_nbytes(a) for a in past.values()))
                res.kv_bytes_per_token = res.kv_bytes_final // max(total, 1)
        _steady(res, timed)
        yield Progress("generate", steps, steps, "Per-node times (a profiled run)")
        yield from runner.open(profiled=True)
        yield from dec.run(step_run, WARM, cancel, live=False)
        yield from dec.run(step_run, steps + 1, cancel, live=False)
        prof = runner.end_profiling()
        prefill, _, _, _ = _runs(parse_ort_profile, prof, WARM, 1)
        decode, _, kept, _ = _runs(parse_ort_profile, prof, WARM + 1, steps)
        res.per_node = {"prefill": _top(prefill, 1), "decode": _top(decode, max(kept, 1))}
        bandwidth = None
        if runner.on_device:
            from splitscope.engine.runtime.device import NoGpu, gpu_info

            try:
                bandwidth = gpu_info().peak_bandwidth or None
            except NoGpu:
                bandwidth = None
        res.verdict, res.why, res.fix = _verdict(res, len(decode) or len(prefill), _weight_bytes(Path(path)), bandwidth)
        return res
    finally:
        runner.close()


def _steady(res: Generation, timed: list[list[float]]) -> None:
    """The timed generations' figures: the prefill's and each step's median across them, the time per token as the
    median of every timed step, and the range of each generation's own figure as the spread."""
    prefills = [r[0] for r in timed]
    decodes = [r[1:] for r in timed]
    res.ttft_ms = round(statistics.median(prefills), 4)
    res.ttft_range_ms = [round(min(prefills), 4), round(max(prefills), 4)]
    res.step_ms = [round(statistics.median(col), 4) for col in zip(*decodes, strict=True)]
    res.tpot_ms = round(statistics.median([x for d in decodes for x in d]), 4)
    per_gen = [statistics.median(d) for d in decodes]
    res.tpot_range_ms = [round(min(per_gen), 4), round(max(per_gen), 4)]
    res.tokens_per_s = round(1e3 / res.tpot_ms, 2) if res.tpot_ms else 0.0


@dataclass
class _Decoder:
    """What feeding one generation needs: the cache's pairs, the logits' name, the vocabulary, the inputs' names, an
    empty cache, and the prompt's random tokens (one seed: every generation decodes the same)."""

    pairs: list[tuple[str, str]]
    out_names: list[str]
    names: set[str]
    empty: dict[str, Any]
    prompt: np.ndarray

    @classmethod
    def of(cls, ins: list[Any], outs: list[Any], prompt_len: int, seed: int, name: str) -> _Decoder:
        pairs = cache_pairs(ins, outs)
        names = {i.name for i in ins}
        if not pairs or "input_ids" not in names:
            raise SplitscopeError(
                f"{name} has no key/value cache to generate with (inputs named past_key_values.N.key or "
                "past.N and outputs present...., and input_ids): profile it without --generate."
            )
        logits = next((o.name for o in outs if "logit" in o.name.lower()), outs[0].name)
        vocab = next((d for d in reversed(next(o.shape for o in outs if o.name == logits)) if isinstance(d, int)), 2)
        spec = {i.name: i for i in ins}
        empty = {}
        for p, _ in pairs:
            dtype = np.float16 if "float16" in spec[p].type else np.float32
            empty[p] = np.zeros(_empty_past(list(spec[p].shape)), dtype)
        prompt = np.random.default_rng(seed).integers(0, vocab, (1, prompt_len), dtype=np.int64)
        return cls(pairs, [logits] + [q for _, q in pairs], names, empty, prompt)

    def run(
        self, step_run: Any, count: int, cancel: CancelToken, live: bool
    ) -> Generator[JobEvent, None, tuple[list[float], dict[str, Any], int]]:
        """``count`` runs from an empty cache (the prefill, then decode steps): ms of each, the last cache, tokens."""
        past, tokens, total = dict(self.empty), self.prompt, 0
        run_ms: list[float] = []
        for step in range(count):
            cancel.raise_if_cancelled()
            n = tokens.shape[1]
            feeds: dict[str, np.ndarray] = {"input_ids": tokens}
            if "attention_mask" in self.names:
                feeds["attention_mask"] = np.ones((1, total + n), np.int64)
            if "position_ids" in self.names:
                feeds["position_ids"] = np.arange(total, total + n, dtype=np.int64)[None]
            t0 = time.perf_counter()
            last, past = step_run(feeds, past)
            ms = 1e3 * (time.perf_counter() - t0)
            run_ms.append(ms)
            total += n
            tokens = last.argmax(-1).astype(np.int64)
            if not live:
                continue
            if step == 0:
                yield Progress("generate", 0, count - 1, f"Prefill of {n} tokens: {ms:.2f} ms")
            else:
                yield Sample("step", float(step), {"ms": ms, "cache_tokens": float(total)})
                if step % 8 == 0:
                    yield Progress("generate", step, count - 1, f"Decode step {step} of {count - 1}")
        return run_ms, past, total


def _nbytes(a: Any) -> int:
    """Bytes of a numpy array or an OrtValue."""
    if isinstance(a, np.ndarray):
        return int(a.nbytes)
    size = 2 if "float16" in a.data_type() else 4
    return int(np.prod(a.shape())) * size


def _stepper(runner: Any, pairs: list[tuple[str, str]], out_names: list[str]) -> Any:
    """``run(feeds, past) -> (last position's logits [1, 1, vocab] on the host, the next past)`` through the runner's
    open session: on CUDA the cache stays bound on the device (each step's present is the next step's past, never
    copied)."""

    def run(feeds: dict[str, np.ndarray], past: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        got = runner.infer({**feeds, **past}, out_names)
        logits = got[0] if isinstance(got[0], np.ndarray) else got[0].numpy()
        return np.asarray(logits)[:, -1:, :], {p: got[k + 1] for k, (p, _) in enumerate(pairs)}

    return run


def _runs(parse: Any, prof: str, skip: int, count: int) -> tuple[dict[str, float], dict[str, str], int, float]:
    """Node microseconds of the runs from ``skip`` on; ``count == 1``: that run alone (the prefill: the runs after
    it subtracted)."""
    per, ops, kept, us = parse(prof, skip_runs=skip)
    if count == 1:
        later, _, _, _ = parse(prof, skip_runs=skip + 1)
        per = {k: v - later.get(k, 0.0) for k, v in per.items()}
        kept = 1
    return per, ops, kept, us


def _top(per: dict[str, float], runs: int, n: int = 10) -> list[dict[str, Any]]:
    total = sum(per.values()) or 1.0
    rows = sorted(per.items(), key=lambda kv: -kv[1])[:n]
    return [{"name": k, "ms": round(v / 1e3 / runs, 5), "share": round(v / total, 4)} for k, v in rows]


def _weight_bytes(path: Path) -> int:
    """The model's weights in bytes: its initializers (external data included, read from their headers) and the
    tensors its ``Constant`` nodes hold (where Paddle's and some TensorFlow exports keep every weight)."""
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    held = list(m.graph.initializer)
    held += [a.t for n in m.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    total = 0
    for t in held:
        n = int(np.prod(t.dims)) if t.dims else 1
        total += n * max(onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize, 1)
    return total


def _verdict(res: Generation, nodes: int, weights: int, bandwidth: float | None) -> tuple[str, str, str]:
    """A decode step must read the weights and the cache once: at the device's bandwidth that is the step's bound.
    Far above it (5x or more), the step's time goes to its node launches: graph-bound; near it: memory-bound.
    Without the device's peak (on the CPU) the bound is not known, and that is said."""
    moved = weights + res.kv_bytes_final
    fix_graph = (
        "hand the decoder to TensorRT: its fusion cuts the launches a token, and in-flight batching (TensorRT-LLM) "
        "fills the GPU with several sequences' steps"
    )
    if not bandwidth:
        return (
            "decode not classified",
            f"a step takes {res.tpot_ms:.3f} ms for one token over {nodes} nodes, reading {moved / 1e6:.1f} MB of "
            "weights and cache; this device's memory bandwidth is not known here, so its bound is not",
            "profile it on the GPU (--backend ort-cuda) for the verdict",
        )
    bound_ms = 1e3 * moved / bandwidth
    if res.tpot_ms > 5 * bound_ms:
        return (
            "graph-bound decode",
            f"a step takes {res.tpot_ms:.3f} ms, {res.tpot_ms / bound_ms:.0f}x its bound of {bound_ms:.3f} ms (reading "
            f"{moved / 1e6:.1f} MB of weights and cache at {bandwidth / 1e12:.2f} TB/s): the {nodes} node launches a "
            "token cost more than their work",
            fix_graph,
        )
    return (
        "memory-bound decode",
        f"a step takes {res.tpot_ms:.3f} ms, near its bound of {bound_ms:.3f} ms: each token reads {moved / 1e6:.1f} "
        "MB of weights and cache",
        "batch sequences (in-flight batching) so the weights read once serve many tokens; FP8/INT4 weights and an "
        "FP8 KV cache cut the bytes",
    )
