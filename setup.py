"""The one compiled piece: the optional C header walker of .params files.

Everything else is in pyproject.toml. The extension is optional (``optional=True``): without
a C compiler or Python headers, install still succeeds and ``mlf_spec.params`` reads with
the generated Python reader (the reference; ``mlf_spec.params.accel`` says which is used).
"""

from setuptools import Extension, setup

# include_dirs: the walker's constants, generated from the spec (generated/params_walker.h)
setup(ext_modules=[Extension("mlf_spec.params._walker", ["mlf_spec/params/_walker.c"], include_dirs=["generated"],
                             optional=True)])
