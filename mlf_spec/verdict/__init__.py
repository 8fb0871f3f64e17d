"""Will TVM VERSION read an artifact, and read it as meant? Verdicts from the rules in
spec/verdicts/tvm_read_rules.yaml (see :mod:`mlf_spec.verdict.engine`)."""

from .engine import VERDICTS, Evaluator, Reason, Verdict, reader_version, worst, writer_range

__all__ = ["VERDICTS", "Evaluator", "Reason", "Verdict", "reader_version", "worst", "writer_range"]
