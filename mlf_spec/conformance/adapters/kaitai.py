"""The parsers Kaitai Struct generates from the exported .ksy files, under test
(``--adapter kaitai-python``, ``--adapter kaitai-js``): .params and both module-blob layouts,
decode only. No Python code of mlf-spec reads the bytes: the generated parser does, and its
objects are turned into the canonical reading.

* **kaitai-python**: the Python parsers, in process (``kaitaistruct`` >= 0.11), from
  ``$MLF_SPEC_KAITAI_PYTHON``.
* **kaitai-js**: the JavaScript parsers, parsed in one persistent Node.js process
  (``kaitai_js.cjs`` next to this file), from ``$MLF_SPEC_KAITAI_JS``, with the ``kaitai-struct``
  npm runtime found under ``$MLF_SPEC_KAITAI_NODE_MODULES`` (a directory holding
  ``node_modules/``).

The parsers must be compiled in the compiler's debug mode (npm ``compile(lang, spec, importer,
true)``; the Java CLI's ``--read-pos``): a legacy blob's payloads are read in place, with no
length, and only the recorded positions say which bytes a payload took. Both adapters declare
no dialect or era restriction: the generated types take ``tvm_minor`` and read every version.

From the parser's objects (mlf_spec.kaitai.reading turns them into the spec's value tree):
.params: every record with its name bytes, DLDataType, the dtype spelling the parser computes
for the dialect asked (the ``spelling`` instance), shape, device, reserved words and data; blobs:
every module's kind, payload bytes and parsed payload fields, and the import tree. A refusal
names mlf-spec's error class where the .ksy field that failed names it (``-mlf-error``).
Known failures (kaitai-*.known-failures): the rules the .ksy cannot state
(generated/docs/kaitai.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError
from mlf_spec.generated.formats import PROTOCOL

from .. import canonical
from .base import Adapter, Rejected

JS_ENV = "MLF_SPEC_KAITAI_JS"
NODE_MODULES_ENV = "MLF_SPEC_KAITAI_NODE_MODULES"
JS_SCRIPT = Path(__file__).with_name("kaitai_js.cjs")


def _info(name: str, version: str) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "name": name, "version": version, "serve": True,
            "formats": [{"format": "params", "roles": ["decode"]}, {"format": "blob", "roles": ["decode"]}]}


def _error_class(mlf_error: str | None) -> str | None:
    """The kit's error class for an mlf_spec.errors class name."""
    if not mlf_error:
        return None
    from mlf_spec import errors

    cls = getattr(errors, mlf_error, None)
    if not (isinstance(cls, type) and issubclass(cls, MlfError)):
        return None
    return canonical.error_class(cls(mlf_error))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def params_reading(tree: dict[str, Any], dump: dict[str, Any]) -> dict[str, Any]:
    """The canonical .params reading of a parser's value tree (``tree``) and neutral dump
    (``dump``, for the spelling the parser computed)."""
    tensors = []
    for i, (name, rec) in enumerate(zip(tree["names"], tree["arrays"])):
        raw = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else bytes(name)
        text = raw.decode("utf-8", "replace")
        entry: dict[str, Any] = {"name": text}
        if text.encode("utf-8") != raw:
            entry["name_hex"] = raw.hex()
        spelling = dump["arrays"][i]["dtype"].get("$spelling")
        if spelling is not None:
            entry["dtype"] = spelling
        data = bytes(rec["data"])
        entry.update(code=rec["dtype"]["code"], bits=rec["dtype"]["bits"], lanes=rec["dtype"]["lanes"],
                     shape=list(rec["shape"]), nbytes=len(data), sha256=_sha(data),
                     device_type=rec["device"]["device_type"], device_id=rec["device"]["device_id"],
                     reserved=rec["reserved"])
        tensors.append(entry)
    return {"format": "params", "reserved": tree["reserved"], "tensors": tensors}


