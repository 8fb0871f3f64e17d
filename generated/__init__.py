"""Code and data generated from spec/ by tools/generate.py. Do not edit.

Installed as ``mlf_spec.generated``. Per binary spec ``X``: ``X_fast`` (fast reader and
writer), ``X_construct`` (Construct grammar), ``X_ir`` (the spec as data) and
``X_strategies`` (hypothesis strategy entry points); per table ``T``: ``T_table``.
"""
