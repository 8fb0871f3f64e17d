#!/usr/bin/env python3
"""A hostile-input campaign over every CLI subcommand, each run in its own process.

Not part of the test run: a long campaign, run by hand (low priority)::

    nice -n 10 python fuzz/cli_campaign.py --minutes 20 --out build/cli-campaign
    nice -n 10 python fuzz/cli_campaign.py --only cache --runs 500

Each run builds its inputs in a fresh folder (mutated vectors and examples: bytes flipped,
cut, spliced, JSON values swapped for hostile ones; wrong kinds: a folder, a FIFO, /dev/zero,
an empty file, a symlink loop; hostile file names), runs one command in a subprocess with
``TMPDIR`` pointing into that folder, and flags:

* ``exit``: an exit status outside {0, 1, 2} (a signal, a crash);
* ``traceback``: a Python traceback on stderr;
* ``lines``: more than one line on stderr for exit 2;
* ``time``: over ``--seconds`` (the process group is killed);
* ``memory``: a peak RSS over ``--rss-mb`` (the child's own, from ``wait4``);
* ``left``: files left in the output folder or the temporary folder after a failure;
* ``verdict``: exit 0 from a command that judges (``check``, a testee's decode) for
  something that is no artifact at all (an empty file, random bytes, a folder, ``{}``).

Findings are deduplicated by command and signature and saved with their inputs and argv
(``findings/<id>/``); ``report.json`` holds the runs, CPU seconds and findings per command.
"""

from __future__ import annotations

import argparse
import base64
import functools
import gzip
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.set_int_max_str_digits(0)
ROOT = Path(__file__).resolve().parent.parent
VEC = ROOT / "vectors"
MLF = [str(Path(sys.executable).parent / "mlf-spec")]

INTERESTING_INTS = [0, 1, -1, 2, 255, 256, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**32 + 1, 2**53 + 1,
                    2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(2**63), 10**5000]
HOSTILE_STRINGS = ["", "\x00", "\x1b[31mred\x1b[0m", "\ud800", "..", "../../etc/passwd", "/abs", "a/../../b",
                   "x" * 5000, "é", "\u202e", "NaN", "con", "a\nb", "\\", "%s%n", "0" * 400]


# ------------------------------------------------------------------ seeds


def _glob(folder: str, pattern: str, n: int, rng: random.Random) -> list[Path]:
    files = sorted((VEC / folder).glob(pattern))
    rng.shuffle(files)
    return files[:n]


@dataclass
class Seeds:
    """The seed inputs by kind (files are bytes; caches are folders)."""

    files: dict[str, list[bytes]] = field(default_factory=dict)
    caches: list[Path] = field(default_factory=list)

    def pick(self, kind: str, rng: random.Random) -> bytes:
        return rng.choice(self.files[kind])


def load_seeds(work: Path, rng: random.Random) -> Seeds:
    s = Seeds()
    s.files["params"] = [p.read_bytes() for p in _glob("params", "*.params", 120, rng)]
    s.files["blob"] = [p.read_bytes() for p in _glob("blob", "*.bin", 150, rng) if p.stat().st_size < 1 << 20]
    s.files["metadata"] = [p.read_bytes() for p in _glob("mlf-metadata", "*.json", 120, rng)
                           if not p.name.endswith(".case.json")]
    s.files["archive"] = [p.read_bytes() for p in _glob("mlf-archive", "*.tar", 60, rng)]
    s.files["graph"] = [p.read_bytes() for p in _glob("graph-json", "*.graph.json", 120, rng)]
    s.files["case"] = [p.read_bytes() for p in _glob("params", "*.case.json", 30, rng)]
    s.files["case"] += [p.read_bytes() for p in _glob("tensor-cache", "*/case.json", 10, rng)]
    s.caches = sorted(p for p in (VEC / "tensor-cache").iterdir() if p.is_dir())
    results = ROOT / "docs" / "conformance" / "results.json"
    s.files["report"] = [results.read_bytes()] if results.exists() else []
    # run reports and converted tensor files, made once by the CLI itself
    import subprocess

    seedw = work / "seed-made"
    seedw.mkdir(parents=True, exist_ok=True)
    for fmt in ("params", "tensor-cache", "graph-json"):
        out = seedw / f"report-{fmt}.json"
        if not out.exists():
            subprocess.run([*MLF, "conformance", "run", "--adapter", "mlf-spec", "--format", fmt, "--sample",
                            "--report-json", str(out), "--quiet"], check=False, stdout=subprocess.DEVNULL)
        if out.exists():
            s.files["report"].append(out.read_bytes())
    valid = [p for p in sorted((VEC / "params").glob("params.valid*.params"))][:6]
    s.files["npz"], s.files["safetensors"] = [], []
    for i, p in enumerate(valid):
        for to in ("npz", "safetensors"):
            d = seedw / f"{to}{i}"
            if not d.exists():
                subprocess.run([*MLF, "params", "convert", "--to", to, "-o", str(d), str(p)], check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for f in d.glob("*") if d.exists() else []:
                s.files[to].append(f.read_bytes())
    s.files["text"] = [(ROOT / "README.md").read_bytes()[:4000], b"hello\n", b"\x1b]0;title\x07\n"]
    s.files["c"] = [b"int f(void){return 0;}\n", b"#include <nothing.h>\n", b"\xff\xfe garbage {{{"]
    return s


# ------------------------------------------------------------------ mutations


def mutate_bytes(data: bytes, rng: random.Random, other: bytes | None = None) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 6))):
        op = rng.randrange(9)
        n = len(b)
        if op == 0 and n:  # bit flips
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(n)
                b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # interesting byte
            b[rng.randrange(n)] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x01, 0x0A, 0x22, 0x5C))
        elif op == 2:  # insert
            i = rng.randrange(n + 1)
            b[i:i] = rng.randbytes(rng.choice((1, 4, 8, 64)))
        elif op == 3 and n:  # delete a range
            i = rng.randrange(n)
            del b[i:i + rng.choice((1, 4, 8, 100))]
        elif op == 4 and n:  # truncate
            del b[rng.randrange(n):]
        elif op == 5 and n >= 8:  # interesting integer
            w = rng.choice((4, 8))
            i = rng.randrange(max(1, n - w))
            v = rng.choice(INTERESTING_INTS) % (1 << (8 * w))
            b[i:i + w] = v.to_bytes(w, "little")
        elif op == 6 and n:  # duplicate a range
            i = rng.randrange(n)
            j = min(n, i + rng.choice((4, 16, 256)))
            k = rng.randrange(n)
            b[k:k] = b[i:j]
        elif op == 7 and other:  # splice
            i = rng.randrange(n + 1)
            j = rng.randrange(len(other) + 1)
            b = b[:i] + bytearray(other[j:])
        elif op == 8 and n:  # an ASCII digit run made longer (counts in text)
            m = list(re.finditer(rb"\d+", bytes(b)))
            if m:
                mm = rng.choice(m)
                b[mm.start():mm.end()] = str(rng.choice(INTERESTING_INTS)).encode()
    return bytes(b)


