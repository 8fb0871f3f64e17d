""".params files (mlf_spec.params)."""
