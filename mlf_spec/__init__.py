"""mlf-spec: a declarative, schema-first codec for Apache TVM deployment artifacts."""

from .errors import MlfError

__all__ = ["MlfError"]
__version__ = "0.1.0"