def _hostile_value(rng: random.Random, depth: int = 0) -> object:
    k = rng.randrange(10)
    if k == 0:
        return rng.choice(INTERESTING_INTS)
    if k == 1:
        return rng.choice(HOSTILE_STRINGS)
    if k == 2:
        return rng.choice((None, True, False, 0.5, -0.0, 1e308))
    if k == 3:
        return []
    if k == 4:
        return {}
    if k == 5:
        return [rng.choice(INTERESTING_INTS)] * rng.choice((1, 3, 65, 1000))
    if k == 6 and depth < 2:
        return {rng.choice(HOSTILE_STRINGS): _hostile_value(rng, depth + 1)}
    if k == 7:
        return "NAN_MARK"
    return rng.choice(INTERESTING_INTS)


def _nodes(doc: object, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in list(doc.items())[:200]:
            out += _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:50]):
            out += _nodes(v, (*path, i))
    return out


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng)
    for _ in range(rng.choice((1, 1, 2, 3))):
        nodes = _nodes(doc)
        path = rng.choice(nodes)
        if not path:
            continue
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1]
        op = rng.randrange(6)
        if op <= 2:
            parent[last] = _hostile_value(rng)
        elif op == 3:
            if isinstance(parent, dict):
                del parent[last]
            else:
                parent.pop(last)
        elif op == 4 and isinstance(parent, list) and parent:
            parent.extend([parent[last]] * rng.choice((1, 2, 100)))
        elif op == 5:
            parent[last] = {"nested": parent[last]} if rng.random() < 0.5 else [parent[last]]
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5).replace('"NAN_MARK"', rng.choice(("NaN", "Infinity",
                                                                                            "-Infinity", "1e999")))
    r = rng.random()
    if r < 0.03:
        text = "[" * 100_000 + "]" * 100_000
    elif r < 0.06:
        text = text[:-1] + ', "dup": 1, "dup": 2}' if text.endswith("}") else text
    out = text.encode("utf-8", "surrogatepass")
    return mutate_bytes(out, rng) if rng.random() < 0.15 else out


def mutate(kind: str, data: bytes, rng: random.Random, seeds: Seeds) -> bytes:
    if kind in ("metadata", "graph", "report", "case") or data[:1] in (b"{", b"["):
        return mutate_json(data, rng)
    other = seeds.pick(kind, rng) if rng.random() < 0.3 else None
    out = mutate_bytes(data, rng, other)
    if kind == "archive" and rng.random() < 0.2:
        out = gzip.compress(out, mtime=0)
    return out


# ------------------------------------------------------------------ special inputs

NONARTIFACT = ("empty", "random", "text", "json-empty", "dir-empty", "devnull", "json-list", "zeros")


