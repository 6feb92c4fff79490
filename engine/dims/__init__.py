"""A model's symbolic dims: the values given for them, checked against the dims the model has (a name it lacks, a
typo or ``H`` for ``height``, is refused with the model's own dims named, never silently ignored); their names and
typical values (:mod:`.names`, string rules only); the expressions exporters write for derived dims (:mod:`.expr`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from splitscope.engine.errors import SplitscopeError

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel


def parse_dims(values: Iterable[str]) -> dict[str, int]:
    """``['batch=8', 'seq=128']`` (the CLI's ``--dim`` values) as a dict; a malformed one or a size below 1 is
    refused in one line that shows how to write it."""
    out: dict[str, int] = {}
    for v in values:
        name, sep, num = v.partition("=")
        text = num.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if not sep or not name.strip() or not (digits.isascii() and digits.isdigit()):
            raise SplitscopeError(f"--dim expects NAME=INT (e.g. batch=8), got '{v}'.")
        if int(text) < 1:
            raise SplitscopeError(
                f"--dim {name.strip()}={int(text)}: a dimension is 1 or more; give the size the model runs at."
            )
        out[name.strip()] = int(text)
    return out


class UnknownDimError(SplitscopeError):
    """A value was given for a dim the model's inputs do not have."""


def check_dim_names(model: str, known: Iterable[str], dims: Mapping[str, int] | None) -> None:
    """Raise :class:`UnknownDimError` when ``dims`` names a dim that is not in ``known`` (the symbolic dims of
    the model's inputs)."""
    have = list(dict.fromkeys(known))
    unknown = [d for d in (dims or {}) if d not in have]
    if not unknown:
        return
    if have:
        example = " ".join(f"--dim {d}=VALUE" for d in have[:3])
        raise UnknownDimError(
            f"--dim {unknown[0]}: {model} has no dim of that name; its inputs' dims are {', '.join(have)} "
            f"(give {example})."
        )
    raise UnknownDimError(f"--dim {unknown[0]}: {model} has no symbolic dims (every input's shape is fixed); drop it.")


class MissingDimsError(SplitscopeError):
    """A dim that FLOPs and bytes depend on (height, width, sequence, ...) has no value and is not batch-like."""


def symbolic_dims(gm: GraphModel) -> list[str]:
    """Names of the symbolic dims of the analysed model's inputs, in order (from the graph: no file read)."""
    seen: dict[str, None] = {}
    for name in gm.graph.inputs:
        t = gm.graph.tensors.get(name)
        for d in (t.shape or ()) if t is not None else ():
            if isinstance(d, str) and d:
                seen.setdefault(d)
    return list(seen)
