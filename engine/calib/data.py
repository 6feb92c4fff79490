"""Calibration samples: a folder of ``.npy``/``.npz`` files (one sample or a batch per file), a folder of
images with a pre-processing recipe (:class:`Recipe`: resize, centre crop, mean/std, layout, dtype; Pillow),
or seeded random data (for plumbing only: every result that used it says so).

Each array is checked against the model's inputs before anything runs; a file that cannot be read is named
and skipped, never a crash.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from splitscope.engine.runtime.feeds import InputRule
from splitscope.engine.runtime.inputs import InputSpec, ProfileInputError, random_feeds
from splitscope.engine.text import plural

T = TypeVar("T")


class CalibDataError(ProfileInputError):
    """The calibration data does not fit the model."""


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm")


PRESETS: dict[str, dict[str, object]] = {
    "imagenet": {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225), "fit": "crop", "gray": False},
    "unit": {"mean": (0.0,), "std": (1.0,), "fit": "stretch", "gray": False},
    "symmetric": {"mean": (0.5,), "std": (0.5,), "fit": "stretch", "gray": False},
    "letterbox": {"mean": (0.0,), "std": (1.0,), "fit": "letterbox", "gray": False},
    "grayscale": {"mean": (0.0,), "std": (1.0,), "fit": "stretch", "gray": True},
    "ppocr": {"mean": (0.5,), "std": (0.5,), "fit": "pad", "gray": False, "order": "bgr"},
}
"""The pre-processing a model expects, by name: ImageNet classifiers (resize 256, centre crop, mean/std);
``unit`` pixels / 255 in [0, 1]; ``symmetric`` in [-1, 1]; ``letterbox`` for detectors (YOLO: the image scaled
to fit the input, padded with grey 114, pixels / 255); ``grayscale`` one channel in [0, 1]; ``ppocr`` PaddleOCR's
text recognisers and direction classifiers (BGR, scaled keeping its ratio, padded right and bottom with 0 after
``(x - 0.5) / 0.5``)."""

FITS = ("crop", "stretch", "letterbox", "pad")
ORDERS = ("rgb", "bgr")


@dataclass(slots=True)
class Recipe:
    """How an image becomes an input: fitted to the input's height and width (``crop``: shorter side to ``resize``,
    then the centre; ``stretch``: resized to the input; ``letterbox``: scaled to fit, centred, padded with grey 114;
    ``pad``: scaled to fit, at the top left, the rest 0 after mean/std, as PaddleOCR pads), scaled to [0, 1], then
    ``(x - mean) / std`` per channel, one channel when ``gray``, channels in ``order`` (OpenCV-based pipelines
    feed BGR), in ``layout``."""

    resize: int = 256
    mean: tuple[float, ...] = (0.485, 0.456, 0.406)
    std: tuple[float, ...] = (0.229, 0.224, 0.225)
    layout: str = "nchw"
    fit: str = "crop"
    gray: bool = False
    preset: str = "imagenet"
    order: str = "rgb"

    def text(self) -> str:
        """The recipe as :meth:`parse` reads it."""
        mean = "/".join(f"{v:g}" for v in self.mean)
        std = "/".join(f"{v:g}" for v in self.std)
        return (
            f"preset={self.preset},fit={self.fit},resize={self.resize},mean={mean},std={std},layout={self.layout}"
            + (",gray=1" if self.gray else "")
            + (f",order={self.order}" if self.order != "rgb" else "")
        )

    def value_range(self) -> tuple[float, float]:
        """The range of the prepared values, from pixels in [0, 1]."""
        mean, std = np.broadcast_arrays(np.asarray(self.mean, np.float64), np.asarray(self.std, np.float64))
        return float(np.min((0.0 - mean) / std)), float(np.max((1.0 - mean) / std))

    @classmethod
    def parse(cls, text: str) -> Recipe:
        """``preset=letterbox`` or ``resize=256,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,layout=nchw,fit=crop,
        order=bgr`` (any subset; a preset first, then the keys that override it)."""
        r = cls()
        parts = [p.strip() for p in text.split(",") if p.strip()]
        for part in sorted(parts, key=lambda p: not p.startswith("preset=")):
            key, _, value = part.partition("=")
            try:
                if key == "preset" and value.lower() in PRESETS:
                    r.preset = value.lower()
                    for k, v in PRESETS[r.preset].items():
                        setattr(r, k, v)
                elif key == "resize" and int(value) > 0:
                    r.resize = int(value)
                elif key in ("mean", "std"):
                    vals = tuple(float(v) for v in value.split("/"))
                    if key == "std" and any(v == 0 for v in vals):
                        raise ValueError
                    setattr(r, key, vals)
                    r.preset = "custom"
                elif key == "layout" and value.lower() in ("nchw", "nhwc"):
                    r.layout = value.lower()
                elif key == "fit" and value.lower() in FITS:
                    r.fit = value.lower()
                elif key == "gray" and value in ("0", "1"):
                    r.gray = value == "1"
                elif key == "order" and value.lower() in ORDERS:
                    r.order = value.lower()
                else:
                    raise ValueError
            except ValueError:
                raise CalibDataError(
                    f"--recipe {part!r}: use preset={'|'.join(PRESETS)}, fit={'|'.join(FITS)}, resize=INT, "
                    "mean=A/B/C, std=A/B/C (not 0), layout=nchw|nhwc, gray=0|1, order=rgb|bgr."
                ) from None
        if len(r.mean) != len(r.std) and 1 not in (len(r.mean), len(r.std)):
            raise CalibDataError(f"--recipe: mean has {len(r.mean)} values and std {len(r.std)}: give as many of each.")
        return r

    def check(self, spec: InputSpec, dims: dict[str, int]) -> tuple[int, int, int]:
        """(channels, height, width) the input wants; a recipe that cannot feed it is named as the recipe's fault."""
        shape = spec.dims
        if len(shape) != 4:
            raise CalibDataError(
                f"input '{spec.name}' has {len(shape)} dims: images feed a 4-D input (NCHW or NHWC); give .npy/.npz."
            )
        c, h, w = (shape[1], shape[2], shape[3]) if self.layout == "nchw" else (shape[3], shape[1], shape[2])
        other = shape[3] if self.layout == "nchw" else shape[1]
        if isinstance(other, int) and other in (1, 3) and not (isinstance(c, int) and c in (1, 3)):
            want = "nhwc" if self.layout == "nchw" else "nchw"
            raise CalibDataError(
                f"the recipe says layout={self.layout}, but input '{spec.name}' is "
                f"[{', '.join(map(str, shape))}], which is {want.upper()}: set layout={want} in the recipe."
            )
        ch = c if isinstance(c, int) else dims.get(c, 1 if self.gray else 3)
        if ch not in (1, 3):
            raise CalibDataError(
                f"input '{spec.name}' has {ch} channels in layout {self.layout}: images give 1 or 3; check the layout."
            )
        if ch == 3 and self.gray:
            raise CalibDataError(f"the recipe is grayscale, but input '{spec.name}' has 3 channels: drop gray=1.")
        if len(self.mean) not in (1, ch) or len(self.std) not in (1, ch):
            raise CalibDataError(
                f"the recipe's mean/std have {len(self.mean)}/{len(self.std)} values, input '{spec.name}' has "
                f"{ch} channels: give 1 or {ch} of each."
            )

        def size(d: int | str) -> int:
            if isinstance(d, int):
                return d
            v = dims.get(d)
            if v is None:
                raise CalibDataError(f"input '{spec.name}' has no value for {d}: give --dim {d}=VALUE.")
            return v

        return ch, size(h), size(w)


