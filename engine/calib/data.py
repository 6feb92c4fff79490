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

import numpy as np
from splitscope.engine.runtime.inputs import InputSpec, ProfileInputError, random_feeds


class CalibDataError(ProfileInputError):
    """The calibration data does not fit the model."""


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm")


@dataclass(slots=True)
class Recipe:
    """How an image becomes an input: shorter side resized to ``resize``, centre-cropped to the input's
    height and width, scaled to [0, 1], then ``(x - mean) / std`` per channel, in ``layout``."""

    resize: int = 256
    mean: tuple[float, ...] = (0.485, 0.456, 0.406)
    std: tuple[float, ...] = (0.229, 0.224, 0.225)
    layout: str = "nchw"

    @classmethod
    def parse(cls, text: str) -> Recipe:
        """``resize=256,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,layout=nchw`` (any subset)."""
        r = cls()
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            try:
                if key == "resize":
                    r.resize = int(value)
                elif key in ("mean", "std"):
                    setattr(r, key, tuple(float(v) for v in value.split("/")))
                elif key == "layout" and value.lower() in ("nchw", "nhwc"):
                    r.layout = value.lower()
                else:
                    raise ValueError
            except ValueError:
                raise CalibDataError(
                    f"--recipe {part!r}: use resize=INT, mean=A/B/C, std=A/B/C, layout=nchw|nhwc."
                ) from None
        return r


def _image(path: Path, spec: InputSpec, recipe: Recipe) -> np.ndarray:
    from PIL import Image

    dims = spec.dims
    if len(dims) != 4:
        raise CalibDataError(f"input '{spec.name}' has {len(dims)} dims: images feed a 4-D input (NCHW or NHWC).")
    h, w = (dims[2], dims[3]) if recipe.layout == "nchw" else (dims[1], dims[2])
    h = h if isinstance(h, int) else recipe.resize
    w = w if isinstance(w, int) else recipe.resize
    with Image.open(path) as im:
        im = im.convert("RGB")
        scale = recipe.resize / min(im.size)
        size = (max(round(im.size[0] * scale), w), max(round(im.size[1] * scale), h))
        im = im.resize(size, Image.Resampling.BILINEAR)
        left, top = (im.size[0] - w) // 2, (im.size[1] - h) // 2
        a = np.asarray(im.crop((left, top, left + w, top + h)), dtype=np.float32) / 255.0
    a = (a - np.asarray(recipe.mean, np.float32)) / np.asarray(recipe.std, np.float32)
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

    @property
    def random(self) -> bool:
        return self.folder is None

    def describe(self) -> str:
        """A line for every result: where the data came from."""
        if self.random:
            return (
                f"seeded random data ({self.samples} samples): for plumbing only, not for accuracy; give real "
                "samples with --data DIR"
            )
        return f"{len(self.files)} files from {self.folder}" + (
            f", {len(self.skipped)} skipped" if self.skipped else ""
        )

    def key(self) -> str:
        """What the statistics cache is keyed by, with the model: the data's identity."""
        import hashlib

        h = hashlib.blake2b(digest_size=10)
        if self.random:
            h.update(f"random:{self.samples}:{self.seed}:{sorted(self.dims.items())}".encode())
        else:
            for f in self.files:
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()


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
        raise CalibDataError(f"--data {source}: not a folder; give a folder of .npy/.npz samples, or 'random'.")
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
        raise CalibDataError(f"{folder} has no .npy, .npz or image files: save the samples with numpy.save/savez.")
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


def batches(data: CalibData) -> Iterator[dict[str, np.ndarray]]:
    """The samples, one feed dict per file (or per random sample)."""
    if data.random:
        for k in range(data.samples):
            yield random_feeds(data.specs, data.dims, data.seed + k)
        return
    first = True
    for f in data.files:
        if data.recipe is not None:
            try:
                yield {data.specs[0].name: _image(f, data.specs[0], data.recipe)}
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
