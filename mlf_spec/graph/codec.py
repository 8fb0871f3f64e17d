"""GraphExecutor JSON (``graph.json`` / ``<module>.graph``): read, check, write.

    >>> from mlf_spec import graph_json              # the short name of mlf_spec.graph.codec
    >>> g = graph_json.parse(text)               # strict model (spec/records/graph_json.yaml)
    >>> [n.name for n in g.input_nodes()]        # arg_nodes, in order
    ['a', 'b', 'p0']
    >>> g.entry_shape(g.entry_id(0)), g.entry_dtype(g.entry_id(0))
    ([1, 2], 'uint8')
    >>> graph_json.dumps(g.data) == text         # dmlc JSONWriter's layout, byte for byte
    True

An MLF archive stores the compiler's string verbatim; :func:`dumps` is for new graphs
(strategies, hand-built archives) and reproduces dmlc's JSONWriter layout: newline and two
spaces per level, ``", "`` then a newline between members, integer arrays of at most 10
elements on one line, strings escaped only for ``\\r \\n \\\\ \\t \\"``.

Documents are validated with the generated plain validators and read into the generated
plain typed records (``mlf_spec.generated.graph_json_plain``: no pydantic); the pydantic
model (:data:`Graph`, loaded when asked for) words the issues of an invalid document and
gives the JSON Schema. A test keeps both back ends in agreement.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from mlf_spec._internal.lean_dataclass import dataclass
from mlf_spec._records import Issue, json_path, load_json, raise_issues, validate
from mlf_spec.errors import ValidationError

if TYPE_CHECKING:
    from mlf_spec.generated.graph_json_models import Graph  # noqa: F401  # the pydantic model, loaded lazily (__getattr__)

_SIZE_RE = re.compile(r"^[a-zA-Z]+([0-9]+)$")


@dataclass
class GraphDocument:
    """A parsed and validated graph: ``model`` (typed: the plain records of
    ``generated.graph_json_plain``, attribute names as in the pydantic :data:`Graph`),
    ``data`` (plain JSON, key order kept), ``text`` (the text read, verbatim) and ``unknown``
    (paths of unknown keys, lenient mode)."""

    model: Any
    data: dict[str, Any]
    text: str | None = None
    unknown: tuple[str, ...] = ()

    @property
    def num_entries(self) -> int:
        """Number of node outputs (entries): ``node_row_ptr[-1]``."""
        return self.model.node_row_ptr[-1] if self.model.node_row_ptr else 0

    def entry_id(self, node: int, index: int = 0) -> int:
        """Entry id of output ``index`` of node ``node``."""
        return self.model.node_row_ptr[node] + index

    def input_nodes(self) -> list[Any]:
        """The nodes listed in ``arg_nodes``, in order."""
        return [self.model.nodes[i] for i in self.model.arg_nodes if 0 <= i < len(self.model.nodes)]

    def input_names(self) -> list[str]:
        """Names of the input nodes (model inputs and bound parameters)."""
        return [n.name for n in self.input_nodes()]

    def model_input_names(self, params: Collection[str]) -> list[str]:
        """The input nodes that are model inputs: those no parameter binds (``params``: the
        names of the module's .params file, which names the constants)."""
        return [n for n in self.input_names() if n not in params]

    def parameter_names(self, params: Collection[str]) -> list[str]:
        """The input nodes bound to a parameter of ``params`` (constants), in arg_nodes order."""
        return [n for n in self.input_names() if n in params]

    def entry_shape(self, eid: int) -> list[int]:
        """Shape of entry ``eid``."""
        return list(self.model.attrs.shape[1][eid])

    def entry_dtype(self, eid: int) -> str:
        """dtype of entry ``eid``."""
        return self.model.attrs.dltype[1][eid]

    def input_entry(self, name: str) -> int | None:
        """Entry id of the input node called ``name``."""
        for i in self.model.arg_nodes:
            if 0 <= i < len(self.model.nodes) and self.model.nodes[i].name == name:
                return self.entry_id(i)
        return None

    def output_entries(self) -> list[int]:
        """Entry ids of the graph outputs (``heads``), in order."""
        return [self.entry_id(h[0], h[1]) for h in self.model.heads]


def parse(text: bytes | str, *, lenient: bool = False, file: str | None = None) -> GraphDocument:
    """Parse and validate graph JSON. Raises ValidationError (with the JSON path)."""
    data = load_json(text, file, "graph JSON")
    if not isinstance(data, dict):
        raise ValidationError(f"graph JSON is a {type(data).__name__}, not an object", file=file)
    model, issues = _validate(data, lenient)
    errors = [i for i in issues if i.kind != "unknown-key" or not lenient]
    if model is None or errors:
        raise_issues(errors or issues, file, "not a valid GraphExecutor JSON")
    raw = text if isinstance(text, str) else bytes(text).decode("utf-8")
    return GraphDocument(model, data, raw, tuple(i.path for i in issues if i.kind == "unknown-key"))


def check_document(data: Any) -> tuple[GraphDocument | None, list[Issue]]:
    """Every schema issue of parsed graph JSON (unknown keys reported, not fatal)."""
    if not isinstance(data, dict):
        return None, [Issue("", f"graph JSON is a {type(data).__name__}, not an object")]
    model, issues = _validate(data, True)
    if model is None:
        return None, issues
    return GraphDocument(model, data, None, tuple(i.path for i in issues if i.kind == "unknown-key")), issues


def _validate(data: dict[str, Any], lenient: bool) -> tuple[Any, list[Issue]]:
    """(typed graph or None, issues): the plain records when the plain validators find no
    issue (unknown keys aside, when ``lenient``), else the pydantic model's verdict and words."""
    from mlf_spec.generated import graph_json_plain as _plain

    found = _plain.validate(data)
    if not found or (lenient and all(message == "unknown key" for _, message in found)):
        return _plain.typed(data), [Issue(json_path(path), "unknown key", "unknown-key") for path, _ in found]
    return validate(_models().Graph, data, lenient=lenient)


def _models() -> Any:
    from mlf_spec.generated import graph_json_models

    return graph_json_models


def __getattr__(name: str) -> Any:
    if name == "Graph":  # the pydantic model, loaded when asked for
        return _models().Graph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _bits(dtype: str) -> int | None:
    m = _SIZE_RE.match(dtype)
    return int(m.group(1)) if m else None


def nbytes(shape: list[int], dtype: str) -> int | None:
    """``(prod(shape) * bits + 7) // 8`` with bits from the dtype's trailing digits, as TVM's
    MLF writer computed sizes; None for a dtype without a width."""
    bits = _bits(dtype)
    if bits is None:
        return None
    n = 1
    for s in shape:
        n *= s
    return (n * bits + 7) // 8


#: the C integer types the GraphExecutor reads storage ids / device indices (int), extents
#: (int64_t) and control dependencies (uint32_t) into (graph_executor.h)
_INT32_MAX, _INT64_MAX, _UINT32_MAX = (1 << 31) - 1, (1 << 63) - 1, (1 << 32) - 1


def structure_issues(g: GraphDocument) -> list[Issue]:
    """Inconsistencies between the parts of a graph (what GraphExecutor relies on)."""
    m = g.model
    out: list[Issue] = []
    nn = len(m.nodes)
    if len(m.node_row_ptr) != nn + 1:
        out.append(Issue("node_row_ptr", f"has {len(m.node_row_ptr)} elements, nodes + 1 = {nn + 1}"))
        return out
    if m.node_row_ptr and m.node_row_ptr[0] != 0:
        out.append(Issue("node_row_ptr[0]", "must be 0"))
    for i, node in enumerate(m.nodes):
        step = m.node_row_ptr[i + 1] - m.node_row_ptr[i]
        want = int(node.attrs.num_outputs) if node.op == "tvm_op" else 1
        if step != want:
            out.append(Issue(f"node_row_ptr[{i + 1}]", f"node {i} has {want} output(s) but node_row_ptr steps by {step}"))
    expected_args = [i for i, node in enumerate(m.nodes) if node.op == "null"]
    if list(m.arg_nodes) != expected_args:
        out.append(Issue("arg_nodes", f"must list the null nodes in order: {expected_args}"))
    n = m.node_row_ptr[-1]
    for key in ("dltype", "storage_id", "shape", "device_index", "storage_scope"):
        attr = getattr(m.attrs, key)
        if attr is not None and len(attr[1]) != n:
            out.append(Issue(f"attrs.{key}", f"has {len(attr[1])} elements for {n} entries"))
    if any(s < 0 for s in m.attrs.storage_id[1]):
        out.append(Issue("attrs.storage_id", "storage ids must not be negative"))
    if any(s > _INT32_MAX for s in m.attrs.storage_id[1]):
        out.append(Issue("attrs.storage_id", "storage ids must fit a C int (at most 2^31 - 1): the GraphExecutor reads them so"))
    if m.attrs.device_index is not None and any(not -_INT32_MAX - 1 <= d <= _INT32_MAX for d in m.attrs.device_index[1]):
        out.append(Issue("attrs.device_index", "device indices must fit a C int: the GraphExecutor reads them so"))
    for eid, shape in enumerate(m.attrs.shape[1]):
        if any(d < 0 for d in shape):
            out.append(Issue(f"attrs.shape[1][{eid}]", "negative extent"))
        if any(d > _INT64_MAX for d in shape):
            out.append(Issue(f"attrs.shape[1][{eid}]", "an extent past 2^63 - 1 (the GraphExecutor reads int64_t)"))
    for i, node in enumerate(m.nodes):
        if any(d > _UINT32_MAX for d in getattr(node, "control_deps", None) or ()):
            out.append(Issue(f"nodes[{i}].control_deps", "past 2^32 - 1 (the GraphExecutor reads uint32_t)"))
    for i, node in enumerate(m.nodes):
        for j, e in enumerate(node.inputs):
            if not (0 <= e[0] < i) or not (0 <= e[1] < m.node_row_ptr[e[0] + 1] - m.node_row_ptr[e[0]]):
                out.append(Issue(f"nodes[{i}].inputs[{j}]", f"refers to no output of an earlier node: {list(e)}"))
        if node.op == "tvm_op" and int(node.attrs.num_inputs) != len(node.inputs):
            out.append(Issue(f"nodes[{i}].attrs.num_inputs", f"is {node.attrs.num_inputs} for {len(node.inputs)} inputs"))
    for j, h in enumerate(m.heads):
        if not (0 <= h[0] < nn) or not (0 <= h[1] < m.node_row_ptr[h[0] + 1] - m.node_row_ptr[h[0]]):
            out.append(Issue(f"heads[{j}]", f"refers to no node output: {list(h)}"))
    return out


def sid_map(g: GraphDocument) -> list[dict[str, Any]]:
    """The storage list TVM's MLF writer derived from a graph (``_build_sid_map``, unchanged
    from ee052dd642 to f7eed214d1): storage ids in order of first use, the size taken from
    ``attrs.shape[1][storage_id]`` and ``attrs.dltype[1][storage_id]`` (indexed by storage id,
    a latent bug of the writer, reproduced), and ``input_binding`` when the entry index is in
    ``arg_nodes`` (the node at that *entry* index, as the writer did). Raises ValidationError
    when the writer would have failed."""
    m = g.model
    seen: set[int] = set()
    out: list[dict[str, Any]] = []
    args = set(m.arg_nodes)
    shapes, dtypes = m.attrs.shape[1], m.attrs.dltype[1]
    for node_id, sid in enumerate(m.attrs.storage_id[1]):
        if sid in seen:
            continue
        seen.add(sid)
        if not (0 <= sid < len(shapes) and sid < len(dtypes)):
            raise ValidationError(f"storage id {sid} indexes no shape/dltype (TVM's writer would fail)",
                                  field=f"attrs.storage_id[1][{node_id}]")
        size = nbytes(list(shapes[sid]), dtypes[sid])
        if size is None:
            raise ValidationError(f"dtype {dtypes[sid]!r} has no bit width", field=f"attrs.dltype[1][{sid}]")
        entry: dict[str, Any] = {"storage_id": sid, "size_bytes": size}
        if node_id in args:
            if node_id >= len(m.nodes):
                raise ValidationError(f"arg node {node_id} does not exist", field="arg_nodes")
            entry["input_binding"] = m.nodes[node_id].name
        out.append(entry)
    return out


# ----------------------------------------------------------------- dmlc writer


def _escape(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t") \
        .replace('"', '\\"') + '"'


def _matches(path: tuple, pattern: tuple) -> bool:
    return len(path) == len(pattern) and all(p == "*" or p == q for p, q in zip(pattern, path))


def dumps(data: Any) -> str:
    """Graph JSON text as dmlc's JSONWriter writes it (see the module doc). ``data`` is
    plain JSON data or a :class:`GraphDocument` (whose ``data`` keeps the key order)."""
    if isinstance(data, GraphDocument):
        data = data.data
    multiline = [tuple(p) for p in _models().MULTILINE_PATHS]
    out: list[str] = []

    def write(v: Any, path: tuple, depth: int) -> None:
        if isinstance(v, dict):
            out.append("{")
            for i, (k, x) in enumerate(v.items()):
                out.append((", " if i else "") + "\n" + "  " * (depth + 1) + _escape(str(k)) + ": ")
                write(x, path + (k,), depth + 1)
            if v:
                out.append("\n" + "  " * depth)
            out.append("}")
        elif isinstance(v, (list, tuple)):
            pod = all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            multi = not pod or len(v) > 10 or any(_matches(path, p) for p in multiline)
            out.append("[")
            for i, x in enumerate(v):
                out.append(", " if i else "")
                if multi:
                    out.append("\n" + "  " * (depth + 1))
                write(x, path + (i,), depth + 1)
            if multi and v:
                out.append("\n" + "  " * depth)
            out.append("]")
        elif isinstance(v, str):
            out.append(_escape(v))
        elif isinstance(v, bool):
            out.append("true" if v else "false")
        elif v is None:
            out.append("null")
        else:
            out.append(repr(v))

    write(data, (), 0)
    return "".join(out)


__all__ = ["Graph", "GraphDocument", "check_document", "dumps", "nbytes", "parse", "sid_map", "structure_issues"]