def special(kind: str, where: Path, name: str, rng: random.Random) -> Path:
    """A wrong-kind input named ``name`` in ``where``."""
    p = where / name
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "random":
        p.write_bytes(rng.randbytes(rng.choice((1, 7, 64, 4096))))
    elif kind == "zeros":
        p.write_bytes(bytes(rng.choice((8, 512, 10240))))
    elif kind == "text":
        p.write_bytes(b"this is not an artifact\n")
    elif kind == "json-empty":
        p.write_bytes(b"{}")
    elif kind == "json-list":
        p.write_bytes(b"[]")
    elif kind == "dir-empty":
        p.mkdir()
    elif kind == "dir-files":
        p.mkdir()
        (p / "a.params").write_bytes(b"")
        (p / "b.json").write_bytes(b"{")
        os.mkfifo(p / "fifo.params")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "devzero":
        p.symlink_to("/dev/zero")
    elif kind == "devnull":
        p.symlink_to("/dev/null")
    elif kind == "loop":
        p.symlink_to(p.name)
    elif kind == "dangling":
        p.symlink_to(where / "does-not-exist")
    elif kind == "missing":
        pass
    elif kind == "bomb":
        p.write_bytes(_bomb())
    elif kind == "huge-sparse":
        with p.open("wb") as f:
            f.truncate(1 << 30)
    return p


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(bytes(64 << 20), compresslevel=9, mtime=0)


SPECIALS = ("empty", "random", "zeros", "text", "json-empty", "json-list", "dir-empty", "dir-files", "fifo", "devzero",
            "devnull", "loop", "dangling", "missing", "bomb", "huge-sparse")

EXT = {"params": ".params", "blob": ".bin", "metadata": ".json", "archive": ".tar", "graph": ".graph.json",
       "report": ".json", "npz": ".npz", "safetensors": ".safetensors", "text": ".txt", "case": ".case.json",
       "c": ".c"}


def hostile_name(rng: random.Random, ext: str) -> str:
    r = rng.random()
    if r < 0.75:
        return "in" + ext
    base = rng.choice(("\x1b[2J", "a\tb", "new\nline", "sp ace", "-rf", "\u202eevil", "x" * 200, "é",
                       os.fsdecode(b"bad\xff\xfe"), "--help", "-"))
    return base + ext


def make_file_input(kind: str, where: Path, rng: random.Random, seeds: Seeds, tag: str) -> tuple[Path, str]:
    """A file input for a command expecting ``kind``: mutated most of the time, sometimes another
    kind or a special. Returns the path and its class (the seed kind, or the special's name)."""
    r = rng.random()
    ext = EXT.get(kind, ".bin")
    name = tag + "-" + hostile_name(rng, ext)
    if r < 0.12:
        sp = rng.choice(SPECIALS)
        return special(sp, where, name, rng), sp
    if r < 0.22:
        kind = rng.choice([k for k in seeds.files if seeds.files[k]])
    data = seeds.pick(kind, rng)
    cls = kind
    if rng.random() < 0.9:
        data = mutate(kind, data, rng, seeds)
        cls = kind + "-mutated"
    p = where / name
    p.write_bytes(data)
    return p, cls


def make_cache_input(where: Path, rng: random.Random, seeds: Seeds, tag: str) -> tuple[Path, str]:
    """A tensor-cache folder copied from a vector and damaged (index, shards, or the folder)."""
    if rng.random() < 0.1:
        sp = rng.choice(SPECIALS)
        return special(sp, where, tag + "-cache", rng), sp
    src = rng.choice(seeds.caches)
    dst = where / (tag + "-" + (hostile_name(rng, "") if rng.random() < 0.2 else "cache"))
    shutil.copytree(src, dst, symlinks=True)
    for f in dst.glob("case.json"):
        f.unlink()
    index = next((p for p in (dst / "tensor-cache.json", dst / "ndarray-cache.json") if p.exists()), None)
    for _ in range(rng.choice((1, 1, 2))):
        # only regular files are read here: a FIFO an earlier step made would block the campaign itself
        shards = sorted(p for p in dst.iterdir() if not p.is_symlink() and stat.S_ISREG(p.lstat().st_mode)
                        and p != index)
        if index is not None and (index.is_symlink() or not stat.S_ISREG(index.lstat().st_mode)):
            index = None
        op = rng.randrange(12)
        if op <= 4 and index is not None:
            index.write_bytes(mutate_json(index.read_bytes(), rng))
        elif op == 5 and shards:
            s = rng.choice(shards)
            s.write_bytes(mutate_bytes(s.read_bytes(), rng))
        elif op == 6 and shards:
            s = rng.choice(shards)
            s.write_bytes(b"")
        elif op == 7 and shards:
            s = rng.choice(shards)
            s.unlink()
            special(rng.choice(("dir-empty", "fifo", "devzero", "loop", "huge-sparse", "dangling")), dst, s.name, rng)
        elif op == 8 and index is not None:
            index.unlink()
            special(rng.choice(("dir-empty", "fifo", "devzero", "loop", "empty", "huge-sparse")), dst, index.name, rng)
            index = None
        elif op == 9 and index is not None:
            index.rename(dst / ("ndarray-cache.json" if index.name == "tensor-cache.json" else "tensor-cache.json"))
            index = None
        elif op == 10 and index is not None:
            doc_text = index.read_bytes()
            try:
                doc = json.loads(doc_text)
                recs = doc.get("records", []) if isinstance(doc, dict) else []
                if recs and isinstance(recs[0], dict):
                    recs[0]["dataPath"] = rng.choice(["x\x1bname.bin", "../" + recs[0].get("dataPath", "a"),
                                                      "/dev/zero", "sub/../params_shard_0.bin", "", ".", "fifo.bin"])
                    if recs[0]["dataPath"] == "fifo.bin":
                        os.mkfifo(dst / "fifo.bin")
                index.write_text(json.dumps(doc))
            except (ValueError, AttributeError, TypeError, OSError):
                pass
        elif op == 11 and index is not None:  # two indexes
            shutil.copy(index, dst / ("ndarray-cache.json" if index.name == "tensor-cache.json"
                                      else "tensor-cache.json"))
    if index is not None and index.exists() and rng.random() < 0.15:
        return index, "cache-index"
    return dst, "cache-mutated"


