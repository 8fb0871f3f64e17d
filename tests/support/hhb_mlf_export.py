"""Export Model Library Format archives with hhb-tvm (TVM 0.16): run in its peer venv by
tests/peers/hhb/test_mlf_export.py (needs tvm and numpy only, never mlf-spec).

    python hhb_mlf_export.py OUT_DIR      # one OUT_DIR/<model>-<executor>-<target>-lp<0|1>.tar each

Small Relay models, each built for the graph executor (``c`` and ``llvm`` targets) and the
AOT executor (``c`` with the ``crt`` runtime), link-params off and on, then exported with
``tvm.micro.export_model_library_format`` (metadata version 7). What this build of the wheel
lacks is supplied as the issue found it: ``tvm.micro`` imports its RPC session module, which
a build without USE_MICRO refuses (a placeholder module stands in); the host ``llvm`` target
names x86-64 (the fork's default triple is riscv64); AOT + crt export copies the standalone
CRT tree and two template files the wheel does not ship (placeholders: copied, never
compiled). One line per archive on stdout: ``ok NAME`` or ``refused NAME: message``.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import types

HOST_LLVM = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64"


def _placeholders(root: pathlib.Path) -> tuple[str, str]:
    """A standalone CRT folder and the crt template project's two templates (placeholders)."""
    crt = root / "standalone_crt"
    for rel, text in (("include/tvm/runtime/crt/platform.h", "/* placeholder: not the CRT */\n"),
                      ("src/runtime/crt/common/crt_backend_api.c", "/* placeholder: not the CRT */\n"),
                      ("CMakeLists.txt", "# placeholder: not the CRT\n")):
        (crt / rel).parent.mkdir(parents=True, exist_ok=True)
        (crt / rel).write_text(text)
    templates = root / "microtvm_template_projects"
    for name in ("crt_config.h.template", "platform.c.template"):
        (templates / "crt" / "templates").mkdir(parents=True, exist_ok=True)
        (templates / "crt" / "templates" / name).write_text(f"/* placeholder {name} */\n")
    return str(crt), str(templates)


def _import_micro(root: pathlib.Path) -> object:
    stub = types.ModuleType("tvm.micro.session")
    for name in ("create_local_graph_executor", "create_local_debug_executor", "create_local_aot_executor",
                 "Session"):
        setattr(stub, name, None)
    stub.SessionTerminatedError = type("SessionTerminatedError", (Exception,), {})
    sys.modules["tvm.micro.session"] = stub
    import tvm.micro
    import tvm.micro.model_library_format as mlf

    crt, templates = _placeholders(root)
    mlf.get_standalone_crt_dir = lambda: crt
    mlf.get_microtvm_template_projects = lambda platform: os.path.join(templates, platform)
    return tvm.micro


def models() -> dict:
    """name -> (IRModule, params) of a few small Relay models."""
    import numpy as np
    import tvm
    from tvm import relay

    out = {}
    x = relay.var("x", shape=(1, 8), dtype="float32")
    w = relay.var("w", shape=(4, 8), dtype="float32")
    out["dense"] = (tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w)))),
                    {"w": (np.arange(32, dtype="float32").reshape(4, 8) / 10)})
    d = relay.var("data", shape=(1, 3, 8, 8), dtype="int8")
    k = relay.var("weight", shape=(4, 3, 3, 3), dtype="int8")
    conv = relay.nn.conv2d(d, k, kernel_size=(3, 3), padding=(1, 1), channels=4, out_dtype="int32")
    out["conv"] = (tvm.IRModule.from_expr(relay.Function([d, k], conv)),
                   {"weight": np.arange(108, dtype="int8").reshape(4, 3, 3, 3) % 7})
    a = relay.var("a", shape=(2, 3), dtype="float32")
    b = relay.var("b", shape=(2, 3), dtype="float32")
    out["two_out"] = (tvm.IRModule.from_expr(relay.Function([a, b], relay.Tuple([a + b, a * b]))), {})
    return out


BUILDS = [("graph", "c", False), ("graph", "c", True), ("graph", "llvm", False), ("graph", "llvm", True),
          ("aot", "c", False), ("aot", "c", True)]


def main(out_dir: str) -> int:
    """Export every model x build into out_dir."""
    import tvm
    from tvm import relay
    from tvm.relay.backend import Executor, Runtime

    work = pathlib.Path(tempfile.mkdtemp(prefix="hhb-mlf-"))
    micro = _import_micro(work)
    for model, (mod, params) in models().items():
        for executor, target, link in BUILDS:
            if model == "two_out" and target == "llvm":
                continue
            name = f"{model}-{executor}-{target}-lp{int(link)}"
            runtime = Runtime("crt", {"system-lib": True}) if target == "c" else Runtime("cpp")
            try:
                with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
                    lib = relay.build(mod, target=HOST_LLVM if target == "llvm" else "c", params=params,
                                      executor=Executor(executor, {"link-params": link}), runtime=runtime,
                                      mod_name=model)
                micro.export_model_library_format(lib, os.path.join(out_dir, name + ".tar"))
                print(f"ok {name}", flush=True)
            except Exception as exc:  # noqa: BLE001 - the fork refused the build: reported, not fatal
                lines = [x for x in str(exc).strip().splitlines() if x.strip()]
                print(f"refused {name}: {lines[-1] if lines else type(exc).__name__}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
