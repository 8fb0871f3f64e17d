"""Generated cases for checking the verdict rules against real TVM readers.

Every case is an artifact written by mlf-spec (a .params file, or a library compiled from
the C source mlf-spec writes for a blob) with the TVM version that is taken to have written
it, and what that writer meant: per tensor its dtype spelling, shape, data and layout; per
blob the module tree. :func:`run` loads every case in the given Python (tests/support/tvm_probe.py,
one forked process per case), :func:`observe` turns what TVM made of it into a verdict
class, and the tests compare it with ``mlf-spec ... check --tvm``'s verdict.

Observed classes: ``crashes`` (the process died, or the loaded tensor's allocation is
smaller than the bytes the loader copied into it: heap corruption seen directly with
malloc_usable_size), ``rejects`` (the load raised, or a loaded tensor cannot be used at all:
both its ``.dtype`` and its ``.numpy()`` raise, so every use fails at first use), ``misreads`` (a name, dtype, shape,
value or module tree differs from the writer's meaning), ``loads``, and ``loads?`` (loads
as far as TVM lets one see: a 1-bit or 6-bit tensor's values, which ``.numpy()`` does not
unpack, or a vector's uninitialised lanes). Cases whose verdict depends only on what
cannot be seen are counted apart, not compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mlf_spec.generated.params_fast import new_params_file, write_params_file
from mlf_spec.generated.tensor_fast import new_tensor_record

from mlf_spec import blob
from mlf_spec.params import dtypes as dt

from . import tvm_artifacts as ta

PROBE = Path(__file__).with_name("tvm_probe.py")
#: writer version -> its dialect (one writer per dialect from 0.13 on)
WRITERS = ("0.16", "0.20", "0.22", "0.25", "0.27")
RENAMES = {"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}
NUMPY_TYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
               "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e3m4", "float8_e4m3", "float8_e4m3fnuz",
               "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu")
SUBBYTE = ((0, 4), (1, 4), (17, 4), (8, 4), (15, 6), (16, 6), (0, 1), (1, 1), (6, 1), (0, 2), (2, 4))
SUBBYTE_SIZES = (7, 24, 40, 300)
#: the sub-byte types whose .numpy() TVM unpacks (0.25 to 0.27): their values can be compared
UNPACKED = {(0, 4), (17, 4)}


@dataclass
class Meaning:
    """What the writer meant by one tensor."""

    name: str
    spelling: str | None
    shape: tuple[int, ...]
    code: int
    bits: int
    lanes: int
    data: bytes  # the intended data bytes (more than the file holds when it is cut short)
    layout: str  # "bytes" or "packed"
    numpy: str | None  # the NumPy type of the writer's reading, if any


@dataclass
class Case:
    """One artifact, who wrote it and what they meant."""

    id: str
    kind: str  # "params" or "library"
    data: bytes
    writer: str
    tensors: list[Meaning] = field(default_factory=list)
    tree: Any = None  # library: the expected module tree (kinds)
    path: str = ""


# ------------------------------------------------------------------------------ .params


def _record(m: Meaning, *, stored: bytes | None = None, **over: Any) -> tuple[Any, bytes]:
    data = m.data if stored is None else stored
    rec = new_tensor_record(dtype_code=m.code, dtype_bits=m.bits, dtype_lanes=m.lanes, shape=m.shape, **over)
    return rec, data


def write_params(items: list[tuple[Any, bytes]], names: list[str], *, count: int | None = None, reserved: int = 0,
                 trailing: bytes = b"", cut: int = 0) -> bytes:
    """A .params file from tensor records and their data, through the generated writer."""
    out: list[Any] = []
    datas = iter([d for _, d in items])
    raw_names = [n.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape") for n in names]
    write_params_file(out.append, new_params_file(names=raw_names, arrays=[r for r, _ in items], reserved=reserved,
                                                  count=count), lambda _f, _r: next(datas))
    data = b"".join(bytes(x) for x in out) + trailing
    return data[: len(data) - cut] if cut else data


def _meaning(name: str, writer: str, code: int, bits: int, lanes: int, shape: tuple[int, ...], data: bytes) -> Meaning:
    d = dt.dialect(writer)
    t = dt.lookup(d, code, bits, lanes)
    spelling = RENAMES.get(t.name, t.name) if t.known else None
    return Meaning(name, spelling, shape, code, bits, lanes, data, dt.layout(d, code, bits),
                   t.numpy.name if t.numpy is not None else None)


def _random_bytes(rng: np.random.Generator, n: int, dtype: str | None = None) -> bytes:
    raw = rng.integers(1, 256, n, dtype=np.uint8)
    if dtype == "bool":
        raw = rng.integers(0, 2, n, dtype=np.uint8)
        raw[:1] = 1
    return raw.tobytes()


def _subbyte_data(rng: np.random.Generator, layout: str, bits: int, n: int) -> bytes:
    """Data whose one-per-byte and packed readings differ: codes in the low bits, one per byte,
    or packed MSB-first (TVM's convention) followed by the zeros 0.27 reads past its allocation."""
    mask = (1 << bits) - 1
    for _ in range(100):
        codes = rng.integers(0, mask + 1, n, dtype=np.uint8)
        codes[0] = mask  # the top code: not the same in both readings
        if layout == "bytes":
            data = codes.tobytes()
            alt = ta.unpack_subbyte(data, bits, n) if bits in (1, 2, 4) else None
        else:
            packed = ta.pack_subbyte(codes, bits)
            data = packed + bytes(n * -(-bits // 8) - len(packed))
            alt = np.frombuffer(data, np.uint8)[:n] & mask
        if alt is None or not np.array_equal(np.asarray(alt, np.uint8), codes):
            return data
    raise AssertionError("no distinguishing data")


def params_cases(seed: int = 0) -> list[Case]:
    """The .params cases: NumPy dtypes, sub-byte and vector dtypes by every writer dialect,
    then structural and code cases."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for writer in WRITERS:
        for name in NUMPY_TYPES:
            try:
                np_type = np.dtype(name) if name in np.sctypeDict else np.dtype(getattr(__import__("ml_dtypes"), name))
                code, bits, lanes = dt.from_numpy(np_type, dt.dialect(writer))
            except Exception:  # noqa: BLE001 - not writable in this dialect or not in ml_dtypes
                continue
            shapes = [(5,)] if name not in ("float32", "bool", "int8") else [(), (5,), (2, 3), (0, 4)]
            for shape in shapes:
                n = int(np.prod(shape)) if shape else 1
                m = _meaning("t", writer, code, bits, lanes, shape, _random_bytes(rng, n * np_type.itemsize, name))
                cases.append(Case(f"{writer}-{name}-{'x'.join(map(str, shape)) or 'scalar'}", "params",
                                  write_params([_record(m)], ["t"]), writer, [m]))
        for code, bits in SUBBYTE:
            d = dt.dialect(writer)
            if not dt.writable(d, code, bits):
                continue
            for n in SUBBYTE_SIZES:
                lay = dt.layout(d, code, bits)
                m = _meaning("s", writer, code, bits, 1, (n,), _subbyte_data(rng, lay, bits, n))
                cases.append(Case(f"{writer}-sub-{code}-{bits}-n{n}", "params", write_params([_record(m)], ["s"]),
                                  writer, [m]))
        for code, bits, lanes, n in ((2, 32, 4, 3), (0, 8, 2, 5), (2, 32, 0, 4), (2, 32, 0, 16), (2, 32, 24, 2),
                                     (0, 8, 0x8000, 2), (1, 8, 64, 2)):
            m = _meaning("v", writer, code, bits, lanes, (n,), _random_bytes(rng, n * -(-bits // 8)))
            cases.append(Case(f"{writer}-vec-{code}-{bits}x{lanes}-n{n}", "params", write_params([_record(m)], ["v"]),
                              writer, [m]))
    cases += structural_cases(rng)
    cases += random_cases(rng)
    return cases


def random_cases(rng: np.random.Generator, n: int = 300) -> list[Case]:
    """Seeded random tensors: any code, width, lanes and shape, any writer, data laid out
    as that writer's dialect stores it, now and then a non-canonical header word."""
    out: list[Case] = []
    for k in range(n):
        writer = str(rng.choice(WRITERS))
        d = dt.dialect(writer)
        code = int(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 17, 18, 40, 129]))
        bits = int(rng.choice([1, 2, 4, 6, 8, 8, 8, 12, 16, 16, 24, 32, 32, 64]))
        lanes = int(rng.choice([1, 1, 1, 1, 1, 2, 4, 0]))
        ndim = int(rng.integers(0, 4))
        shape = tuple(int(rng.integers(0, 6)) for _ in range(ndim))
        numel = int(np.prod(shape)) if shape else 1
        if bits % 8 and lanes == 1 and numel > 0:
            data = _subbyte_data(rng, dt.layout(d, code, bits), bits, numel) if bits < 8 else \
                _random_bytes(rng, numel * -(-bits // 8))
        else:
            data = _random_bytes(rng, numel * -(-bits // 8))
        m = _meaning("r", writer, code, bits, lanes, shape, data)
        over = {}
        if rng.random() < 0.15:
            over["device_id"] = int(rng.integers(1, 5))
        if rng.random() < 0.1:
            over["reserved"] = int(rng.integers(1, 1 << 40))
        out.append(Case(f"{writer}-random-{k}", "params", write_params([_record(m, **over)], ["r"]), writer, [m]))
    return out


def structural_cases(rng: np.random.Generator) -> list[Case]:
    """Cases that break the header, the counts, the names or the data (written as 0.27)."""
    w = "0.27"

    def f32(name: str = "t", shape: tuple[int, ...] = (3,)) -> Meaning:
        n = int(np.prod(shape)) if shape else 1
        return _meaning(name, w, 2, 32, 1, shape, _random_bytes(rng, max(n, 0) * 4))

    out: list[Case] = []

    def add(cid: str, data: bytes, tensors: list[Meaning]) -> None:
        out.append(Case(f"{w}-{cid}", "params", data, w, tensors))

    m = f32()
    for dev in (0, 2, 4, -1):
        add(f"device-type-{dev}", write_params([_record(m, device_type=dev)], ["t"]), [m])
    add("device-id", write_params([_record(m, device_id=7)], ["t"]), [m])
    add("tensor-reserved", write_params([_record(m, reserved=5)], ["t"]), [m])
    add("list-reserved", write_params([_record(m)], ["t"], reserved=9), [m])
    add("trailing", write_params([_record(m)], ["t"], trailing=b"\x01\x02\x03"), [m])
    a, b = f32("d"), f32("d")
    add("duplicate", write_params([_record(a), _record(b)], ["d", "d"]), [a, b])
    e = f32("")
    add("empty-name", write_params([_record(e)], [""]), [e])
    u = f32("\udcff\udcfe")
    add("name-not-utf8", write_params([_record(u)], ["\udcff\udcfe"]), [u])
    x = f32("ünï😀")
    add("name-non-ascii", write_params([_record(x)], ["ünï😀"]), [x])
    add("count-more", write_params([_record(m)], ["t"], count=2), [m])
    add("count-fewer", write_params([_record(m), _record(f32("u"))], ["t", "u"], count=1), [m])
    big = f32("t", (64,))
    add("truncated-partial", write_params([_record(big)], ["t"], cut=100), [big])
    add("truncated-empty", write_params([_record(big)], ["t"], cut=256), [big])
    scalar = f32("t", ())
    add("scalar-no-data", write_params([_record(scalar)], ["t"], cut=4), [scalar])
    add("size-more", write_params([_record(m, data_byte_size=16, stored=m.data + b"\0" * 4)], ["t"]), [m])
    add("size-less", write_params([_record(m, data_byte_size=8, stored=m.data[:8])], ["t"]), [m])
    for shape in ((-2, -3), (0, -5), (-1,), (2, -3)):
        n = max(int(np.prod(shape)), 0)
        mm = _meaning("t", w, 2, 32, 1, shape, _random_bytes(rng, n * 4))
        add(f"shape-{'x'.join(map(str, shape))}", write_params([_record(mm, data_byte_size=n * 4)], ["t"]), [mm])
    over = _meaning("t", w, 1, 8, 1, (2**62 + 1, 4), _random_bytes(rng, 4))
    add("numel-overflow", write_params([_record(over, data_byte_size=4)], ["t"]), [over])
    for shape in ((3, 0), (0,), (0, 4), (2, 0, 3)):
        mm = _meaning("t", w, 0, 8, 1, shape, b"")
        add(f"empty-{'x'.join(map(str, shape))}", write_params([_record(mm)], ["t"]), [mm])
    zero = _meaning("t", w, 2, 0, 1, (3,), b"")
    add("bits-0", write_params([_record(zero)], ["t"]), [zero])
    for code, bits in ((5, 64), (20, 8), (100, 32), (130, 16), (3, 64), (7, 16), (17, 8), (9, 8), (0, 12), (1, 24),
                       (2, 4), (6, 16), (10, 8), (14, 8)):
        mm = _meaning("t", w, code, bits, 1, (4,), _random_bytes(rng, 4 * -(-bits // 8)))
        add(f"code-{code}-{bits}", write_params([_record(mm)], ["t"]), [mm])
    return out


# ------------------------------------------------------------------------------ blobs


def _tree(m: blob.Module, depth: int = 0) -> list:
    """[kind, sorted imports], as tests/support/tvm_probe.py reports a loaded module."""
    if depth > 8:
        return [m.kind, "..."]
    return [m.kind, sorted((_tree(c, depth + 1) for c in m.imports), key=json.dumps)]


def blob_cases() -> list[tuple[str, bytes, str, list]]:
    """(id, blob bytes, symbol, expected tree) for libraries built from mlf-spec's C source."""
    const = blob.new_payload("const_loader", variables=["c"], arrays=[np.ones(3, "float32")], symbols=["f"],
                             const_vars=[["c"]])
    csrc = blob.new_payload("c", code="int unused_fn(void) { return 0; }", fmt="c", func_names=["unused_fn"],
                            const_vars=[])
    static = blob.new_payload("static_library", data=b"\x7fELF not really", func_names=["g"])
    ffi = blob.symbol_for("ffi")
    legacy_const = blob.new_payload("const_loader", format="legacy", era="0.20", variables=["c"],
                                    arrays=[np.ones(3, "float32")], symbols=["f"], const_vars=[["c"]])
    out = []

    def add(cid: str, root: blob.Module, fmt: str = "ffi", era: str | None = None, symbol: str | None = None) -> None:
        data = blob.build(root, format=fmt, era=era)
        out.append((cid, data, symbol or blob.symbol_for(fmt, era), _tree(root)))

    add("const", blob.Module.lib(blob.Module("const_loader", const)))
    add("c-and-static", blob.Module.lib(blob.Module("c", csrc), blob.Module("static_library", static)))
    add("unknown-kind", blob.Module.lib(blob.Module("my_npu", blob.new_payload("my_npu", data=b"\1\2"))))
    add("legacy-dev-mblob", blob.Module.lib(blob.Module("const_loader", legacy_const)), "legacy", "0.20")
    add("legacy-v021-symbol", blob.Module.lib(blob.Module("const_loader", legacy_const)), "legacy", "0.21")
    add("const-root", blob.Module("const_loader", const, [blob.Module.lib()]))
    era06_const = blob.new_payload("const_loader", format="legacy", era="0.6", variables=["c"],
                                   arrays=[np.ones(3, "float32")], symbols=["f"], const_vars=[["c"]])
    add("legacy-era-0.6", blob.Module.lib(blob.Module("const_loader", era06_const)), "legacy", "0.6")
    out += _crafted_blobs(const.to_bytes(), ffi)
    legacy = blob.symbol_for("legacy", "0.20")
    out.append(("legacy-two-libs", _crafted_legacy([0, 1, 1], [1], ["_lib", "_lib"]), legacy, ["_lib", [["_lib", []]]]))
    return out


def _crafted_legacy(row_ptr: list[int], child: list[int], kinds: list[str]) -> bytes:
    """A legacy blob of payload-less entries (_lib): count, the _import_tree entry, the kinds."""
    tree = b"".join(map(_u64, [len(row_ptr), *row_ptr, len(child), *child]))
    body = _u64(len(kinds) + 1) + _u64(12) + b"_import_tree" + tree
    body += b"".join(_u64(len(k)) + k.encode() for k in kinds)
    return _u64(len(body)) + body


def _u64(n: int) -> bytes:
    return n.to_bytes(8, "little")


def _crafted(row_ptr: list[int], child: list[int], mods: list[tuple[str, bytes | None]]) -> bytes:
    body = _u64(len(row_ptr)) + b"".join(map(_u64, row_ptr)) + _u64(len(child)) + b"".join(map(_u64, child))
    for kind, payload in mods:
        body += _u64(len(kind)) + kind.encode()
        if payload is not None:
            body += _u64(len(payload)) + payload
    return _u64(len(body)) + body


def _crafted_blobs(const: bytes, ffi: str) -> list[tuple[str, bytes, str, list]]:
    lib, cl = ("_lib", None), ("const_loader", const)
    return [
        ("two-libs", _crafted([0, 1, 1], [1], [lib, lib]), ffi, ["_lib", [["_lib", []]]]),
        ("unused-children", _crafted([0, 1, 1], [1, 1], [lib, cl]), ffi, ["_lib", [["const_loader", []]]]),
        ("unreachable", _crafted([0, 0, 0], [], [lib, cl]), ffi, ["_lib", []]),
        ("not-monotonic", _crafted([0, 2, 1], [1, 1], [lib, cl]), ffi, ["_lib", [["const_loader", []], ["const_loader", []]]]),
        ("empty-payload", _crafted([0, 1, 1], [1], [lib, ("my_npu", b"")]), ffi, ["_lib", [["my_npu", []]]]),
        ("cycle", _crafted([0, 1, 2], [1, 0], [cl, cl]), ffi, "cycle"),
    ]


# ------------------------------------------------------------------------------ running


def run(python: str, cases: list[Case], workdir: Path, timeout: float = 1800) -> dict[str, dict]:
    """Load every case with ``python`` (a TVM venv's interpreter); results by case id."""
    workdir.mkdir(parents=True, exist_ok=True)
    manifest = []
    for i, c in enumerate(cases):
        if not c.path:
            p = workdir / f"case{i}.params"
            p.write_bytes(c.data)
            c.path = str(p)
        manifest.append({"id": c.id, "kind": c.kind, "path": c.path})
    mpath = workdir / "manifest.json"
    mpath.write_text(json.dumps(manifest))
    env = dict(os.environ, TVM_LOG_DEBUG="0")
    proc = subprocess.run([python, str(PROBE), str(mpath)], capture_output=True, text=True, timeout=timeout, env=env)
    results = {}
    for line in proc.stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        results[r["id"]] = r
    missing = [c.id for c in cases if c.id not in results]
    if missing:
        raise AssertionError(f"the probe gave no result for {len(missing)} cases (e.g. {missing[:3]}); "
                             f"exit {proc.returncode}: {proc.stderr[-800:]}")
    return results


def _norm(name: str | None) -> str | None:
    return RENAMES.get(name, name) if name is not None else None


def _before_021(reader: str | None) -> bool:
    from mlf_spec import versions

    v = versions.parse(reader) if reader else None
    return v is not None and v < (0, 21)


def _spelled_as_meant(m: Meaning, t: dict, reader: str | None) -> bool:
    """The reader's dtype string names the writer's type. Before 0.21, Python's
    DataType.__str__ (what ``.dtype`` shows) calls every 1-bit scalar "bool" and gives a handle
    its width ("handle64"): there the DLDataType the loader holds decides."""
    tvm_name = t.get("dtype")
    if m.spelling is None or tvm_name is None:
        return False
    if _norm(tvm_name) == m.spelling:
        return True
    if _before_021(reader):
        if tvm_name == "bool" and (m.bits, m.lanes) == (1, 1):
            return list(t["dl"]) == [m.code, m.bits, m.lanes] and m.code in (0, 1)
        if tvm_name.startswith("handle") and m.spelling == "handle":
            return list(t["dl"]) == [m.code, m.bits, m.lanes]
    return False


def observe(case: Case, res: dict, reader: str | None = None) -> tuple[str, list[str]]:
    """(class, why) of what TVM ``reader`` made of a case (see the module doc)."""
    if res["status"] == "died":
        return "crashes", [f"process died while loading ({res.get('signal') or res.get('exit')})"]
    if res["status"] == "error":
        return "rejects", [res["error"]]
    if case.kind == "library":
        if case.tree == "cycle":  # a reader that follows the cycle shows it cut at its depth limit
            return ("loads", []) if "..." in json.dumps(res["tree"]) else \
                ("misreads", [f"tree {res['tree']} has no cycle"])
        return ("loads", []) if res["tree"] == case.tree or case.tree is None else \
            ("misreads", [f"tree {res['tree']} != {case.tree}"])
    if "keys_error" in res:
        return "misreads", [f"keys(): {res['keys_error']}"]
    got = res["tensors"]
    why: list[str] = []
    unseen = False
    copied_past = []
    for m in case.tensors:
        t = got.get(m.name)
        if t is None:
            why.append(f"{m.name!r} missing")
            continue
        present = _present(case, m)
        # a live allocation is never 0 bytes usable: 0 means its chunk header was overwritten
        if present and t["usable"] < present:
            copied_past.append(f"{m.name!r}: {present} bytes copied into a {t['usable']}-byte allocation")
    if copied_past:
        return "crashes", copied_past
    if res["status"] == "died-after-load":
        # not while loading and no allocation overrun: .numpy() of an inconsistent tensor died
        why.append(f"the process died in .numpy() ({res.get('signal') or res.get('exit')})")
    unusable = [f"{m.name!r}: .dtype raises {t['dtype_error']!r} and .numpy() raises "
                f"{res.get('numpy', {}).get(m.name, {}).get('numpy_error')!r}"
                for m in case.tensors if (t := got.get(m.name)) is not None and "dtype_error" in t
                and "numpy_error" in res.get("numpy", {}).get(m.name, {})]
    if unusable:  # loaded, but no use of the tensor works: a refusal at first use, not a silent misreading
        return "rejects", unusable
    names = [m.name for m in case.tensors]
    if len(set(names)) != len(names):
        why.append("a duplicate name: TVM keeps one tensor")
    for m in case.tensors:
        t = got.get(m.name)
        if t is None:
            continue
        tvm_name = t.get("dtype")
        if not _spelled_as_meant(m, t, reader):
            why.append(f"dtype {tvm_name or t.get('dtype_error')!r}, meant {m.spelling!r}")
        if tuple(t["shape"]) != m.shape:
            why.append(f"shape {t['shape']}, meant {list(m.shape)}")
        verdict = _values(m, {**t, **res.get("numpy", {}).get(m.name, {})}, _present(case, m), _before_021(reader))
        if verdict == "differs":
            why.append("values differ")
        elif verdict == "unseen":
            unseen = True
    if why:
        return "misreads", why
    return ("loads?" if unseen else "loads"), []


def _present(case: Case, m: Meaning) -> int:
    """Data bytes the loader copies for tensor m (fewer when the file is cut short)."""
    from mlf_spec.params import check as pcheck

    try:
        report = pcheck._scan(memoryview(case.data), len(case.data))
    except Exception:  # noqa: BLE001
        return 0
    for r in report.records:
        if r.name == m.name:
            return max(0, min(r.present, r.nbytes))
    return 0


def _values(m: Meaning, t: dict, present: int, bytewise: bool = False) -> str:
    """"same", "differs" or "unseen": TVM's values against the writer's. ``bytewise``: the
    reader (before 0.21) holds a sub-byte tensor one element per byte, as its file does."""
    numel = int(np.prod(m.shape)) if m.shape else 1
    if numel <= 0 or m.bits == 0:
        return "same"
    if m.lanes != 1:
        return "unseen"  # the lanes past the stored bytes are uninitialised in every version
    if bytewise and m.bits % 8:
        raw = bytes.fromhex(t["raw"])
        if m.layout != "bytes":
            return "differs"  # packed bytes taken for elements (the data is made so that the readings differ)
        return "same" if raw == m.data[: len(raw)] else "differs"
    if m.bits % 8 == 0:
        if m.numpy is not None:
            if "numpy" not in t:
                return "differs"
            return "same" if bytes.fromhex(t["numpy"]) == m.data[:4096] else "differs"
        return "same" if bytes.fromhex(t["raw"]) == m.data[: len(bytes.fromhex(t["raw"]))] else "differs"
    if (m.code, m.bits) not in UNPACKED or "numpy" not in t:
        return "unseen"  # .numpy() unpacks only int4 and float4 (one element per byte, high nibble first)
    mask = (1 << m.bits) - 1
    got = np.frombuffer(bytes.fromhex(t["numpy"]), np.uint8)
    if len(got) < numel:
        return "unseen"
    got = got[:numel] & mask
    if m.layout == "bytes":
        want = np.frombuffer(m.data, np.uint8)[:numel] & mask
    else:
        want = ta.unpack_subbyte(m.data, m.bits, numel)
    return "same" if np.array_equal(got, want) else "differs"


def library_cases(workdir: Path) -> list[Case]:
    """Blob cases compiled into shared objects (needs a C compiler)."""
    cc = ta.find_c_compiler() if hasattr(ta, "find_c_compiler") else None
    cc = cc or _cc()
    out = []
    for cid, data, symbol, tree in blob_cases():
        src = workdir / f"{cid}.c"
        blob.write_c_source(data, src, symbol=symbol)
        so = ta.compile_c_shared_object(src, workdir / f"{cid}.so", cc=cc)
        out.append(Case(f"lib-{cid}", "library", data, "0.27", tree=tree, path=str(so)))
    return out


def _cc() -> str | None:
    import shutil

    return shutil.which("cc") or shutil.which("gcc")


def python_of_current() -> str:
    """The interpreter of this test run (its venv has apache-tvm 0.27)."""
    return sys.executable
