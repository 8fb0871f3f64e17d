"""The tensor cache (mlf_spec.cache) without TVM."""
