"""hhb-tvm 3.2.3 (TVM 0.16) in its peer venv."""