# ------------------------------------------------------------------ commands


@dataclass
class Ctx:
    """What a command builder gets: the run folder, a random source, the seeds, and where to put
    outputs (paths that do not exist yet)."""

    where: Path
    rng: random.Random
    seeds: Seeds
    stdin: bytes | Path | None = None  #: bytes, or a file given as stdin as it is (never read by the campaign)
    classes: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    fifos: list[tuple[Path, bytes]] = field(default_factory=list)

    def file(self, kind: str) -> str:
        p, c = make_file_input(kind, self.where, self.rng, self.seeds, f"i{len(self.classes)}")
        self.classes.append(c)
        if c == "fifo":  # a FIFO named on the command line is fed, as process substitution does
            self.fifos.append((p, mutate(kind, self.seeds.pick(kind, self.rng), self.rng, self.seeds)
                               if kind in self.seeds.files and self.seeds.files[kind] else b"x"))
        return str(p)

    def cache(self) -> str:
        p, c = make_cache_input(self.where, self.rng, self.seeds, f"c{len(self.classes)}")
        self.classes.append(c)
        if c == "fifo":
            self.fifos.append((p, b'{"records": []}'))
        return str(p)

    def out(self, name: str) -> str:
        p = self.where / "out" / name
        self.outputs.append(p)
        return str(p)

    def opt(self, *choices: list[str]) -> list[str]:
        return list(self.rng.choice(choices))


def _any_kind(c: Ctx) -> str:
    return c.file(c.rng.choice(("params", "blob", "metadata", "archive", "graph")))


def _testee_script(c: Ctx) -> str:
    """A hostile testee: a Python script that misbehaves in one of several ways."""
    kind = c.rng.choice(("garbage", "huge", "hang-info", "bad-info", "crash", "nonutf8", "deep", "slow-serve",
                         "ok-then-garbage", "exit-3", "stderr-flood", "closed"))
    body = {
        "garbage": "print('not json')",
        "huge": "import sys\nsys.stdout.write('x' * (200 << 20))",
        "hang-info": "import time\ntime.sleep(3600)",
        "bad-info": "print('{\"protocol\": \"mlf-conformance/1\", \"formats\": 5}')",
        "crash": "import os\nos.kill(os.getpid(), 11)",
        "nonutf8": "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe{\\x00}\\n')",
        "deep": "print('[' * 200000 + ']' * 200000)",
        "slow-serve": "",
        "ok-then-garbage": "",
        "exit-3": "import sys\nsys.exit(3)",
        "stderr-flood": "import sys\nsys.stderr.write('e' * (50 << 20))\nprint('{}')",
        "closed": "import os\nos.close(1)",
    }[kind]
    info = json.dumps({"protocol": "mlf-conformance/1", "name": "h", "version": "1", "serve": kind == "slow-serve",
                       "formats": [{"format": f, "roles": ["decode", "encode", "migrate"]}
                                   for f in ("params", "blob", "graph-json", "mlf-metadata", "mlf-archive",
                                             "tensor-cache")]})
    if kind in ("slow-serve", "ok-then-garbage"):
        answer = ("import time\ntime.sleep(60)" if kind == "slow-serve" else
                  "sys.stdout.write('{\"id\": 1, \"outcome\": \"accepted\", \"reading\": ' + '9' * 5000 + '}\\n')")
        body = ("import sys\nif sys.argv[1] == 'info':\n    print(" + repr(info) + ")\n    sys.exit(0)\n"
                + answer)
    elif kind not in ("hang-info", "bad-info", "garbage", "closed") and c.rng.random() < 0.6:
        body = ("import sys\nif sys.argv[1] == 'info':\n    print(" + repr(info) + ")\n    sys.exit(0)\n" + body)
    p = c.where / f"testee-{kind}.py"
    p.write_text(body + "\n")
    return f"{sys.executable} {p}"


