"""Result tables as pandas DataFrames, for notebooks (pandas is optional: ``pip install 'splitscope[api]'``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from splitscope.engine.errors import SplitscopeError

if TYPE_CHECKING:
    import pandas


def frame(rows: Iterable[Mapping[str, Any]]) -> pandas.DataFrame:
    """One row per mapping, its keys the columns (in first-seen order)."""
    try:
        import pandas
    except ImportError:
        raise SplitscopeError(
            "to_pandas() needs pandas: pip install 'splitscope[api]' (or pandas), or read to_json() instead."
        ) from None
    return pandas.DataFrame.from_records(list(rows))
