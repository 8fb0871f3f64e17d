"""mlf-spec diff and mlf_spec.diff."""