def _mutated_vectors(c: Ctx) -> str:
    """A vectors folder: a few real cases of one format, one of them damaged."""
    fmt = c.rng.choice(("params", "graph-json", "tensor-cache"))
    d = c.where / "vec"
    (d / fmt).mkdir(parents=True)
    src = VEC / fmt
    if fmt == "tensor-cache":
        picks = c.rng.sample(sorted(p for p in src.iterdir() if p.is_dir()), 3)
        for p in picks:
            shutil.copytree(p, d / fmt / p.name)
        victim = d / fmt / picks[0].name / "case.json"
    else:
        cases = c.rng.sample(sorted(src.glob("*.case.json")), 4)
        for cj in cases:
            stem = cj.name[: -len(".case.json")]
            for f in src.glob(stem + ".*"):
                shutil.copy(f, d / fmt / f.name)
        victim = d / fmt / cases[0].name
    if victim.exists():
        victim.write_bytes(mutate_json(victim.read_bytes(), c.rng))
    c.classes.append("vectors-mutated")
    return str(d)


def _cache_convert(c: Ctx) -> list[str]:
    if c.rng.random() < 0.5:
        return ["cache", "convert", c.cache(), c.out(c.rng.choice(("x.params", "x.npz", "x.safetensors")))]
    return ["cache", "convert", c.file(c.rng.choice(("params", "npz", "safetensors"))), c.out("cache-out"),
            *c.opt([], ["--encode-format", "f32-to-bf16"], ["--shard-cap-mb", "0"], ["--cache-version", "1"])]


def _testee_decode(c: Ctx) -> list[str]:
    fmt = c.rng.choice(("params", "blob", "graph-json", "mlf-metadata", "mlf-archive", "tensor-cache"))
    if fmt == "tensor-cache":
        return ["conformance", "testee", "decode", "tensor-cache", "input_dir=" + c.cache()]
    kind = {"params": "params", "blob": "blob", "graph-json": "graph", "mlf-metadata": "metadata",
            "mlf-archive": "archive"}[fmt]
    p = Path(c.file(kind))
    # the file itself, not its bytes: a child forked from a campaign holding a 1 GiB input starts
    # with that much RSS, and its peak was counted as the command's (a false memory finding)
    c.stdin = p if p.is_file() and not p.is_symlink() else b""
    return ["conformance", "testee", "decode", fmt, *c.opt([], ["dialect=v0.13"], ["era=0.7", "layout=legacy"],
                                                            ["version=99"])]


def _testee_serve(c: Ctx) -> list[str]:
    lines = []
    for i in range(c.rng.randint(1, 5)):
        fmt = c.rng.choice(("params", "blob", "graph-json", "mlf-metadata"))
        kind = {"params": "params", "blob": "blob", "graph-json": "graph", "mlf-metadata": "metadata"}[fmt]
        data = mutate(kind, c.seeds.pick(kind, c.rng), c.rng, c.seeds)
        req = {"id": i, "op": c.rng.choice(("decode", "decode", "encode", "migrate", "nope")), "format": fmt,
               "options": {}, "input": base64.b64encode(data).decode()}
        line = json.dumps(req).encode()
        if c.rng.random() < 0.3:
            line = mutate_json(line, c.rng)
        lines.append(line)
    c.stdin = b"\n".join(lines) + b"\n"
    c.classes.append("serve-mutated")
    return ["conformance", "testee", "serve"]


def _report(c: Ctx) -> list[str]:
    r = c.rng.random()
    if r < 0.3:
        return ["conformance", "report", "--compare", c.file("report"), c.file("report")]
    if r < 0.55:
        return ["conformance", "report", "--html", c.out("r.html"), c.file("report")]
    if r < 0.7:
        return ["conformance", "report", "--badge", c.out("b.svg"), c.file("report")]
    if r < 0.8:
        return ["conformance", "report", "--index", c.out("index.md"), c.file("report")]
    return ["conformance", "report", "-o", c.out("pages"), c.file("report"), *([c.file("report")]
                                                                                if c.rng.random() < 0.3 else [])]


