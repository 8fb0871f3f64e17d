"""The mlf-spec generator: loads spec/ into a typed IR and emits generated/."""
