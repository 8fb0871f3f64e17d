"""The ``.params`` tensor-list file: codec (``load``/``open``/``save``, over the index readers
of :mod:`~mlf_spec.params.index`, the models of :mod:`~mlf_spec.params.models` and
:mod:`~mlf_spec.params.writing`), dtype dialects
(:mod:`mlf_spec.params.dtypes`) and conversion to ``.npz``/``.safetensors``
(:mod:`mlf_spec.params.convert`).

The public API is re-exported here from :mod:`mlf_spec.params.codec`.
"""

from .codec import *  # noqa: F403
from .codec import __all__  # noqa: F401
