"""MLonMCU's MLF reading under test (``--adapter mlonmcu``): the functions MLonMCU (PyPI
``mlonmcu``, mlonmcu/flow/tvm/backend/) uses to take what it needs from the Model Library
Format archive tvmc gives it, called directly (they use nothing of ``self``):

* ``mlonmcu.setup.utils.extract(archive, dest)``: the archive's extraction (``tarfile``'s
  ``extractall`` with no filter), as ``Artifact.export(..., extract=True)`` does it;
* ``TVMAOTBackend.get_workspace_size_from_metadata(metadata)``: the workspace the AOT
  wrapper's arena is sized with;
* ``TVMCGBackend.get_max_workspace_size_from_metadata(metadata)``: the largest operator
  workspace, handed to utvmcg;
* ``TVMBackend.get_graph_and_params_from_mlf(path)``: the graph JSON (read as text) and the
  params bytes a GraphExecutor deployment embeds.

MLonMCU is a partial reader: it takes these facts and ignores the rest of the document. Its
handshake says so (``reads: [facts]``: only the readings' ``facts`` are compared, see
canonical_metadata's canonical_module_facts; ``not_checked: [invalid_document]``: it does not
claim to refuse documents that depart from their version's model). metadata.json is read the
way MLonMCU reads it (``json.load`` of the file opened as text); the functions' results become
the facts of module ``default`` (the only module of a version 7 document MLonMCU knows; before
version 7 the document's one module, under its model_name); a function that raises is
MLonMCU's refusal of the input, except ``FileNotFoundError`` from the graph reading, which
says that MLonMCU finds no GraphExecutor files (``graph_executor: null``).

Extraction is confined: the archive is extracted below a directory nested a few levels inside
a temporary one. Members that would be written (or linked, or created as devices) outside the
destination are found before extracting: if they would stay inside the temporary directory
MLonMCU's extraction runs and what it wrote outside its destination is seen; otherwise it is
not run. Either way MLonMCU did not refuse the archive (its extraction has no filter on this
Python), so the answer is an acceptance with no facts: whatever MLonMCU does next, the files
are already out. Isolated: each request runs in a forked child.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import traceback
from pathlib import Path
from typing import Any

from mlf_spec.generated.formats import PROTOCOL

from .base import Adapter, Rejected

#: how deep the destination lies inside the temporary directory (a `../` member of up to this
#: many levels is extracted for real, inside the temporary directory, and seen)
DEPTH = 3


def _refusal(exc: BaseException) -> Rejected:
    """MLonMCU's exception as a refusal naming where in MLonMCU it was raised."""
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if f"{os.sep}mlonmcu{os.sep}" in frame.filename:
            where = f" ({frame.filename.rsplit(os.sep + 'mlonmcu' + os.sep, 1)[1]}:{frame.lineno})"
            break
    return Rejected(f"{type(exc).__name__}: {str(exc)[:300]}{where}")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def escapes(archive: str, dest: str) -> list[tuple[str, bool]]:
    """The members that ``extractall(dest)`` without a filter would put outside ``dest``: (what,
    whether it is a plain file or directory inside ``dest``'s parent chain that can be extracted
    and seen). Links leading outside ``dest``, writes through a link member, and device nodes
    count (the adapter does not create device nodes)."""
    out: list[tuple[str, bool]] = []
    links: set[str] = set()
    root = os.path.dirname(os.path.dirname(dest))
    with tarfile.open(archive) as tf:
        for m in tf.getmembers():
            target = os.path.normpath(os.path.join(dest, m.name))
            rel = os.path.relpath(target, dest)
            parents = {os.path.normpath(os.path.join(dest, *rel.split(os.sep)[:i])) for i in range(1, rel.count(os.sep) + 1)}
            if parents & links:
                out.append((f"{m.name} is written through a link member", False))
            elif m.ischr() or m.isblk():
                out.append((f"{m.name} is a device node", False))
            elif not _inside(target, dest):
                out.append((f"{m.name} is written to {target}", (m.isfile() or m.isdir()) and _inside(target, root)))
            elif m.issym() or m.islnk():
                base = os.path.dirname(target) if m.issym() else dest
                pointee = os.path.normpath(os.path.join(base, m.linkname))
                if not _inside(pointee, dest):
                    out.append((f"{m.name} links to {m.linkname}", False))
                links.add(target)
    return out


