"""``python -m mlf_spec``: the mlf-spec command line."""

from .cli import main

raise SystemExit(main())