def blob_reading(spec: str, tree: dict[str, Any], dump: dict[str, Any]) -> dict[str, Any]:
    """The canonical blob reading of a parser's value tree and neutral dump (``$payload``:
    the bytes each payload took, from the positions the debug build records)."""
    from mlf_spec.generated import blob_ffi_ir, blob_legacy_ir

    body, raw_body = tree["body"], dump["body"]
    if spec == "blob_ffi":
        entries, raw_entries = body["modules"], raw_body["modules"]
        field = next(f for f in blob_ffi_ir.STRUCTS["ffi_module"]["fields"] if f["name"] == "payload")
        tree_rows: Any = {"row_ptr": list(body["row_ptr"]), "child_indices": list(body["child_indices"])}
    else:
        entries, raw_entries = body["entries"], raw_body["entries"]
        field = next(f for f in blob_legacy_ir.STRUCTS["legacy_entry"]["fields"] if f["name"] == "payload")
        tree_rows = None
        for e in entries:
            if e["kind"] == "_import_tree":
                tree_rows = {"row_ptr": list(e["payload"]["row_ptr"]), "child_indices": list(e["payload"]["child_indices"])}
    modules = []
    for e, raw in zip(entries, raw_entries):
        kind = e["kind"] if isinstance(e["kind"], str) else bytes(e["kind"]).decode("utf-8", "surrogateescape")
        if kind == "_import_tree":
            continue
        index = len(modules)
        if kind == "_lib":
            modules.append({"index": index, "kind": kind, "payload_bytes": 0, "payload_sha256": None, "struct": None,
                            "fields": None})
            continue
        payload = raw.get("_raw_payload", raw.get("$payload"))
        if payload is None:
            raise RuntimeError(f"module {index} ({kind}): the parser recorded no payload position: compile the .ksy "
                               "files in debug mode (--read-pos)")
        struct = field["switch"]["cases"].get(kind, field["switch"].get("default"))
        fields = canonical._payload_fields(struct, e["payload"]) if e["payload"] is not None else None
        modules.append({"index": index, "kind": kind, "payload_bytes": len(payload), "payload_sha256": _sha(payload),
                        "struct": struct, "fields": fields})
    out = {"format": "blob", "layout": "ffi" if spec == "blob_ffi" else "legacy", "modules": modules,
           "import_tree": tree_rows}
    if isinstance(body.get("trailing"), (bytes, bytearray)):
        out["trailing_bytes"] = len(body["trailing"])
    return out


def reading_of(spec: str, dump: dict[str, Any]) -> dict[str, Any]:
    """The canonical reading of a neutral dump of a whole file of ``spec``."""
    import importlib

    from mlf_spec.kaitai import reading, roots

    ir = importlib.import_module(f"mlf_spec.generated.{spec}_ir")
    tree = reading.value_tree(ir.STRUCTS, roots()[spec].struct, dump)
    return params_reading(tree, dump) if spec == "params" else blob_reading(spec, tree, dump)


def annotate(obj: Any, out: Any) -> Any:
    """Add to a neutral dump of Python parser objects what the adapters read besides the
    seq fields: ``$spelling`` (the dtype spelling instance) and ``$payload`` (the bytes a
    payload took, from the debug build's positions)."""
    from kaitaistruct import KaitaiStruct

    if isinstance(obj, KaitaiStruct) and isinstance(out, dict):
        if isinstance(getattr(type(obj), "spelling", None), property):
            out["$spelling"] = obj.spelling
        pos = (getattr(obj, "_debug", None) or {}).get("payload") or {}
        if "start" in pos and "end" in pos and "_raw_payload" not in out:
            out["$payload"] = obj._io._io.getvalue()[pos["start"]:pos["end"]]
        for key, value in list(out.items()):
            if not key.startswith("$"):
                annotate(getattr(obj, key, None), value)
    elif isinstance(obj, list) and isinstance(out, list):
        for o, d in zip(obj, out):
            annotate(o, d)
    return out