COMMANDS: dict[str, tuple[Callable[[Ctx], list[str]], float, bool]] = {
    # name: (argv builder, weight, judges: exit 0 means "this is a good artifact")
    "cache dump": (lambda c: ["cache", "dump", *c.opt([], ["--json"], ["--stats"]), c.cache()], 3, False),
    "cache check": (lambda c: ["cache", "check", *c.opt([], ["--json"], ["-v"]), c.cache()], 4, True),
    "cache upgrade": (lambda c: ["cache", "upgrade", "-o", c.out("up"), *c.opt([], ["--to", "2"], ["--old-float8"]),
                                 c.cache()], 3, False),
    "cache downgrade": (lambda c: ["cache", "downgrade", "-o", c.out("down"), *c.opt(["--to", "1"], []), c.cache()],
                        3, False),
    "cache diff": (lambda c: ["cache", "diff", *c.opt([], ["--json"]), c.cache(), c.cache()], 3, False),
    "cache convert": (_cache_convert, 3, False),
    "graph check": (lambda c: ["check", *c.opt([], ["--json"]), c.file("graph")], 3, True),
    "params dump": (lambda c: ["params", "dump", *c.opt([], ["--json"], ["--stats"], ["--values", "3"]),
                               c.file("params")], 2, False),
    "params check": (lambda c: ["params", "check", *c.opt([], ["--json"], ["--dialect", "v0.13"]), c.file("params")],
                     2, True),
    "params convert": (lambda c: ["params", "convert", "-o", c.out("conv"),
                                  *c.opt(["--to", "npz"], ["--to", "safetensors"], ["--to", "params"]),
                                  c.file(c.rng.choice(("params", "npz", "safetensors")))], 2, False),
    "blob dump": (lambda c: ["blob", "dump", *c.opt([], ["--json"], ["--era", "0.7"]), c.file("blob")], 2, False),
    "blob check": (lambda c: ["blob", "check", *c.opt([], ["--json"]), c.file("blob")], 2, True),
    "blob extract": (lambda c: ["blob", "extract", "-o", c.out(c.rng.choice(("x.bin", "x.c"))),
                                *c.opt([], ["--module", "0"], ["--module", "llvm"], ["--index", "5"]),
                                c.file("blob")], 1.5, False),
    "inspect": (lambda c: ["inspect", *c.opt([], ["--json"]), c.file("archive")], 2, False),
    "check": (lambda c: ["check", *c.opt([], ["--json"], ["--version", "3"]), _any_kind(c)], 3, True),
    "check archive": (lambda c: ["check", *c.opt([], ["--json"]), c.file("archive")], 2, True),
    "diff": (lambda c: ["diff", *c.opt([], ["--json"]), *(lambda k: [c.file(k), c.file(k)])(
        c.rng.choice(("params", "archive", "blob")))], 2, False),
    "extract": (lambda c: ["extract", "-o", c.out("x"), c.file("archive")], 2, False),
    "upgrade": (lambda c: ["upgrade", "-o", c.out(c.rng.choice(("up.tar", "metadata.json"))),
                           c.file(c.rng.choice(("archive", "metadata")))], 2.5, False),
    "downgrade": (lambda c: ["downgrade", "--to", c.rng.choice("123456"), "-o",
                             c.out(c.rng.choice(("down.tar", "metadata.json"))),
                             *c.opt([], ["--accept-loss", "all"]),
                             c.file(c.rng.choice(("archive", "metadata")))], 2.5, False),
    "conformance report": (_report, 3, False),
    "conformance testee decode": (_testee_decode, 3, True),
    "conformance testee serve": (_testee_serve, 1.5, False),
    "conformance run testee": (lambda c: ["conformance", "run", "--testee", _testee_script(c), "--format",
                                          c.rng.choice(("params", "graph-json")), "--id", "params.valid",
                                          "--timeout", "2", "--max-output", "1000000", "--quiet",
                                          "--no-known-failures"], 1, False),
    "conformance run vectors": (lambda c: ["conformance", "run", "--adapter", "mlf-spec", "--vectors",
                                           _mutated_vectors(c), "--sample", "--quiet", "--no-known-failures",
                                           "--report-json", c.out("rep.json")], 1.5, False),
    "conformance request": (lambda c: ["conformance", "request",
                                       c.rng.choice(("params.valid.zero-size-0x4", "nope", "../x", "\x1b[2J")),
                                       *c.opt([], ["k=v"], ["=", "dialect=\xff"])], 0.3, False),
    "conformance mutate": (lambda c: ["conformance", "mutate", c.file("c"), "--format", "params", "-j", "1",
                                      "--json"], 0.15, False),
    "export ksy": (lambda c: ["export", "ksy", c.rng.choice((c.out("ksy"), _any_kind(c)))], 0.2, False),
}


# ------------------------------------------------------------------ running

#: Commands that write outputs and take --force (the campaign makes their outputs exist first, sometimes).
FORCEABLE = frozenset({"cache upgrade", "cache downgrade", "cache convert", "params convert", "blob extract",
                       "extract", "upgrade", "downgrade", "export ksy"})


@dataclass
class Outcome:
    rc: int
    cpu: float
    wall: float
    rss_mb: float
    stderr: bytes
    stdout_head: bytes
    timed_out: bool


def _limits(cpu: int) -> Callable[[], None]:
    def f() -> None:
        os.nice(10)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    return f


def _feed(fifo: Path, data: bytes, deadline: float) -> None:
    """Write ``data`` into ``fifo`` once a reader opens it (gives up at ``deadline``)."""
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            time.sleep(0.02)
            continue
        try:
            os.set_blocking(fd, True)
            with __import__("contextlib").suppress(OSError):
                os.write(fd, data)
        finally:
            os.close(fd)
        return


