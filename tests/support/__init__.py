"""What the tests share, imported as ``tests.support.<module>`` (the repository root is on
``sys.path`` under pytest, as ``tests`` is a package): the "add" test model and archives
shaped like TVM's exports (models), real TVM artifacts (tvm_artifacts), the
verdict cases and the probes run in TVM's Python (tvm_verdict_cases, tvm_probe,
tvm_cache_probe), the Kaitai compiler and parsers (kaitai), a headless browser (browser), the
hhb-tvm MLF exporter (hhb_mlf_export); and, used by path, the independent C readers
(independent/) and a misbehaving testee (conformance_testees/)."""