def _target(format: str, options: dict[str, str]) -> tuple[str, tuple[int, ...]]:  # noqa: A002
    from mlf_spec.kaitai.testee import spec_and_era

    if format not in ("params", "blob"):
        raise Rejected(f"the Kaitai parsers read params and blob, not {format}")
    return spec_and_era(format, options)


class KaitaiPythonAdapter(Adapter):
    """The generated Python parsers (``$MLF_SPEC_KAITAI_PYTHON``), in process."""

    name = "kaitai-python"

    def __init__(self) -> None:
        self._parsers: Any = None

    def parsers(self) -> Any:
        """The generated parsers (MlfError naming the variable when there are none)."""
        if self._parsers is None:
            from mlf_spec.kaitai.testee import KaitaiTestee

            self._parsers = KaitaiTestee().parsers
        return self._parsers

    def info(self) -> dict[str, Any]:
        """.params and blobs, every dialect and era."""
        import kaitaistruct

        self.parsers()
        return _info("kaitai-struct generated Python parser", f"kaitaistruct {getattr(kaitaistruct, '__version__', '?')}")

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """Parse with the generated parser and read its objects."""
        from mlf_spec.kaitai import reading, roots
        from mlf_spec.kaitai.testee import mlf_error_of

        spec, era = _target(format, options)
        if spec not in roots():
            raise Rejected(f"no .ksy reads {format} ({spec})")
        try:
            obj = self.parsers().parse(spec, bytes(data), era)
        except Exception as exc:  # whatever the generated parser raises is its refusal
            raise Rejected(f"{type(exc).__name__}: {exc}"[:400], _error_class(mlf_error_of(exc))) from None
        return reading_of(spec, annotate(obj, reading.dump(obj)))


class KaitaiJsAdapter(Adapter):
    """The generated JavaScript parsers (``$MLF_SPEC_KAITAI_JS``), in one Node.js process."""

    name = "kaitai-js"
    timeout = 60.0

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        js, modules = os.environ.get(JS_ENV), os.environ.get(NODE_MODULES_ENV)
        if not js or not modules:
            raise MlfError(f"the kaitai-js adapter needs the generated JavaScript parsers (compiled in debug mode) in "
                           f"${JS_ENV} and the kaitai-struct npm runtime under ${NODE_MODULES_ENV}/node_modules")
        node = shutil.which("node")
        if node is None:
            raise MlfError("the kaitai-js adapter needs Node.js (node >= 18) on PATH")
        import yaml

        from mlf_spec.kaitai import ksy_files

        specs = {name.removesuffix(".ksy"): yaml.safe_load(data) for name, data in ksy_files().items()}
        proc = subprocess.Popen([node, str(JS_SCRIPT), modules, js], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"specs": specs}) + "\n").encode())
        proc.stdin.flush()
        return proc

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (BrokenPipeError, OSError):
                line = b""
            if not line:
                self._proc = None
                raise RuntimeError(f"the Node.js parser process ended (exit status {proc.poll()})")
            return json.loads(line)

    def info(self) -> dict[str, Any]:
        """.params and blobs, every dialect and era."""
        answer = self._ask({"op": "version"})
        return _info("kaitai-struct generated JavaScript parser", f"kaitai-struct (npm) {answer.get('version', '?')}")

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """Parse in Node.js with the generated parser and read its objects."""
        from mlf_spec.kaitai import reading, roots, tvm_minor

        spec, era = _target(format, options)
        root = roots()[spec]
        answer = self._ask({"op": "parse", "root": root.ksy_id, "tvm_minor": tvm_minor(era),
                            "data": base64.b64encode(bytes(data)).decode("ascii")})
        if not answer["ok"]:
            err = answer["error"]
            raise Rejected(f"{err.get('name')}: {err.get('message')}"[:400])
        return reading_of(spec, reading.from_json(answer["tree"]))

    def close(self) -> None:
        """Stop the Node.js process."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


__all__ = ["KaitaiJsAdapter", "KaitaiPythonAdapter", "annotate", "blob_reading", "params_reading", "reading_of"]
