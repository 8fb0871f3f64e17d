"""README and docs: code blocks run, figures come from runs."""
