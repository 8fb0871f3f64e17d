"""Module blobs (mlf_spec.blob): layouts, facts, the locator, properties."""
