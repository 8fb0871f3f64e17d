"""``python -m mlf_spec.cli``: the mlf-spec command line."""

from . import main

raise SystemExit(main())
