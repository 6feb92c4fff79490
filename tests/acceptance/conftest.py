"""Where the acceptance suite finds the packages that ship its models and photos (``.ci/acceptance`` installs them
into build/acceptance and names the folder in ``SPLITSCOPE_ACCEPTANCE``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def site() -> Path | None:
    d = Path(os.environ.get("SPLITSCOPE_ACCEPTANCE") or ROOT / "build" / "acceptance")
    return d if (d / "nudenet").is_dir() else None


@pytest.fixture(scope="session")
def packages() -> Path:
    d = site()
    if d is None:
        pytest.skip("the acceptance packages are not installed: run bash .ci/acceptance (it installs them)")
    return d


@pytest.fixture
def photos(packages: Path, tmp_path: Path):
    """A folder of real photos from scikit-image's sample data, by name."""

    def _copy(*names: str) -> Path:
        folder = tmp_path / "photos"
        folder.mkdir(exist_ok=True)
        for k, name in enumerate(names):
            src = packages / "skimage" / "data" / name
            shutil.copyfile(src, folder / f"{k:02d}_{name}")  # the order calibrate reads them in
        return folder

    return _copy
