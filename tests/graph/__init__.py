"""GraphExecutor JSON (mlf_spec.graph)."""