def prepare_image(path: Path, spec: InputSpec, recipe: Recipe, dims: dict[str, int] | None = None) -> np.ndarray:
    """One image as the model's input, batch axis included, by the recipe at the dims in force."""
    from PIL import Image

    c, h, w = recipe.check(spec, dict(dims or {}))
    with Image.open(path) as im:
        im = im.convert("L" if c == 1 else "RGB")
        if recipe.fit == "crop":
            scale = recipe.resize / min(im.size)
            size = (max(round(im.size[0] * scale), w), max(round(im.size[1] * scale), h))
            im = im.resize(size, Image.Resampling.BILINEAR)
            left, top = (im.size[0] - w) // 2, (im.size[1] - h) // 2
            im = im.crop((left, top, left + w, top + h))
        elif recipe.fit == "stretch":
            im = im.resize((w, h), Image.Resampling.BILINEAR)
        else:
            scale = min(w / im.size[0], h / im.size[1])
            size = (min(w, max(1, round(im.size[0] * scale))), min(h, max(1, round(im.size[1] * scale))))
            im = im.resize(size, Image.Resampling.BILINEAR)
            if recipe.fit == "letterbox":
                canvas = Image.new(im.mode, (w, h), 114 if c == 1 else (114, 114, 114))
                canvas.paste(im, ((w - size[0]) // 2, (h - size[1]) // 2))
                im = canvas
        a = np.asarray(im, dtype=np.float32) / 255.0
    if a.ndim == 2:
        a = a[:, :, None]
    if recipe.order == "bgr" and a.shape[2] == 3:
        a = a[:, :, ::-1]
    a = (a - np.asarray(recipe.mean, np.float32)) / np.asarray(recipe.std, np.float32)
    if a.shape[:2] != (h, w):  # fit=pad: the image at the top left, the rest 0 after mean/std
        padded = np.zeros((h, w, a.shape[2]), np.float32)
        padded[: a.shape[0], : a.shape[1]] = a
        a = padded
    if recipe.layout == "nchw":
        a = a.transpose(2, 0, 1)
    return a[None].astype(spec.dtype if spec.dtype.kind == "f" else np.float32)


@dataclass(slots=True)
class CalibData:
    """Where the samples come from, and what was skipped."""

    specs: list[InputSpec]
    folder: Path | None = None
    samples: int = 32
    dims: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    skipped: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    recipe: Recipe | None = None
    """Set for a folder of images."""
    rules: dict[str, InputRule] = field(default_factory=dict)
    """How random samples are drawn per input (:func:`splitscope.engine.runtime.feeds.input_rules`)."""

    @property
    def random(self) -> bool:
        return self.folder is None

    def describe(self) -> str:
        """A line for every result: where the data came from."""
        if self.random:
            return (
                f"seeded random data ({plural(self.samples, 'sample')}): for plumbing only, not for accuracy; "
                "give real samples with --data DIR"
            )
        return f"{plural(len(self.files), 'file')} from {self.folder}" + (
            f", {len(self.skipped)} skipped" if self.skipped else ""
        )

    def key_parts(self) -> list[str]:
        """What the statistics cache is keyed by, with the model's content: the data (files with their sizes and
        times), the recipe, the dims, the sample count and seed, and this Splitscope's version. Anything that
        changes the statistics is here, so a cached result cannot be stale."""
        from splitscope import __version__

        parts = [f"splitscope {__version__}", f"{self.samples} samples", f"dims {sorted(self.dims.items())}"]
        if self.random:
            parts.append(f"random data, seed {self.seed}")
        else:
            files = []
            for f in self.files:
                st = f.stat()
                files.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
            parts.append(
                f"{len(self.files)} files in {self.folder.resolve() if self.folder else ''} " + ";".join(files)
            )
        if self.recipe is not None:
            parts.append(f"recipe {self.recipe.text()}")
        return parts

    def key(self) -> str:
        """The cache key of :meth:`key_parts`."""
        import hashlib

        h = hashlib.blake2b(digest_size=10)
        for part in self.key_parts():
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def matched(self) -> str:
        """The line that says what a cache hit matched."""
        what = "random data" if self.random else f"{plural(len(self.files), 'file')} (names, sizes, times)"
        recipe = f", recipe {self.recipe.text()}" if self.recipe is not None else ""
        dims = ", ".join(f"{k}={v}" for k, v in sorted(self.dims.items())) or "no symbolic dims"
        return f"the model's content, {what}{recipe}, dims {dims}, {plural(self.samples, 'sample')}"


def open_data(
    source: str,
    specs: list[InputSpec],
    samples: int = 32,
    dims: dict[str, int] | None = None,
    seed: int = 0,
    recipe: str | None = None,
) -> CalibData:
    """``source`` is ``random``, a folder of ``.npy``/``.npz`` files, or a folder of images (with ``recipe``)."""
    if source == "random":
        return CalibData(specs, None, samples, dict(dims or {}), seed)
    folder = Path(source)
    if not folder.is_dir():
        raise CalibDataError(
            f"--data {source}: not a folder; give a folder of images or of .npy/.npz samples, or 'random'."
        )
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".npy", ".npz") and p.is_file())
    images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not files and images:
        if len(specs) != 1:
            raise CalibDataError(f"{folder} holds images but the model has {len(specs)} inputs: give .npz files.")
        return CalibData(
            specs,
            folder,
            samples,
            dict(dims or {}),
            seed,
            files=images[: max(samples, 1)],
            recipe=Recipe.parse(recipe or ""),
        )
    if not files:
        raise CalibDataError(
            f"{folder} has no image, .npy or .npz files: put the samples' images there, or save arrays with "
            "numpy.save/savez."
        )
    return CalibData(specs, folder, samples, dict(dims or {}), seed, files=files[: max(samples, 1)])


