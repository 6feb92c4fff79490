"""Values given for a model's symbolic dims, checked against the dims the model has: a name it lacks (a typo,
``H`` for ``height``) is refused with the model's own dims named, never silently ignored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from splitscope.engine.errors import SplitscopeError


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
