"""The safe tar reader and compressed tarballs (mlf_spec.tar, mlf_spec._compress)."""
