"""``mlf-spec upgrade`` / ``mlf-spec downgrade``: migrate MLF archives between metadata versions.

``upgrade PATH... [--to N] (-o OUT | --dry-run)`` and ``downgrade PATH... --to N ...``: each
input is an MLF tarball, an extracted directory or a bare metadata.json (``-`` reads
standard input; a directory without metadata.json is searched for archives). With one
input ``-o`` names the output file; with several, ``-o`` names a directory (created if
needed) that receives one output per input, named after it (``model.tar.gz`` and a
directory ``model/`` both give ``model.tar``; a metadata.json keeps its name), and two
inputs that would get the same name are refused before anything is written. ``-o DIR/``
(or an existing directory) selects the directory form for one input too.

Exit status, per input and the worst over all: 0 done (or, with ``--dry-run``, would be
done); 1 refused (a loss not accepted, an impossible step, an existing output without
``--force``); 2 the input cannot be read, the output cannot be written, or the command
line is wrong. ``--json`` prints one object per input (JSON Lines), schema
generated/schemas/mlf_migrate_output.schema.json; each loss is listed once with all its
places.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import LossRefusedError, MigrationError, MlfError, OutputExistsError

from . import _batch, add_command
from .archive import VERSIONS

if TYPE_CHECKING:
    from mlf_spec.mlf import migrate as _migrate

ACCEPT = frozenset({"mlf-archive", "mlf-metadata"})
WHAT = "an MLF archive or metadata.json"


def register(sub: Any) -> None:
    """Add the ``upgrade`` and ``downgrade`` commands to the CLI."""
    for name in ("upgrade", "downgrade"):
        p = add_command(sub, name, description=(
            f"Migrate MLF archives (tars or directories) or bare metadata.json documents to "
            f"{'a later (default: the latest)' if name == 'upgrade' else 'an earlier'} metadata version. "
            "The steps are declared in spec/migrations/ (generated/docs/mlf_migrations.md). "
            "A migration that loses information is refused unless each loss is accepted by name. "
            "Exit status: 0 done, 1 refused, 2 unreadable input (the worst over all inputs)."))
        _batch.add_arguments(p, what="MLF tarballs, extracted directories or metadata.json files")
        p.add_argument("--to", type=int, choices=VERSIONS, required=name == "downgrade",
                       default=None, help="target version" + (" (default: the latest)" if name == "upgrade" else ""))
        p.add_argument("-o", "--output", metavar="OUT",
                       help="file to write (a tar, or a metadata.json for a bare document); with several "
                       "inputs, or ending in '/', a directory that receives one output per input")
        p.add_argument("--accept-loss", action="append", default=[], metavar="NAME",
                       help="accept a loss by its name (step.loss, e.g. v5_v6.target_device_type); repeatable")
        p.add_argument("--dry-run", action="store_true", help="print the plan and write nothing")
        p.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
        p.add_argument("--force", action="store_true", help="replace existing outputs (atomically)")
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
    try:
        _migrate.check_loss_names(args.accept_loss)
    except MigrationError as exc:
        return _fail(exc.message, 2)
    args.to_version = args.to if args.to is not None else _md.LATEST
    args.skipped = []
    inputs = list(_batch.expand(args.paths, ACCEPT, args.skipped))
    if not inputs:
        return _fail(f"found nothing that is {WHAT} in {_batch.shown_paths(args.paths)}", 2)
    args.outputs = {}
    if args.output:
        to_dir = len(inputs) > 1 or args.output.endswith(("/", os.sep)) or Path(args.output).is_dir()
        if to_dir:
            names: dict[str, str] = {}
            for inp in inputs:
                out = os.path.join(args.output, output_name(inp))
                if out in names:
                    return _fail(f"{names[out]} and {inp.name} would both be written to {out}; "
                                 "migrate them separately", 2)
                names[out] = inp.name
                args.outputs[inp.name] = out
            if not args.dry_run:
                from mlf_spec._io import check_output

                check_output(args.output, directory=True)
                try:
                    os.makedirs(args.output, exist_ok=True)
                except OSError as exc:
                    return _fail(f"{args.output}: cannot create the output directory: {exc.strerror}", 2)
        else:
            args.outputs[inputs[0].name] = args.output
    return _batch.run(args, _migrate_one, accept=ACCEPT, what=WHAT, inputs=inputs)


def output_name(inp: _batch.Input) -> str:
    """The file name an input's result gets in an output directory."""
    if inp.path is None:
        return "stdin.json" if inp.kind.name == "mlf-metadata" else "stdin.tar"
    base = os.path.basename(os.path.normpath(inp.path))
    if inp.kind.name == "mlf-metadata":
        return base
    for ext in (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar"):
        if base.endswith(ext):
            return base[: -len(ext)] + ".tar"
    return base + ".tar"


def _migrate_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import migrate as _migrate

    if inp.kind.name == "tensor-cache":  # its own versions (1 ndarray-cache.json, 2 tensor-cache.json)
        raise MlfError(f"this is {inp.kind.label}, not {WHAT}; a tensor cache moves between cache versions with "
                       f"`mlf-spec cache {args.migrate_command}`", file=inp.name)
    _batch.guard(inp, ACCEPT, WHAT)
    command: str = args.migrate_command
    to: int = args.to_version
    output: str | None = args.outputs.get(inp.name)
    r = _Reporter(args, inp.name, to, output)
    if output and not args.dry_run:
        from mlf_spec._io import check_output

        check_output(output, inputs=[inp.path] if inp.path else [])
    if output and not args.dry_run and Path(output).exists() and not args.force:
        return r.outcome(None, "refused", f"{output} exists; pass --force to replace it", 1)
    try:
        plan = _migrate.plan(inp.source, to)
    except MigrationError as exc:
        return r.outcome(None, "refused", str(exc), 1, exc=exc)
    with plan:
        plan.source = inp.name
        try:
            _migrate.check_direction(command, plan.source_version, to)
        except MigrationError:
            other = "downgrade" if command == "upgrade" else "upgrade"
            why = (f"this is version {plan.source_version}, already {'below' if command == 'downgrade' else 'above'}"
                   f" {to}; {command} --to {to} goes the other way (use `mlf-spec {other}`)")
            if len(args.outputs) > 1 or not inp.explicit:
                out = r.outcome(plan, "skipped", why, 0)
                out.skipped = True
                return out
            return r.outcome(plan, "refused", why, 1)
        missing = plan.unaccepted(args.accept_loss)
        if args.dry_run:
            exists = bool(output) and Path(output).exists() and not args.force
            reason = f"{output} exists; pass --force to replace it" if exists else None
            return r.outcome(plan, "dry-run", reason, 1 if missing or exists else 0)
        try:
            result = _migrate.apply(plan, args.accept_loss, output=output, overwrite=args.force)
        except LossRefusedError:
            return r.outcome(plan, "refused", _refused_text(plan, missing), 1)
        except OutputExistsError as exc:
            return r.outcome(plan, "refused", f"{exc}; pass --force to replace it", 1)
        except MigrationError as exc:
            return r.outcome(plan, "refused", str(exc), 1)
        return r.outcome(plan, "done", None, 0, output=result.output)


def _refused_text(plan: _migrate.Plan, missing: list[str]) -> str:
    lines = [f"migrating to version {plan.target_version} loses what was not accepted:"]
    for name in missing:
        hits = [x for x in plan.losses if x.name == name]
        where = ", ".join(x.where for x in hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "")
        lines.append(f"  {name} ({hits[0].kind}, at {where}): {hits[0].doc}")
    lines.append("accept each with " + " ".join(f"--accept-loss {n}" for n in missing)
                 + " (--dry-run shows the whole plan)")
    return "\n".join(lines)


def document(args: argparse.Namespace, name: str, to: int, plan: _migrate.Plan | None, status: str,
             reason: str | None, exc: Exception | None = None, output: str | None = None) -> dict[str, Any]:
    """The JSON report of one input (schema: mlf_migrate_output)."""
    from mlf_spec.mlf import migrate as _migrate

    d = plan.to_dict() if plan is not None and status != "skipped" else {}
    err = exc if isinstance(exc, MigrationError) else None
    source_version = plan.source_version if plan is not None else err.source_version if err else None
    direction = "none" if source_version is None else _migrate.direction(source_version, to)
    return {
        "input": name, "output": output, "kind": plan.kind if plan else err.kind if err else None,
        "style": plan.style if plan else err.style if err else None, "from_version": source_version,
        "to_version": to, "direction": direction, "status": status, "reason": reason,
        "refusal": err.refusal if err else None, "steps": d.get("steps", []), "losses": d.get("losses", []),
        "accepted": list(args.accept_loss), "unaccepted": plan.unaccepted(args.accept_loss) if plan else [],
        "derived": d.get("derived", []), "source_findings": d.get("source_findings", []),
        "result_findings": d.get("result_findings", []),
    }


class _Reporter:
    """Turns what happened to one input into its Outcome (text or JSON, and stderr notes)."""

    def __init__(self, args: argparse.Namespace, name: str, to: int, output: str | None) -> None:
        self.args, self.name, self.to, self.output = args, name, to, output

    def outcome(self, plan: _migrate.Plan | None, status: str, reason: str | None, code: int, *,
                exc: Exception | None = None, output: str | None = None) -> _batch.Outcome:
        args = self.args
        notes = []
        if status == "skipped":
            notes.append(f"mlf-spec: skipped: {self.name}: {reason}")
            return _batch.Outcome(code, doc=document(args, self.name, self.to, plan, status, reason, exc)
                                  if args.json else None, notes=notes)
        if status == "refused":
            text = reason or ""
            if args.json:
                text = text.splitlines()[0] if text else ""
            notes.append(f"mlf-spec: refused: {self.name}: {text}")
        if args.json:
            return _batch.Outcome(code, doc=document(args, self.name, self.to, plan, status, reason, exc, output),
                                  notes=notes)
        if status == "refused":
            return _batch.Outcome(code, notes=notes)
        assert plan is not None
        lines: list[str] = []
        if status == "dry-run":
            lines.append(str(plan))
            missing = plan.unaccepted(args.accept_loss)
            if missing:
                lines.append("would be refused: accept " + " ".join(f"--accept-loss {n}" for n in missing))
            if reason:
                lines.append(f"would be refused: {reason}")
            if not missing and not reason:
                lines.append("dry run: nothing written" + (f"; {self.output} would be written" if self.output else ""))
            return _batch.Outcome(code, text="\n".join(lines))
        lines.append(f"{plan.source}: MLF version {plan.source_version}, {plan.style} {plan.kind} -> version "
                     f"{plan.target_version}: wrote {output}")
        for d in plan.derived:
            lines.append(f"  derived {d.name} at {d.where}")
        for name in plan.loss_names():
            lines.append(f"  accepted loss {name}")
        for f in plan.new_findings():
            lines.append(f"  note: {f.severity} {f.code}: {f.message}")
        return _batch.Outcome(code, text="\n".join(lines))


__all__ = ["document", "output_name", "register"]
