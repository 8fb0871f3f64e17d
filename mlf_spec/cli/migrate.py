"""``mlf-spec upgrade`` and ``mlf-spec downgrade``: migrate MLF archives and metadata.json files.

    mlf-spec upgrade PATH [--to N] -o OUT [--accept-loss NAME ...] [--dry-run] [--json] [--force]
    mlf-spec downgrade PATH --to N -o OUT [--accept-loss NAME ...] [--dry-run] [--json] [--force]

PATH is an MLF archive (a tar, possibly compressed, or an extracted directory) or a bare
metadata.json; the output is an uncompressed tar (or a metadata.json). Nothing is written
before the whole migration has been carried out in memory and the result validated (and,
for archives, checked); then OUT is written atomically. An existing OUT is replaced only
with ``--force``, the input never. ``--dry-run`` prints the plan and writes nothing.

Exit status: 0 done (with ``--dry-run``: it would be done); 1 refused: a loss that was not
accepted with ``--accept-loss``, an impossible migration (several modules to version 6, an
operator document before version 4), an archive that does not conform to its version, or
an existing output without ``--force``; 2 the input cannot be read, the output cannot be
written, or the command line is wrong. The JSON form (``--json``) is generated/schemas/mlf_migrate_output.schema.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import LossRefusedError, MigrationError, OutputExistsError

from .archive import VERSIONS

if TYPE_CHECKING:
    from mlf_spec.mlf import migrate as _migrate


def register(sub: Any) -> None:
    """Add the ``upgrade`` and ``downgrade`` commands to the CLI."""
    for name, what in (("upgrade", "to a later metadata version (default: the latest)"),
                       ("downgrade", "to an earlier metadata version")):
        p = sub.add_parser(name, help=f"migrate an MLF archive or metadata.json {what}",
                           description=f"Migrate an MLF archive (tar or directory) or a bare metadata.json {what}. "
                           "The steps are declared in spec/migrations/ (generated/docs/mlf_migrations.md). "
                           "A migration that loses information is refused unless each loss is accepted "
                           "by name. Exit status: 0 done, 1 refused, 2 unreadable input.")
        p.add_argument("path", help="MLF tarball, extracted directory or metadata.json")
        p.add_argument("--to", type=int, choices=VERSIONS, required=name == "downgrade",
                       default=None, help="target version" + (" (default: the latest)" if name == "upgrade" else ""))
        p.add_argument("-o", "--output", help="file to write (a tar, or a metadata.json for a bare document)")
        p.add_argument("--accept-loss", action="append", default=[], metavar="NAME",
                       help="accept a loss by its name (step.loss, e.g. v5_v6.target_device_type); repeatable")
        p.add_argument("--dry-run", action="store_true", help="print the plan and write nothing")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--force", action="store_true", help="replace an existing output (atomically)")
        p.set_defaults(handler=_run, migrate_command=name)


def _fail(message: str, status: int) -> int:
    print(f"mlf-spec: {'error' if status == 2 else 'refused'}: {message}", file=sys.stderr)
    return status


def _run(args: argparse.Namespace) -> int:
    from mlf_spec.mlf import metadata as _md
    from mlf_spec.mlf import migrate as _migrate

    command: str = args.migrate_command
    if not args.dry_run and not args.output:
        return _fail(f"{command} needs -o OUT (or --dry-run)", 2)
    unknown = [n for n in args.accept_loss if n not in _migrate.LOSSES]
    if unknown:
        return _fail(f"no loss is called {unknown[0]!r}; the names are listed in generated/docs/mlf_migrations.md "
                     f"(e.g. {', '.join(sorted(_migrate.LOSSES)[:2])})", 2)
    to = args.to if args.to is not None else _md.LATEST
    if args.output and not args.dry_run and Path(args.output).exists() and not args.force:
        return _report(args, to, None, "refused", f"{args.output} exists; pass --force to replace it", 1)
    try:
        plan = _migrate.plan(args.path, to)
    except MigrationError as exc:
        return _report(args, to, None, "refused", str(exc), 1, exc=exc)
    with plan:
        wrong = (command == "upgrade" and to < plan.source_version) or \
                (command == "downgrade" and to > plan.source_version)
        if wrong:
            other = "downgrade" if command == "upgrade" else "upgrade"
            return _fail(f"{args.path} is version {plan.source_version}; {command} --to {to} goes the other way "
                         f"(use `mlf-spec {other}`)", 2)
        missing = plan.unaccepted(args.accept_loss)
        if args.dry_run:
            exists = bool(args.output) and Path(args.output).exists() and not args.force
            reason = f"{args.output} exists; pass --force to replace it" if exists else None
            return _report(args, to, plan, "dry-run", reason, 1 if missing or exists else 0)
        try:
            result = _migrate.apply(plan, args.accept_loss, output=args.output, overwrite=args.force)
        except LossRefusedError:
            return _report(args, to, plan, "refused", _refused_text(plan, missing), 1)
        except OutputExistsError as exc:
            return _report(args, to, plan, "refused", f"{exc}; pass --force to replace it", 1)
        except MigrationError as exc:
            return _report(args, to, plan, "refused", str(exc), 1)
        return _report(args, to, plan, "done", None, 0, output=result.output)


def _refused_text(plan: _migrate.Plan, missing: list[str]) -> str:
    lines = [f"migrating to version {plan.target_version} loses what was not accepted:"]
    for name in missing:
        hits = [x for x in plan.losses if x.name == name]
        where = ", ".join(x.where for x in hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "")
        lines.append(f"  {name} ({hits[0].kind}, at {where}): {hits[0].doc}")
    lines.append("accept each with " + " ".join(f"--accept-loss {n}" for n in missing)
                 + " (--dry-run shows the whole plan)")
    return "\n".join(lines)


def document(args: argparse.Namespace, to: int, plan: _migrate.Plan | None, status: str, reason: str | None,
             exc: Exception | None = None, output: str | None = None) -> dict[str, Any]:
    """The JSON report (schema: mlf_migrate_output)."""
    d = plan.to_dict() if plan is not None else {}
    source_version = plan.source_version if plan is not None else getattr(exc, "source_version", None)
    direction = "none" if source_version is None or source_version == to else (
        "upgrade" if to > source_version else "downgrade")
    return {
        "input": args.path, "output": output, "kind": plan.kind if plan else getattr(exc, "kind", None),
        "style": plan.style if plan else getattr(exc, "style", None), "from_version": source_version,
        "to_version": to, "direction": direction, "status": status, "reason": reason,
        "refusal": getattr(exc, "refusal", None), "steps": d.get("steps", []), "losses": d.get("losses", []),
        "accepted": list(args.accept_loss), "unaccepted": plan.unaccepted(args.accept_loss) if plan else [],
        "derived": d.get("derived", []), "source_findings": d.get("source_findings", []),
        "result_findings": d.get("result_findings", []),
    }


def _report(args: argparse.Namespace, to: int, plan: _migrate.Plan | None, status: str, reason: str | None,
            code: int, *, exc: Exception | None = None, output: str | None = None) -> int:
    if args.json:
        json.dump(document(args, to, plan, status, reason, exc, output), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        if status == "refused":
            print(f"mlf-spec: refused: {reason.splitlines()[0] if reason else ''}", file=sys.stderr)
        return code
    out = sys.stdout
    if status == "dry-run":
        assert plan is not None
        out.write(str(plan) + "\n")
        missing = plan.unaccepted(args.accept_loss)
        if missing:
            out.write("would be refused: accept " + " ".join(f"--accept-loss {n}" for n in missing) + "\n")
        if reason:
            out.write(f"would be refused: {reason}\n")
        if not missing and not reason:
            out.write("dry run: nothing written" + (f"; {args.output} would be written" if args.output else "") + "\n")
        return code
    if status == "refused":
        print(f"mlf-spec: refused: {reason}", file=sys.stderr)
        return code
    assert plan is not None
    out.write(f"{plan.source}: MLF version {plan.source_version}, {plan.style} {plan.kind} -> version "
              f"{plan.target_version}: wrote {output}\n")
    for d in plan.derived:
        out.write(f"  derived {d.name} at {d.where}\n")
    for name in plan.loss_names():
        out.write(f"  accepted loss {name}\n")
    for f in plan.new_findings():
        out.write(f"  note: {f.severity} {f.code}: {f.message}\n")
    return code


__all__ = ["document", "register"]
