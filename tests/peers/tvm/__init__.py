"""apache-tvm (the test extra's wheel, and peer venvs of other versions)."""
