"""Tensor caches where they are published: on the Hugging Face Hub (``hf://ORG/REPO[@REV][/PATH]``),
behind any HTTP server (``https://...``, a folder URL or the index's URL) and in object stores
through fsspec (``s3://``, ``gs://``, ``memory://`` ...), read without downloading them: the
index, each shard's size (a HEAD, a listing or the Hub's tree API, with the LFS SHA-256), and
only the byte ranges that a check, a sample or a dump needs.

:func:`is_remote` is cheap (no import beyond this package's ``urls``); everything else loads
``huggingface_hub`` / ``fsspec`` on first use (the ``remote`` extra), except HTTP(S), read with
the standard library's client (``http_store``).
"""

from __future__ import annotations

from .urls import is_remote

__all__ = ["is_remote"]
