"""``python -m mlf_spec``: the mlf-spec command line."""

try:
    from .cli import main
except KeyboardInterrupt:  # ^C before the command line's own handlers: one line, no traceback
    import sys

    print("mlf-spec: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
