"""A graph's nodes in columns (:class:`Nodes`) and :class:`Node`, the view of one; what a node's status, role and
source can be.

A 200k-node model was 200k node objects, each with its lists of inputs and outputs: millions of small objects that
took the interpreter a fifth of a second to free. Here the names, ops, inputs and outputs, costs and verdicts are a
few lists and arrays per graph, whatever its size; a :class:`Node` is made when one is read and holds nothing."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

import numpy as np
from splitscope.engine.model.coded import Coded
from splitscope.engine.model.names import Names
from splitscope.engine.model.scopes import Scopes
from splitscope.engine.model.table import RowView

if TYPE_CHECKING:
    from splitscope.engine.model import Graph


class Status(str, Enum):
    """Where a node runs: inside a TensorRT engine, or outside it."""

    DELEGATE = "delegate"
    """TensorRT takes it (fusion, precision, autotuning)."""
    PLUGIN = "plugin"
    """TensorRT rejects it: it needs a TensorRT plugin or custom CUDA."""


class Role(str, Enum):
    """What a node does in the inference path."""

    COMPUTE = "compute"
    DATA_MOVEMENT = "data-movement"
    SHAPE = "shape"
    PRE_PROCESSING = "pre-processing"
    POST_PROCESSING = "post-processing"
    CONTROL_FLOW = "control-flow"


class Source(str, Enum):
    """Where a node's status came from."""

    PARSER = "parser"
    """The real TensorRT (or TensorRT-RTX) ONNX parser said so for this model."""
    TABLE = "table"
    """Predicted from the operator support table and static checks."""
    BUILDER = "builder"
    """A real build at the shapes in force rejected it, though the parser imports it (``runtime.verify``)."""


_STATUS, _ROLE, _SOURCE = list(Status), list(Role), list(Source)
STATUS_CODE = {s: k for k, s in enumerate(_STATUS)}
"""The byte each status is kept as in :attr:`Nodes.status` (and the table's and parser's)."""
ROLE_CODE = {s: k for k, s in enumerate(_ROLE)}
"""The byte each role is kept as in :attr:`Nodes.role`."""
SOURCE_CODE = {s: k for k, s in enumerate(_SOURCE)}
"""The byte each source is kept as in :attr:`Nodes.source`."""
NO_ATTRIBUTES: dict[str, Any] = {}
"""The attributes of every node added without any (shared: a node's attributes are read, never written)."""
_HUGE = 2**63
_new = object.__new__
_DELEGATE = STATUS_CODE[Status.DELEGATE]
NO_STATUS_CODE = 255
"""The code of a status not given (table_status, parser_status)."""
_NONE = NO_STATUS_CODE

NO_BODIES: Mapping[str, Graph] = MappingProxyType({})
"""The bodies of a node that has none (read-only, shared)."""


def _rows_with(column: bytearray, code: int) -> list[int]:
    """The rows of a one-byte column that hold ``code``, in order."""
    return np.flatnonzero(np.frombuffer(column, np.uint8) == code).tolist() if column else []


