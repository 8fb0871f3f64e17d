"""The module blob that ``export_library`` embeds (legacy ``__tvm_dev_mblob`` and tvm-ffi
``__tvm_ffi__library_bin``): codec and typed module trees (:mod:`mlf_spec.blob.codec`),
locating blobs (:mod:`mlf_spec.blob.locate`, the entry point, over :mod:`~mlf_spec.blob.elf`,
:mod:`~mlf_spec.blob.csource` and :mod:`~mlf_spec.blob.export_tar`), writing them back out
(:mod:`mlf_spec.blob.writers`) and hypothesis strategies (:mod:`mlf_spec.blob.strategies`).

The public API is re-exported here from :mod:`mlf_spec.blob.codec`.
"""

from .codec import *  # noqa: F403
from .codec import __all__  # noqa: F401
