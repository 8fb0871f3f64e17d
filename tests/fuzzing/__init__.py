"""The fuzzing harness (mlf_spec.fuzzing, fuzz/)."""