class Nodes(Sequence["Node"]):
    """Every node of one graph in columns: names, ops and domains one list each, inputs and outputs flat lists of
    names with offsets, FLOPs and bytes ``array('q')`` (-1: unknown; -2: past 64 bits, kept in ``huge``), status,
    role and source one byte each; bodies, functions and outer reads only for the nodes that have them. Read as the
    list of :class:`Node` it replaces."""

    __slots__ = (
        "__weakref__",
        "attributes",
        "bytes",
        "cause",
        "defect",
        "domain",
        "flops",
        "function",
        "huge",
        "implicit",
        "in_off",
        "in_rows",
        "intern",
        "intern_many",
        "name",
        "op_type",
        "out_off",
        "out_rows",
        "parser_status",
        "reason",
        "remedy",
        "role",
        "scope",
        "source",
        "status",
        "subgraphs",
        "table_status",
        "tensor_names",
    )

    def __init__(
        self,
        tensor_names: Names | None = None,
        intern: Callable[[str], int] | None = None,
        intern_many: Callable[[list[str]], list[int]] | None = None,
    ) -> None:
        self.name = Names(indexed=False)
        self.op_type: Coded[str] = Coded()
        self.domain: Coded[str] = Coded()
        self.tensor_names = Names() if tensor_names is None else tensor_names
        """The names the input and output rows index: the graph's tensors' (:class:`Tensors`), else the nodes' own."""
        self.intern = self.tensor_names.add if intern is None else intern
        """A name's row in :attr:`tensor_names`, added if new (the graph's :meth:`Tensors.add`)."""
        self.intern_many = self.tensor_names.add_many if intern_many is None else intern_many
        """:attr:`intern` for many names at once ('' gives -1; the graph's :meth:`Tensors.add_many`)."""
        self.in_off, self.in_rows = array("i", [0]), array("i")
        """Each node's inputs: ``in_rows[in_off[i]:in_off[i + 1]]``, rows of :attr:`tensor_names` (-1: omitted)."""
        self.out_off, self.out_rows = array("i", [0]), array("i")
        self.attributes: Coded[dict[str, Any]] = Coded(by_identity=True, blank=NO_ATTRIBUTES)
        self.scope = Scopes()
        """Each node's module scope (read as a list of tuples; :meth:`Scopes.all` for every node's at once)."""
        self.subgraphs: dict[int, Mapping[str, Graph]] = {}
        self.function: dict[int, Graph] = {}
        self.implicit: dict[int, Sequence[str]] = {}
        self.flops, self.bytes = array("q"), array("q")
        self.huge: dict[tuple[str, int], int] = {}
        """FLOPs or bytes past 64 bits (an absurd dim), by column and node; -2 in the column."""
        self.status, self.role, self.source = bytearray(), bytearray(), bytearray()
        self.table_status, self.parser_status = bytearray(), bytearray()
        self.reason: Coded[str] = Coded(blank="")
        self.defect: Coded[str] = Coded(blank="")
        self.cause: Coded[str] = Coded(blank="")
        self.remedy: Coded[str] = Coded(blank="")
        """The op types, domains, attributes and verdict texts take few distinct values: kept as codes
        (:class:`Coded`), so that the garbage collector does not walk a reference per node."""

    def add(
        self,
        name: str,
        op_type: str,
        domain: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        attributes: dict[str, Any] | None = None,
        scope: tuple[str, ...] = (),
        subgraphs: Mapping[str, Graph] | None = None,
        function: Graph | None = None,
        *,
        status: Status = Status.DELEGATE,
        reason: str = "",
        source: Source = Source.TABLE,
        table_status: Status | None = None,
    ) -> Node:
        """Append a node; returns its view."""
        i = len(self.name)
        self.name.append(name)
        self.op_type.append(op_type)
        self.domain.append(domain)
        intern = self.intern
        self.in_rows.extend([intern(s) if s else -1 for s in inputs])
        self.in_off.append(len(self.in_rows))
        self.out_rows.extend([intern(s) if s else -1 for s in outputs])
        self.out_off.append(len(self.out_rows))
        if attributes is None:
            self.attributes.codes.append(0)  # NO_ATTRIBUTES, each column's blank code 0
        else:
            self.attributes.append(attributes)
        self.scope.append(scope)
        if subgraphs:
            self.subgraphs[i] = subgraphs
        if function is not None:
            self.function[i] = function
        self.flops.append(-1)
        self.bytes.append(-1)
        self.status.append(STATUS_CODE[status])
        self.role.append(0)
        self.source.append(SOURCE_CODE[source])
        self.table_status.append(_NONE if table_status is None else STATUS_CODE[table_status])
        self.parser_status.append(_NONE)
        self.reason.append(reason)
        self.defect.codes.append(0)
        self.cause.codes.append(0)
        self.remedy.codes.append(0)
        return Node.of(self, i)

    def extend(
        self,
        names: Sequence[str],
        ops: Coded[str],
        domains: Coded[str],
        rows: tuple[array[int], array[int], array[int], array[int]],
        scopes: array[int],
        status: Coded[Status],
        reasons: Coded[str],
        source: Source = Source.TABLE,
    ) -> None:
        """Append many nodes at once, column by column (no attributes, bodies or functions; each node's table
        status its status): what :meth:`add` does a node at a time, for a first pass over a million nodes. The
        columns of few values come as codes (:class:`Coded`), never a value per node. ``rows``:
        the nodes' inputs and outputs as rows of :attr:`tensor_names` (``in_rows, in_off, out_rows, out_off``, the
        offsets from 0 with each node's end); ``scopes``: their ids in :attr:`scope`."""
        k = len(names)
        self.name.extend(names)
        self.op_type.extend(ops)
        self.domain.extend(domains)
        for slots, off, (new, ends) in ((self.in_rows, self.in_off, rows[:2]), (self.out_rows, self.out_off, rows[2:])):
            base = len(slots)
            slots.extend(new)
            off.extend(array("i", (np.frombuffer(ends, np.int32)[1:] + base).tobytes()))
        self.attributes.fill(NO_ATTRIBUTES, k)
        self.scope.ids.extend(scopes)
        self.flops.extend(array("q", [-1]) * k)
        self.bytes.extend(array("q", [-1]) * k)
        lut = np.frombuffer(bytes(STATUS_CODE[x] for x in status.values), np.uint8)
        codes = lut[np.frombuffer(status.codes, np.uint32)].tobytes() if len(status) else b""
        self.status.extend(codes)
        self.table_status.extend(codes)
        self.role.extend(bytes(k))
        self.source.extend(bytes([SOURCE_CODE[source]]) * k)
        self.parser_status.extend(bytes([_NONE]) * k)
        self.reason.extend(reasons)
        self.defect.fill("", k)
        self.cause.fill("", k)
        self.remedy.fill("", k)

    def reads(self, i: int) -> list[str]:
        """Node ``i``'s inputs, then the outer tensors its bodies read (:attr:`Node.all_inputs`)."""
        names = self.tensor_names.pick(self.in_rows[self.in_off[i] : self.in_off[i + 1]])
        extra = self.implicit.get(i)
        return [*names, *extra] if extra else names

    def inputs_of(self, i: int) -> list[str]:
        """Node ``i``'s inputs ('' for an omitted optional one)."""
        return self.tensor_names.pick(self.in_rows[self.in_off[i] : self.in_off[i + 1]])

    def outputs_of(self, i: int) -> list[str]:
        """Node ``i``'s outputs."""
        return self.tensor_names.pick(self.out_rows[self.out_off[i] : self.out_off[i + 1]])

    def compact(self) -> None:
        """Fold the names added into one string each (:meth:`Names.compact`): once the nodes are built."""
        self.name.compact()
        self.tensor_names.compact()
        self.scope.compact()

    def with_status(self, status: Status) -> list[int]:
        """The indices of the nodes of ``status``, in order (one pass over the status column, in numpy)."""
        return _rows_with(self.status, STATUS_CODE[status])

    def with_role(self, role: Role) -> list[int]:
        """The indices of the nodes of ``role``, in order (one pass over the role column, in numpy)."""
        return _rows_with(self.role, ROLE_CODE[role])

    def delegates(self) -> list[bool]:
        """Per node, whether its status is delegate."""
        return [c == _DELEGATE for c in self.status]

    def values(self, column: str) -> list[int | None]:
        """The ``flops`` or ``bytes`` column as each node's :attr:`Node.flops` reads it (None: unknown)."""
        arr: array[int] = getattr(self, column)
        if not self.huge:
            return [v if v >= 0 else None for v in arr]
        return [v if v >= 0 else self.huge.get((column, i)) if v == -2 else None for i, v in enumerate(arr)]

    def labels(self) -> list[str]:
        """Each node's :attr:`Node.label`, in order."""
        return [name or f"#{i}" for i, name in enumerate(self.name)]

    def count_nested(self) -> int:
        """How many nodes the bodies and functions of these nodes hold, at every depth (no view made)."""
        total, stack = 0, [*self.function.values()]
        for bodies in self.subgraphs.values():
            stack.extend(bodies.values())
        while stack:
            t = stack.pop().nodes
            total += len(t)
            stack.extend(t.function.values())
            for bodies in t.subgraphs.values():
                stack.extend(bodies.values())
        return total

    def put(self, column: str, i: int, value: int | None) -> None:
        """Set node ``i``'s FLOPs or bytes (``column``); None: unknown."""
        arr: array[int] = self.flops if column == "flops" else self.bytes
        if not self.huge and (value is None or 0 <= value < _HUGE):
            arr[i] = -1 if value is None else value
        elif value is not None and value < 0:
            self.huge.pop((column, i), None)
            arr[i] = -1
        elif value is not None and value >= _HUGE:
            self.huge[(column, i)] = value
            arr[i] = -2
        else:
            self.huge.pop((column, i), None)
            arr[i] = -1 if value is None or value < 0 else value  # a negative count means nothing: unknown

    @overload
    def __getitem__(self, i: int) -> Node: ...
    @overload
    def __getitem__(self, i: slice) -> list[Node]: ...
    def __getitem__(self, i: int | slice) -> Node | list[Node]:
        if isinstance(i, slice):
            return [Node.of(self, k) for k in range(*i.indices(len(self.name)))]
        n = len(self.name)
        if i < 0 or i >= n:
            if not -n <= i < n:
                raise IndexError(f"node {i} of {n}")
            i += n
        v = _new(Node)
        v._t, v._i = self, i
        return v

    def __len__(self) -> int:
        return len(self.name)

    def __iter__(self) -> Iterator[Node]:
        new = _new
        for i in range(len(self.name)):
            v = new(Node)
            v._t, v._i = self, i
            yield v


