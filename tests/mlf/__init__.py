"""Model Library Format archives (mlf_spec.mlf): container, metadata, checks, readers, CLI."""