def execute(argv: list[str], where: Path, stdin: bytes | Path | None, seconds: float,
            fifos: list[tuple[Path, bytes]] = ()) -> Outcome:
    import subprocess
    import threading

    tmp = where / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1", COLUMNS="100")
    env.pop("PYTHONPATH", None)
    inp = stdin if isinstance(stdin, Path) else where / ".stdin"
    if not isinstance(stdin, Path):
        inp.write_bytes(stdin or b"")
    t0 = time.monotonic()
    with open(where / ".stdout", "wb") as so, open(where / ".stderr", "wb") as se, open(inp, "rb") as si:
        p = subprocess.Popen([*MLF, *argv], stdin=si, stdout=so, stderr=se, cwd=where, env=env,
                             start_new_session=True, preexec_fn=_limits(int(seconds * 3) + 5))
        timed_out = False
        for f, data in fifos:
            threading.Thread(target=_feed, args=(f, data, t0 + seconds), daemon=True).start()
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > seconds:
                timed_out = True
                os.killpg(p.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        p.returncode = 0
    with __import__("contextlib").suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)  # a testee's children left running
    rc = os.waitstatus_to_exitcode(status)
    with open(where / ".stdout", "rb") as f:
        head = f.read(4096)
    return Outcome(rc, ru.ru_utime + ru.ru_stime, time.monotonic() - t0, ru.ru_maxrss / 1024,
                   (where / ".stderr").read_bytes()[-20000:], head, timed_out)


def _listing(d: Path) -> set[str]:
    out = set()
    for root, dirs, files in os.walk(d, followlinks=False):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(root, n), d))
    return out


def judge(name: str, judges: bool, ctx: Ctx, o: Outcome, before: set[str], args: argparse.Namespace) -> list[str]:
    """The flags one run raises (signatures)."""
    flags = []
    err = o.stderr.decode("utf-8", "replace")
    if o.timed_out:
        flags.append("time:killed")
    elif o.cpu > args.cpu_seconds:
        flags.append(f"time:cpu>{args.cpu_seconds}s")
    if o.rc not in (0, 1, 2) and not o.timed_out:
        flags.append(f"exit:{o.rc}")
    if "Traceback (most recent call last)" in err:
        last = [ln for ln in err.strip().splitlines() if ln and not ln.startswith(" ")][-1:]
        sig = re.sub(r"\d+", "N", last[0])[:120] if last else "?"
        flags.append("traceback:" + sig)
    elif o.rc == 2 and len(err.rstrip("\n").splitlines()) != 1 and name not in ("conformance run testee",):
        flags.append(f"lines:{len(err.rstrip(chr(10)).splitlines())}")
    if o.rss_mb > args.rss_mb:
        flags.append(f"memory:>{args.rss_mb}MB")
    if not o.timed_out:
        tmp_left = _listing(ctx.where / "tmp")
        if tmp_left:
            flags.append("left:tmp")
        if o.rc != 0:
            after = _listing(ctx.where) - before - {".stdout", ".stderr", ".stdin", "tmp", "out"}
            after = {a for a in after if not a.startswith("tmp/") and not a.startswith("out/")}
            outs = [p for p in ctx.outputs if os.path.lexists(p)]
            if (outs or after) and o.rc == 2:
                flags.append("left:output-on-exit-2")
            elif (outs or after) and o.rc == 1 and name not in ("cache diff", "diff", "conformance run vectors",
                                                                 "conformance report"):
                flags.append("left:output-on-exit-1")
    if judges and o.rc == 0 and ctx.classes and all(c in NONARTIFACT for c in ctx.classes):
        if name != "conformance testee decode" or b'"accept' in o.stdout_head or b'"reading"' in o.stdout_head:
            flags.append("verdict:non-artifact-accepted")
    return flags


