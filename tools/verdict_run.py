"""Run every verdict case through hhb-tvm (TVM 0.16) and record the run.

    python tools/verdict_run.py

The test suite runs a sample of the cases (tests/peers/tvm/test_verdicts.py,
tests/support/verdict_sample.py) and checks each sampled case against this record,
docs/conformance/verdicts/hhb-tvm-0.16.json: what TVM 0.16 did with every case, what
``check --tvm 0.16`` predicted, and a digest of the cases. Rerun it when the cases or the
verdict rules change (the sampled test says so). It runs that test on every case, with
MLF_SPEC_VERDICTS_WHOLE=1 and MLF_SPEC_VERDICTS_RECORD=1; several minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/peers/tvm/test_verdicts.py::test_verdicts_agree_with_tvm_016"
RECORD = ROOT / "docs" / "conformance" / "verdicts" / "hhb-tvm-0.16.json"


def main() -> int:
    env = dict(os.environ, MLF_SPEC_VERDICTS_WHOLE="1", MLF_SPEC_VERDICTS_RECORD="1")
    status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", TEST],
                             cwd=ROOT, env=env)
    if RECORD.exists():
        record = json.loads(RECORD.read_text())
        print(f"{RECORD.relative_to(ROOT)}: {record['cases']} cases, {record['counts']}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
