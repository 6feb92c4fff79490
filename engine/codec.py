"""One codec per result kind: the JSON document a result is written as (``--json``, a job's answer, a file saved
beside its model), named and versioned, and the document read back whatever release wrote it.

Every document opens with ``"schema": "splitscope-<kind>"`` and ``"schema_version": N``. :func:`stamp` puts them
there as a result is written; :func:`read` checks them as a document is read: a document of another kind, or of a
newer version than this release reads, is refused with one line that says what to do; an older one (a file written
before documents were versioned reads as version 0) is brought up to date by the kind's upgrades, one version at a
time, before its type reads it. A change to a kind's document adds a version and its upgrade here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from splitscope.engine.errors import SplitscopeError

Doc = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Codec:
    """A result kind's document: its schema name, the version written now, and the upgrade from each older one."""

    kind: str
    version: int = 1
    upgrades: dict[int, Callable[[Doc], Doc]] = field(default_factory=dict)
    """Version ``v`` to ``v + 1``; a version without one needs nothing but the new stamp."""

    @property
    def schema(self) -> str:
        return f"splitscope-{self.kind}"

    def stamp(self, doc: Doc) -> Doc:
        """``doc`` with this kind's schema name and version first (a new dict; ``doc`` is not changed)."""
        rest = {k: v for k, v in doc.items() if k not in ("schema", "schema_version")}
        return {"schema": self.schema, "schema_version": self.version, **rest}

    def read(self, doc: Doc, where: str = "") -> Doc:
        """``doc`` checked to be this kind's and upgraded to the version this release reads."""
        what = where or "the document"
        schema = doc.get("schema")
        if schema is not None and schema != self.schema:
            raise SplitscopeError(
                f"{what} is a {schema} document, not a {self.schema} one: open it where {_kind(schema)} results "
                "are read."
            )
        version = doc.get("schema_version", 0)
        if not isinstance(version, int) or version < 0:
            raise SplitscopeError(f"{what}: schema_version {version!r} is not a version; write it again.")
        if version > self.version:
            raise SplitscopeError(
                f"{what} was written by a newer Splitscope ({self.schema} v{version}; this release reads up to "
                f"v{self.version}): update Splitscope to read it."
            )
        for v in range(version, self.version):
            up = self.upgrades.get(v)
            doc = up(doc) if up is not None else doc
        return self.stamp(doc) if version != self.version else doc


def _kind(schema: object) -> str:
    return str(schema).removeprefix("splitscope-")


CODECS: dict[str, Codec] = {
    kind: Codec(kind)
    for kind in ("analysis", "profile", "generation", "calibration", "kernel", "sweep", "optimize", "engine", "build")
}
"""Every result kind's codec. Version 1 of each is the document as it was when versions came in (older files,
version 0, differ only in lacking the stamp)."""


def stamp(kind: str, doc: Doc) -> Doc:
    """``doc`` stamped as a ``kind`` document (see :class:`Codec`)."""
    return CODECS[kind].stamp(doc)


def read(kind: str, doc: Doc, where: str = "") -> Doc:
    """``doc`` checked as a ``kind`` document and brought to this release's version (see :class:`Codec`)."""
    return CODECS[kind].read(doc, where)
