"""Will TVM VERSION read an artifact, and read it as meant? Verdicts from the rules of
spec/verdicts/ (tvm_read_rules.yaml for .params files and blobs, mlf_read_rules.yaml for
MLF archives), evaluated by :mod:`mlf_spec.verdict.engine`."""

from .engine import (
           VERDICTS,
           Evaluator,
           Part,
           ReaderVerdict,
           Reason,
           Rules,
           Verdict,
           reader_version,
           rules,
           worst,
           writer_range,
)

__all__ = ["VERDICTS", "Evaluator", "Part", "Reason", "ReaderVerdict", "Rules", "Verdict", "reader_version", "rules",
           "worst", "writer_range"]
