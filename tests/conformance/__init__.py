"""The conformance kit (mlf_spec.conformance): vectors, runner, adapters, results, mutation."""
