"""The pre-processing a model was trained with, read from what ships with it: a Paddle inference config beside the
model (PaddleOCR's ``inference.yml``, PaddleDetection's ``infer_cfg.yml``), Ultralytics metadata in the model, or
its input's channel count. The CLI and the window's Calibrate dialog both start from :func:`model_recipe` and say
where its recipe came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_NAMES = ("inference.yml", "inference.yaml", "infer_cfg.yml", "infer_cfg.yaml")
"""The Paddle inference configs looked for in the model's folder, in this order."""

_RESIZE_FITS = {
    # PaddleOCR
    "DetResizeForTest": "stretch",
    "RecResizeImg": "pad",
    "ClsResizeImg": "pad",
    "SVTRRecResizeImg": "stretch",
    # PaddleDetection (keep_ratio decides between these two), PaddleClas
    "Resize": "stretch",
    "ResizeImage": "crop",
}


@dataclass(frozen=True, slots=True)
class ModelRecipe:
    """A recipe (as ``--recipe`` reads it) and where it came from, for the line that says so."""

    text: str
    source: str


def model_recipe(model: Path | None, meta: dict[str, str], shape: Sequence[object]) -> ModelRecipe:
    """The recipe ``model`` most likely wants, from its first input's ``shape`` (ints and dim names): its Paddle
    config's pre-processing when one is beside it, letterbox for an Ultralytics detector, grayscale for one channel,
    PaddleOCR's for a text-line input (3 channels, 32 or 48 high, a dynamic or long width), else ImageNet's."""
    if model is not None:
        found = paddle_recipe(model.parent)
        if found is not None:
            return found
    shape = list(shape) if len(shape) == 4 else []
    if shape and shape[1] == 1:
        return ModelRecipe("preset=grayscale", "the input has one channel")
    task = meta.get("task")
    if task in ("detect", "segment", "pose", "obb") or "ultralytics" in meta.get("author", "").lower():
        return ModelRecipe("preset=letterbox", f"Ultralytics metadata (task={task or '?'})")
    if shape and shape[1] == 3 and shape[2] in (32, 48):
        height, width = shape[2], shape[3]
        if not isinstance(width, int) or width >= 4 * height:
            return ModelRecipe("preset=ppocr", f"the text-line input [N, 3, {height}, W] (PaddleOCR's recogniser)")
    return ModelRecipe("preset=imagenet", "the default: nothing in or beside the model says otherwise")


def paddle_recipe(folder: Path) -> ModelRecipe | None:
    """The recipe of the first Paddle inference config in ``folder``; None when there is none or it says nothing
    about images (a config that cannot be read is passed over: the default applies and is said)."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - a dependency; without it the config is not read, and the default said
        return None
    for name in CONFIG_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, yaml.YAMLError):
            continue
        ops = _transform_ops(doc)
        if ops:
            text = _recipe_of(ops)
            if text:
                return ModelRecipe(text, f"{name} beside the model")
    return None


def _transform_ops(doc: Any) -> list[tuple[str, dict[str, Any]]]:
    """(op name, its settings) of a PaddleOCR ``PreProcess: transform_ops: [{Op: {...}}]`` or a PaddleDetection
    ``Preprocess: [{type: Op, ...}]`` list."""
    if not isinstance(doc, dict):
        return []
    pre = doc.get("PreProcess") or doc.get("Preprocess") or doc.get("PreProcessOps")
    if isinstance(pre, dict):
        pre = pre.get("transform_ops")
    ops: list[tuple[str, dict[str, Any]]] = []
    for item in pre if isinstance(pre, list) else []:
        if isinstance(item, dict) and "type" in item:
            ops.append((str(item["type"]), {k: v for k, v in item.items() if k != "type"}))
        elif isinstance(item, dict) and len(item) == 1:
            (name, opts), *_ = item.items()
            ops.append((str(name), opts if isinstance(opts, dict) else {}))
    return ops


def _recipe_of(ops: list[tuple[str, dict[str, Any]]]) -> str:
    """The ``--recipe`` text of Paddle's transform ops, or "" when they hold no normalisation and no resize."""
    parts: list[str] = []
    order = "rgb"
    layout = ""
    for name, opts in ops:
        if name == "DecodeImage":
            order = "bgr" if str(opts.get("img_mode", "BGR")).upper() == "BGR" else "rgb"
        elif name == "NormalizeImage":
            mean, std = opts.get("mean"), opts.get("std")
            if isinstance(mean, list) and isinstance(std, list) and _floats(mean) and _floats(std):
                if opts.get("is_scale") is False:  # PaddleDetection's mean/std in pixels: ours are of x / 255
                    mean, std = [v / 255 for v in mean], [v / 255 for v in std]
                parts += [f"mean={'/'.join(f'{v:g}' for v in mean)}", f"std={'/'.join(f'{v:g}' for v in std)}"]
        elif name in _RESIZE_FITS:
            fit = _RESIZE_FITS[name]
            if name == "Resize" and opts.get("keep_ratio"):
                fit = "pad"
            parts.append(f"fit={fit}")
            short = opts.get("resize_short")
            if fit == "crop" and isinstance(short, int) and short > 0:
                parts.append(f"resize={short}")
        elif name in ("ToCHWImage", "Permute"):
            layout = "nchw"
    if not parts:
        return ""
    if not any(p.startswith("mean=") for p in parts):
        parts.insert(0, "preset=unit")
    return ",".join([*parts, *([f"layout={layout}"] if layout else []), f"order={order}"])


def _floats(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, (int, float)) for x in v)
