"""The test suite, one folder per capability; what the tests share is in tests/support/."""
