"""A testee that attacks the runner's resources (issue 32 items 13-20).

    python hostile.py MODE (info | decode FORMAT k=v ... | encode FORMAT k=v ... | serve)

MODE:
  flood-line     serve: each answer is one line longer than any output cap (no newline in it)
  big-line:N     serve and one-shot: the reading of a decode is an N-byte line whose every
                 tensor is wrong (a list of N/40 wrong records)
  setsid:MARK    serve and one-shot: each request forks a grandchild that calls setsid() and
                 sleeps 300 s with MARK in its command line; then answers as mlf-spec
  ansi           one-shot: rejects everything with ANSI colour and BEL/NUL bytes on stderr
  html           info: a name and version holding HTML and ESC/BEL bytes; rejects everything
                 with the same in its message
  sparse         encode (tensor-cache): an 8 GiB sparse file in output_dir
  deep           encode (tensor-cache): 3,000 nested folders in output_dir
Everything else is answered by mlf-spec itself.
"""

import json
import os
import sys

from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
from mlf_spec.conformance.protocol import one_shot, respond

HTML = "<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3))\x1b[31m\x07"


def daemon(mark):
    """A grandchild in its own session, sleeping with ``mark`` in its command line."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", mark])
        os._exit(0)


def big_reading(n):
    tensors = [{"name": f"t{i}", "dtype": "nope", "shape": [-1, -2, -3], "data": "zz"} for i in range(n // 40)]
    return {"format": "params", "tensors": tensors}


def encode_folder(mode, args):
    opts = dict(a.split("=", 1) for a in args[2:] if "=" in a)
    out = opts["output_dir"]
    if mode == "sparse":
        with open(os.path.join(out, "tensor-cache.json"), "wb") as f:
            f.truncate(8 << 30)
    elif mode == "deep":
        d = out
        fd = os.open(d, os.O_RDONLY)
        for _ in range(3000):
            os.mkdir("a", dir_fd=fd)
            nfd = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(fd)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    name, _, arg = mode.partition(":")
    if args[:1] == ["info"]:
        formats = [{"format": "params", "roles": ["decode", "encode"]}]
        if name in ("sparse", "deep"):
            formats = [{"format": "tensor-cache", "roles": ["encode"]}]
        info = {"protocol": "mlf-conformance/1", "name": HTML if name == "html" else f"hostile-{name}",
                "version": HTML if name == "html" else "0", "serve": True, "formats": formats}
        print(json.dumps(info))
        return 0
    if args[:1] == ["serve"]:
        for line in sys.stdin.buffer:
            rid = json.loads(line)["id"]
            if name == "flood-line":
                chunk = b"x" * (1 << 20)
                while True:
                    sys.stdout.buffer.write(chunk)
            if name == "setsid":
                daemon(arg)
            if name == "big-line":
                resp = {"id": rid, "ok": True, "reading": big_reading(int(arg))}
            else:
                resp = respond(MlfSpecAdapter(), line)
            sys.stdout.write(json.dumps(resp) + "\n")
            sys.stdout.flush()
        return 0
    if name in ("sparse", "deep") and args[:1] == ["encode"]:
        encode_folder(name, args)
        return 0
    if name == "setsid":
        daemon(arg)
    if name == "ansi":
        sys.stderr.write("\x1b[1;31merror:\x1b[0m bad \x07 input \x00 here \udcff".encode("utf-8", "surrogateescape")
                         .decode("utf-8", "replace") + "\n")
        return 1
    if name == "html":
        print(json.dumps({"error": {"class": "malformed", "message": HTML}}))
        return 1
    if name == "big-line" and args[:1] == ["decode"]:
        sys.stdin.buffer.read()
        print(json.dumps(big_reading(int(arg))))
        return 0
    return one_shot(MlfSpecAdapter(), args)


if __name__ == "__main__":
    sys.exit(main())