class MlonmcuAdapter(Adapter):
    """MLonMCU's MLF functions (mlonmcu.flow.tvm.backend), called on the vectors."""

    name = "mlonmcu"
    isolated = True

    def prepare(self) -> None:
        """Import MLonMCU once (``mlonmcu.target`` first: the backends import it circularly)."""
        _functions()

    def info(self) -> dict[str, Any]:
        """metadata.json and archives, compared on their facts."""
        import mlonmcu

        partial = {"roles": ["decode"], "reads": ["facts"], "not_checked": ["invalid_document"]}
        return {"protocol": PROTOCOL, "name": "mlonmcu", "version": mlonmcu.__version__, "serve": True,
                "formats": [{"format": "mlf-metadata", **partial}, {"format": "mlf-archive", **partial}]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """The facts MLonMCU takes from a metadata.json or an archive."""
        if format not in ("mlf-metadata", "mlf-archive"):
            raise Rejected(f"mlonmcu does not read {format}")
        work = tempfile.mkdtemp(prefix="mlf-spec-mlonmcu-")
        try:
            if format == "mlf-metadata":
                path = Path(work) / "metadata.json"
                path.write_bytes(data)
                return {"format": format, "facts": _metadata_facts(path)}
            return {"format": format, "facts": _archive_facts(data, work)}
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _functions() -> dict[str, Any]:
    import mlonmcu.target  # noqa: F401  (must come first)
    from mlonmcu.flow.tvm.backend.backend import TVMBackend
    from mlonmcu.flow.tvm.backend.tvmaot import TVMAOTBackend
    from mlonmcu.flow.tvm.backend.tvmcg import TVMCGBackend
    from mlonmcu.setup import utils

    return {"extract": utils.extract, "workspace": TVMAOTBackend.get_workspace_size_from_metadata,
            "max_workspace": TVMCGBackend.get_max_workspace_size_from_metadata,
            "graph_and_params": TVMBackend.get_graph_and_params_from_mlf}


def _metadata_facts(path: Path) -> dict[str, Any]:
    """The workspace facts of the module MLonMCU reads, from metadata.json read as MLonMCU
    reads it: ``default`` of a version 7 document; a document of an earlier version holds one
    module, which MLonMCU reads whatever it is called, so the facts go under its model_name."""
    fn = _functions()
    try:
        with open(path) as handle:
            metadata = json.load(handle)
        facts = {"workspace_size_bytes": fn["workspace"](None, metadata),
                 "operator_workspace_max": fn["max_workspace"](None, metadata)}
    except Exception as exc:  # MLonMCU cannot take its facts from this document
        raise _refusal(exc) from None
    name = "default" if "modules" in metadata else metadata.get("model_name", "default")
    return {name if isinstance(name, str) else "default": facts}


def _archive_facts(data: bytes, work: str) -> dict[str, Any]:
    fn = _functions()
    archive = os.path.join(work, "model.tar")
    with open(archive, "wb") as f:
        f.write(data)
    dest = os.path.join(work, *["d"] * DEPTH, "mlf")
    os.makedirs(dest)
    try:
        outside = escapes(archive, dest)
    except (tarfile.TarError, OSError, EOFError) as exc:
        outside = []  # not a readable tar: MLonMCU's extraction says so below
        del exc
    if outside and not all(ok for _, ok in outside):
        return {}  # MLonMCU would write outside its destination: not run, see the module doc
    try:
        fn["extract"](archive, dest)
    except Exception as exc:
        raise _refusal(exc) from None
    if outside:
        return {}  # extracted, and files landed outside the destination
    facts = _metadata_facts(Path(dest) / "metadata.json")
    module = next(iter(facts.values()))
    try:
        graph, params = fn["graph_and_params"](None, dest)
    except FileNotFoundError:
        module["graph_executor"] = None
    except Exception as exc:
        raise _refusal(exc) from None
    else:
        module["graph_executor"] = {"graph_sha256": hashlib.sha256(graph.encode("utf-8")).hexdigest(),
                                    "params_sha256": hashlib.sha256(params).hexdigest()}
    return facts


ADAPTER = MlonmcuAdapter
