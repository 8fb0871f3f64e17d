"""The module blob that ``export_library`` embeds (legacy ``__tvm_dev_mblob`` and tvm-ffi
``__tvm_ffi__library_bin``): codec and typed module trees (:mod:`mlf_spec.blob.codec`),
locating blobs in ELF, C source and tar containers (:mod:`mlf_spec.blob.locate`) and
hypothesis strategies (:mod:`mlf_spec.blob.strategies`).

The public API is re-exported here from :mod:`mlf_spec.blob.codec`.
"""

from .codec import *  # noqa: F403
from .codec import __all__  # noqa: F401