def _fit(spec: InputSpec, a: np.ndarray, where: str) -> np.ndarray:
    """One array for one input: a sample gets its batch axis; floats are cast to the input's float type."""
    if a.ndim == len(spec.dims) - 1:
        a = a[None]
    if a.ndim != len(spec.dims) or any(isinstance(d, int) and d != n for d, n in zip(spec.dims, a.shape, strict=True)):
        want = "[" + ", ".join(str(d) for d in spec.dims) + "]"
        raise CalibDataError(
            f"{where}: input '{spec.name}' has shape {list(a.shape)}, the model wants {want}: "
            "save samples of that shape (with or without the batch axis)."
        )
    if a.dtype != spec.dtype:
        if a.dtype.kind == "f" and spec.dtype.kind == "f":
            a = a.astype(spec.dtype)
        else:
            raise CalibDataError(f"{where}: input '{spec.name}' is {a.dtype}, the model wants {spec.dtype}.")
    return a


class Prefetched(Iterator[T]):
    """``items`` made on a thread of their own, up to ``depth`` ahead of the caller, from the moment this is made: a
    sample is read, decoded and resized (or drawn) while ONNX Runtime makes its session or runs the one before. An
    exception in the thread is raised here, where the item would have come; the thread stops when the caller stops
    taking (:meth:`close`: a cancel, an error, the end)."""

    def __init__(self, items: Iterator[T], depth: int = 2) -> None:
        import queue
        import threading

        self._q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=max(depth, 1))
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._work, args=(items,), name="splitscope-calib-data", daemon=True)
        self._thread.start()

    def _put(self, kind: str, value: Any) -> bool:
        import queue

        while not self._stop.is_set():
            try:
                self._q.put((kind, value), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self, items: Iterator[T]) -> None:
        try:
            for item in items:
                if not self._put("item", item):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            self._put("error", e)
            return
        self._put("end", None)

    def __iter__(self) -> Prefetched[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        kind, value = self._q.get()
        if kind == "item":
            return value
        self.close()
        if kind == "error":
            raise value
        raise StopIteration

    def close(self) -> None:
        """Stop the thread (it ends within a tenth of a second) and take nothing more."""
        self._done = True
        self._stop.set()
        self._thread.join(timeout=5)

    def __del__(self) -> None:
        self._stop.set()


def batches(data: CalibData) -> Iterator[dict[str, np.ndarray]]:
    """The samples, one feed dict per file (or per random sample)."""
    if data.random:
        for k in range(data.samples):
            yield random_feeds(data.specs, data.dims, data.seed + k, data.rules)
        return
    first = True
    for f in data.files:
        if data.recipe is not None:
            try:
                yield {data.specs[0].name: prepare_image(f, data.specs[0], data.recipe, data.dims)}
            except CalibDataError:
                raise
            except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for a broken image
                data.skipped.append(f"{f.name}: {str(e).splitlines()[0][:100] if str(e) else type(e).__name__}")
            continue
        try:
            if f.suffix.lower() == ".npy":
                if len(data.specs) != 1:
                    raise CalibDataError(
                        f"{f.name} holds one array but the model has {len(data.specs)} inputs: "
                        "save them together in .npz files named after the inputs."
                    )
                arrays = {data.specs[0].name: np.load(f, allow_pickle=False)}
            else:
                with np.load(f, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in z.files}
        except CalibDataError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            data.skipped.append(f"{f.name}: {str(e).splitlines()[0][:100]}")
            continue
        try:
            feeds = {s.name: _fit(s, arrays[s.name], f.name) for s in data.specs}
        except KeyError as e:
            if first:
                raise CalibDataError(
                    f"{f.name} has no array for input {e.args[0]!r} (it has "
                    f"{', '.join(map(repr, arrays)) or 'none'}): name the arrays after the "
                    "model's inputs."
                ) from None
            data.skipped.append(f"{f.name}: no array for input {e.args[0]!r}")
            continue
        except CalibDataError:
            if first:
                raise
            data.skipped.append(f"{f.name}: shape or dtype does not fit")
            continue
        first = False
        yield feeds


@dataclass(frozen=True, slots=True)
class RecipePreview:
    """One sample prepared by a recipe, as the Calibrate dialog shows it before anything runs."""

    file: str
    shape: tuple[int, ...]
    low: float
    high: float
    pixels: np.ndarray | None
    """The prepared sample as 8-bit pixels (H, W, channels) for a thumbnail; None for a refused recipe."""
    error: str = ""


def preview_recipe(folder: str | Path, spec: InputSpec, recipe: str, dims: dict[str, int]) -> RecipePreview:
    """Prepare the first image of ``folder`` by ``recipe`` at ``dims``; a recipe that cannot feed the input
    (a layout the input is not in, too many channels, a size with no value) comes back as ``error``, naming the
    recipe's fault, never ONNX Runtime's."""
    folder = Path(folder)
    try:
        images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    except OSError as e:
        return RecipePreview("", (), 0.0, 0.0, None, f"{folder}: cannot read it ({e.strerror or e}).")
    if not images:
        return RecipePreview("", (), 0.0, 0.0, None, f"{folder} holds no images ({', '.join(IMAGE_SUFFIXES)}).")
    try:
        r = Recipe.parse(recipe)
        a = prepare_image(images[0], spec, r, dims)
    except CalibDataError as e:
        return RecipePreview(images[0].name, (), 0.0, 0.0, None, e.message)
    except OSError as e:
        return RecipePreview(images[0].name, (), 0.0, 0.0, None, f"{images[0].name}: not an image Pillow reads ({e}).")
    img = a[0].transpose(1, 2, 0) if r.layout == "nchw" else a[0]
    if r.order == "bgr" and img.shape[2] == 3:
        img = img[:, :, ::-1]  # the thumbnail in the colours a person sees
    lo, hi = float(img.min()), float(img.max())
    pixels = ((img - lo) / (hi - lo) * 255 if hi > lo else np.zeros_like(img)).astype(np.uint8)
    return RecipePreview(images[0].name, tuple(a.shape), lo, hi, np.ascontiguousarray(pixels))