class Node(RowView):
    """One ONNX node with its split verdict: a view of one row of its graph's :class:`Nodes`."""

    __slots__ = ()
    _t: Nodes

    def __repr__(self) -> str:
        return f"Node({self._i}, {self.name!r}, {self.op_type!r}, {self.status.value})"

    @property
    def index(self) -> int:
        """Its position in its graph's nodes (the file's order)."""
        return self._i

    @property
    def table(self) -> Nodes:
        """The table it is a row of (its columns, for a pass that reads many fields)."""
        return self._t

    @property
    def name(self) -> str:
        return self._t.name[self._i]

    @property
    def op_type(self) -> str:
        c = self._t.op_type
        return c.values[c.codes[self._i]]

    @property
    def domain(self) -> str:
        c = self._t.domain
        return c.values[c.codes[self._i]]

    @property
    def inputs(self) -> list[str]:
        """Its inputs' names ('' for an omitted optional input), a new list each time."""
        return self._t.inputs_of(self._i)

    @property
    def outputs(self) -> list[str]:
        """Its outputs' names, a new list each time."""
        return self._t.outputs_of(self._i)

    @property
    def attributes(self) -> dict[str, Any]:
        """Its attributes by name (read them; nodes without share one empty dict)."""
        c = self._t.attributes
        return c.values[c.codes[self._i]]

    @property
    def scope(self) -> tuple[str, ...]:
        return self._t.scope[self._i]

    @property
    def subgraphs(self) -> Mapping[str, Graph]:
        """Its bodies (If/Loop/Scan), by attribute; one shared empty mapping for the many nodes without."""
        return self._t.subgraphs.get(self._i, NO_BODIES)

    @property
    def function(self) -> Graph | None:
        """The body of the model-local function it calls, None for an operator."""
        return self._t.function.get(self._i)

    @function.setter
    def function(self, value: Graph | None) -> None:
        if value is None:
            self._t.function.pop(self._i, None)
        else:
            self._t.function[self._i] = value

    @property
    def implicit_inputs(self) -> Sequence[str]:
        """Outer-scope tensors its bodies read (If/Loop/Scan): inputs in all but name."""
        return self._t.implicit.get(self._i, ())

    @implicit_inputs.setter
    def implicit_inputs(self, value: Sequence[str]) -> None:
        if value:
            self._t.implicit[self._i] = value
        else:
            self._t.implicit.pop(self._i, None)

    @property
    def reason(self) -> str:
        """Why it has its status, in a sentence."""
        c = self._t.reason
        return c.values[c.codes[self._i]]

    @reason.setter
    def reason(self, value: str) -> None:
        self._t.reason[self._i] = value

    @property
    def defect(self) -> str:
        """Why the node is malformed ONNX (:mod:`splitscope.engine.onnxio.validate`), '' when it is not."""
        c = self._t.defect
        return c.values[c.codes[self._i]]

    @defect.setter
    def defect(self, value: str) -> None:
        self._t.defect[self._i] = value

    @property
    def cause(self) -> str:
        """For a plugin node: why it needs custom work, in a few words (:mod:`splitscope.engine.split.remedies`)."""
        c = self._t.cause
        return c.values[c.codes[self._i]]

    @cause.setter
    def cause(self, value: str) -> None:
        self._t.cause[self._i] = value

    @property
    def remedy(self) -> str:
        """For a plugin node: the fix that removes most such nodes."""
        c = self._t.remedy
        return c.values[c.codes[self._i]]

    @remedy.setter
    def remedy(self, value: str) -> None:
        self._t.remedy[self._i] = value

    @property
    def status(self) -> Status:
        """Where it runs: in an engine (delegate) or outside (plugin)."""
        return _STATUS[self._t.status[self._i]]

    @status.setter
    def status(self, value: Status) -> None:
        self._t.status[self._i] = STATUS_CODE[value]

    @property
    def role(self) -> Role:
        """What it does in the inference path."""
        return _ROLE[self._t.role[self._i]]

    @role.setter
    def role(self, value: Role) -> None:
        self._t.role[self._i] = ROLE_CODE[value]

    @property
    def source(self) -> Source:
        """Where its status came from."""
        return _SOURCE[self._t.source[self._i]]

    @source.setter
    def source(self, value: Source) -> None:
        self._t.source[self._i] = SOURCE_CODE[value]

    @property
    def table_status(self) -> Status | None:
        """What the support table predicted, kept to measure agreement with the parser."""
        c = self._t.table_status[self._i]
        return None if c == _NONE else _STATUS[c]

    @table_status.setter
    def table_status(self, value: Status | None) -> None:
        self._t.table_status[self._i] = _NONE if value is None else STATUS_CODE[value]

    @property
    def parser_status(self) -> Status | None:
        """What the parser said (None when it was not asked or could not verify the node)."""
        c = self._t.parser_status[self._i]
        return None if c == _NONE else _STATUS[c]

    @parser_status.setter
    def parser_status(self, value: Status | None) -> None:
        self._t.parser_status[self._i] = _NONE if value is None else STATUS_CODE[value]

    @property
    def flops(self) -> int | None:
        """Its FLOPs at the dims in force, None when unknown."""
        v = self._t.flops[self._i]
        return v if v >= 0 else self._t.huge.get(("flops", self._i)) if v == -2 else None

    @flops.setter
    def flops(self, value: int | None) -> None:
        self._t.put("flops", self._i, value)

    @property
    def bytes(self) -> int | None:
        """The bytes it reads and writes at the dims in force, None when unknown."""
        v = self._t.bytes[self._i]
        return v if v >= 0 else self._t.huge.get(("bytes", self._i)) if v == -2 else None

    @bytes.setter
    def bytes(self, value: int | None) -> None:
        self._t.put("bytes", self._i, value)

    @property
    def all_inputs(self) -> list[str]:
        """Explicit inputs, then the outer-scope tensors its bodies read."""
        extra = self._t.implicit.get(self._i)
        return [*self.inputs, *extra] if extra else self.inputs

    @property
    def label(self) -> str:
        """Name to show and report: the node's name, or ``#N`` when it has none."""
        return self.name or f"#{self._i}"

    @property
    def is_custom_domain(self) -> bool:
        """Whether the op lives outside the standard ONNX domains."""
        return self.domain not in ("", "ai.onnx", "ai.onnx.ml")