def one_run(name: str, rng: random.Random, seeds: Seeds, base: Path, n: int, args: argparse.Namespace) -> dict:
    builder, _, judges = COMMANDS[name]
    where = base / f"run{n}"
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    (where / "out").mkdir()
    ctx = Ctx(where, rng, seeds)
    try:
        argv = builder(ctx)
    except (OSError, ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:  # the harness's own
        return {"name": name, "argv": [], "classes": ctx.classes, "rc": 0, "cpu": 0.0, "wall": 0.0, "rss_mb": 0,
                "flags": [], "stderr": f"harness: {exc!r}", "where": str(where)}
    sentinels: dict[Path, bytes] = {}
    force = False
    if name in FORCEABLE and ctx.outputs and rng.random() < 0.3:  # outputs that exist already
        force = rng.random() < 0.6
        if force and "--force" not in argv:
            argv.append("--force")
        for out in ctx.outputs:
            if out.suffix:
                out.write_bytes(b"sentinel %d" % n)
                sentinels[out] = out.read_bytes()
            else:
                out.mkdir()
                (out / "keep").write_bytes(b"sentinel %d" % n)
                sentinels[out / "keep"] = b"sentinel %d" % n
    before = _listing(where)
    o = execute(argv, where, ctx.stdin, args.seconds, ctx.fifos)
    flags = judge(name, judges, ctx, o, before, args) if not sentinels else []
    for path, data in sentinels.items():
        intact = path.is_file() and not path.is_symlink() and path.read_bytes() == data
        if o.rc != 0 and not o.timed_out and not intact:
            flags.append("lost:existing-output-on-failure")
        elif o.rc == 0 and not force and not intact:
            flags.append("lost:existing-output-replaced-without-force")
    if sentinels and not o.timed_out:
        flags += [f for f in judge(name, judges, ctx, o, before, args) if not f.startswith("left:output")]
    return {"name": name, "argv": argv, "classes": ctx.classes, "rc": o.rc, "cpu": o.cpu, "wall": o.wall,
            "rss_mb": o.rss_mb, "flags": flags, "stderr": o.stderr[-2000:].decode("utf-8", "replace"),
            "where": str(where)}


def _chmod_walk(d: Path) -> None:
    for root, dirs, _ in os.walk(d):
        for x in dirs:
            with __import__("contextlib").suppress(OSError):
                os.chmod(os.path.join(root, x), stat.S_IRWXU)


def _save(src: Path, dest: Path) -> None:
    """Copy a run's folder; special files (FIFOs, devices) are described, not copied."""
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        if rel.parts[:1] == ("tmp",):
            continue
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for n in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            s, d = Path(root) / n, dest / rel / n
            if s.is_symlink():
                d.symlink_to(os.readlink(s))
            elif s.is_file() and s.stat().st_size < 64 << 20:
                shutil.copyfile(s, d)
            else:
                d.with_name(n + ".SPECIAL").write_text(f"mode {oct(s.lstat().st_mode)} size {s.lstat().st_size}\n")


def campaign(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = load_seeds(out, rng)
    names = [n for n in COMMANDS if not args.only or any(n.startswith(o) for o in args.only)]
    weights = [COMMANDS[n][1] for n in names]
    report_path = out / "report.json"
    state = json.loads(report_path.read_text()) if report_path.exists() and args.resume else \
        {"runs": 0, "cpu": 0.0, "per_command": {}, "findings": {}}
    base = out / "work"
    t_end = time.monotonic() + args.minutes * 60
    n = 0
    while (args.runs and n < args.runs) or (not args.runs and time.monotonic() < t_end):
        name = rng.choices(names, weights)[0]
        r = one_run(name, random.Random(rng.randrange(1 << 62)), seeds, base, n % 4, args)
        n += 1
        st = state["per_command"].setdefault(name, {"runs": 0, "cpu": 0.0, "rc": {}, "max_rss_mb": 0,
                                                    "max_cpu": 0.0, "flags": 0})
        st["runs"] += 1
        st["cpu"] += r["cpu"]
        st["rc"][str(r["rc"])] = st["rc"].get(str(r["rc"]), 0) + 1
        st["max_rss_mb"] = max(st["max_rss_mb"], r["rss_mb"])
        st["max_cpu"] = max(st["max_cpu"], r["cpu"])
        state["runs"] += 1
        state["cpu"] += r["cpu"]
        for f in r["flags"]:
            st["flags"] += 1
            key = hashlib.sha1(f"{name}|{f}".encode()).hexdigest()[:10]
            fd = state["findings"].setdefault(key, {"command": name, "flag": f, "count": 0, "first": None})
            fd["count"] += 1
            if fd["first"] is None:
                dest = out / "findings" / key
                if dest.exists():
                    shutil.rmtree(dest)
                _chmod_walk(Path(r["where"]))
                _save(Path(r["where"]), dest)
                fd["first"] = {k: r[k] for k in ("argv", "classes", "rc", "cpu", "wall", "rss_mb", "stderr")}
                print(f"FINDING {key} {name}: {f} (rc {r['rc']}, {r['cpu']:.1f}s, {r['rss_mb']:.0f} MB) "
                      f"classes={r['classes']}", flush=True)
        if n % 25 == 0:
            report_path.write_text(json.dumps(state, indent=1, default=str))
            print(f"{n} runs, {state['cpu']:.0f} s CPU, {len(state['findings'])} findings", flush=True)
    report_path.write_text(json.dumps(state, indent=1, default=str))
    print(f"done: {state['runs']} runs, {state['cpu']:.0f} s CPU, {len(state['findings'])} findings")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "cli-campaign"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--runs", type=int, default=0, help="a number of runs instead of --minutes")
    ap.add_argument("--only", action="append", help="commands whose name starts with this (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=30, help="wall-clock bound per run")
    ap.add_argument("--cpu-seconds", type=float, default=10, help="CPU bound per run")
    ap.add_argument("--rss-mb", type=float, default=400, help="peak RSS bound per run")
    ap.add_argument("--resume", action="store_true", help="add to an existing report.json")
    ap.add_argument("--list", action="store_true", help="list the commands and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(COMMANDS))
        return 0
    return campaign(args)


if __name__ == "__main__":
    sys.exit(main())
