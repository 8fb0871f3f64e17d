"""A testee that misbehaves on purpose, to show the runner survives it.

    python misbehaving.py MODE (info | decode FORMAT k=v ... | serve)

MODE: good, crash, hang, flood, garbage, wrong, reject, noinfo, badinfo, exit3, stderr-flood,
serve-crash (the persistent form dies on its 2nd request), serve-garbage, serve-hang,
internal (a clean `internal` error answer, one-shot), serve-internal (the same, persistent),
serve-wrong (persistent, the first shape off by one).
Everything not misbehaving is answered by mlf-spec itself (params only).
"""

import json
import os
import signal
import sys
import time

from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
from mlf_spec.conformance.protocol import one_shot, respond


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if args[:1] == ["info"]:
        if mode == "noinfo":
            return 3
        if mode == "badinfo":
            print("not a handshake")
            return 0
        info = {"protocol": "mlf-conformance/1", "name": f"misbehaving-{mode}", "version": "0",
                "serve": mode.startswith("serve"), "formats": [{"format": "params", "roles": ["decode", "encode"]}]}
        print(json.dumps(info))
        return 0
    if args[:1] == ["serve"]:
        n = 0
        for line in sys.stdin.buffer:
            n += 1
            if mode == "serve-crash" and n == 2:
                os.kill(os.getpid(), signal.SIGSEGV)
            if mode == "serve-garbage":
                sys.stdout.write("garbage\n")
            elif mode == "serve-hang" and n == 2:
                time.sleep(1000)
            elif mode == "serve-internal":
                rid = json.loads(line)["id"]
                sys.stdout.write(json.dumps({"id": rid, "ok": False, "error": {"class": "internal",
                                                                             "message": "assertion failed"}}) + "\n")
            elif mode == "serve-wrong":
                resp = respond(MlfSpecAdapter(), line)
                if resp.get("ok") and resp["reading"].get("tensors"):
                    resp["reading"]["tensors"][0]["shape"].append(1)
                sys.stdout.write(json.dumps(resp) + "\n")
            else:
                sys.stdout.write(json.dumps(respond(MlfSpecAdapter(), line)) + "\n")
            sys.stdout.flush()
        return 0
    if args[0] == "decode":
        if mode == "internal":
            print(json.dumps({"error": {"class": "internal", "message": "assertion failed"}}))
            return 1
        if mode == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "hang":
            time.sleep(1000)
        if mode == "flood":
            chunk = b"x" * (1 << 20)
            for _ in range(64):
                sys.stdout.buffer.write(chunk)
            return 0
        if mode == "stderr-flood":
            for _ in range(64):
                sys.stderr.write("e" * (1 << 20))
            return 1
        if mode == "garbage":
            print("hello, this is not JSON")
            return 0
        if mode == "exit3":
            return 3
        if mode == "reject":
            print("I refuse", file=sys.stderr)
            return 1
        if mode == "wrong":
            data = sys.stdin.buffer.read()
            try:
                reading = MlfSpecAdapter().decode("params", data, dict(a.split("=", 1) for a in args[2:]))
            except Exception as exc:
                print(exc, file=sys.stderr)
                return 1
            if reading["tensors"]:
                reading["tensors"][0]["shape"] = reading["tensors"][0]["shape"] + [1]
            print(json.dumps(reading))
            return 0
    return one_shot(MlfSpecAdapter(), args)


if __name__ == "__main__":
    sys.exit(main())
