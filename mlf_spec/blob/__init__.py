"""The module blob that ``export_library`` embeds (legacy ``__tvm_dev_mblob`` and tvm-ffi
``__tvm_ffi__library_bin``): codec (:mod:`mlf_spec.blob.codec`) over payloads
(:mod:`~mlf_spec.blob.payload`), typed module trees and the writer (:mod:`~mlf_spec.blob.modules`)
and the writer eras of spec/tables/blob_writer_eras.yaml (:mod:`~mlf_spec.blob.eras`),
locating blobs (:mod:`mlf_spec.blob.locate`, the entry point, over :mod:`~mlf_spec.blob.elf`,
:mod:`~mlf_spec.blob.csource` and :mod:`~mlf_spec.blob.export_tar`), writing them back out
(:mod:`mlf_spec.blob.writers`) and hypothesis strategies (:mod:`mlf_spec.blob.strategies`).

The public API is re-exported here from :mod:`mlf_spec.blob.codec`.
"""

from .codec import *  # noqa: F403
from .codec import __all__  # noqa: F401
