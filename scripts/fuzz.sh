#!/usr/bin/env bash
# Long hypothesis campaign over the property tests (not part of CI).
set -euo pipefail
cd "$(dirname "$0")/.."
HYPOTHESIS_PROFILE=fuzz exec .venv/bin/python -m pytest -p no:cacheprovider tests/params/test_properties.py "$@"
