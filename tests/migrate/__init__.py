"""Migrations between MLF versions (mlf_spec.mlf.migrate), their spec kind and CLI."""
