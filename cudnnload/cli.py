"""The ``cudnnload`` command: thin wrappers that format what the stages return.

Exit codes: 0 healthy, 1 problems found, 2 usage error. Every expected failure
prints one line naming the path and the reason; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cudnnload.errors import CudnnloadError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _friendly(command: F) -> F:
    """Turn our own errors into one line and exit 2, instead of a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CudnnloadError as exc:
            click.echo(f"cudnnload: error: {exc.message}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def _json_option(command: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema in README).")(command)


def make_cli() -> click.Group:
    """Build the command group; a factory, so tests get a fresh one without reloading modules."""

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(package_name="cudnnload")
    def cli() -> None:
        """Find, inspect and diagnose NVIDIA cuDNN: which libcudnn loads, why, and what is wrong."""

    @cli.command("which")
    @click.argument("names", nargs=-1)
    @click.option("--from", "consumer", metavar="PATH", help="Resolve as this shared object would "
                  "(e.g. .../torch/lib/libtorch_cuda.so) instead of this Python process.")
    @click.option("-v", "--verbose", is_flag=True, help="Show the full search trail for each name.")
    @_json_option
    @_friendly
    def which_command(names: tuple[str, ...], consumer: str | None, verbose: bool, as_json: bool) -> None:
        """What each cuDNN NAME resolves to (default: the shim and every sub-library), and why."""
        from cudnnload import report
        from cudnnload.which import which

        result = which(names, consumer=consumer)
        if as_json:
            click.echo(report.dumps("which", result))
        else:
            click.echo(report.which_text(result, verbose))
        sys.exit(EXIT_OK if result.healthy else EXIT_PROBLEMS)

    @cli.command("inspect")
    @click.argument("paths", nargs=-1, type=click.Path())
    @click.option("-v", "--verbose", is_flag=True, help="Also list soname, build-id, VersionChecks and needs.")
    @click.option("--no-cache", is_flag=True, help="Re-read every file instead of using the on-disk memo.")
    @_json_option
    @_friendly
    def inspect_command(paths: tuple[str, ...], verbose: bool, no_cache: bool, as_json: bool) -> None:
        """Every cuDNN install found (or the given files and folders): inventory and verdicts."""
        from cudnnload import report
        from cudnnload.discovery import find

        inventory = find(paths, use_cache=not no_cache)
        if as_json:
            click.echo(report.dumps("inventory", inventory))
        else:
            click.echo(report.inventory_text(inventory, verbose))
        sys.exit(EXIT_OK if inventory.healthy else EXIT_PROBLEMS)

    @cli.command("doctor")
    @_json_option
    @_friendly
    def doctor_command(as_json: bool) -> None:
        """Run every check (find, resolve, probe, driver and GPU, consumers) and say what to fix."""
        from cudnnload import report
        from cudnnload.doctor import doctor, report_text

        result = doctor()
        click.echo(report.dumps("doctor", result) if as_json else report_text(result))
        sys.exit(EXIT_OK if result.healthy else EXIT_PROBLEMS)

    @cli.command("diff")
    @click.argument("left", type=click.Path(exists=True, dir_okay=False))
    @click.argument("right", type=click.Path(exists=True, dir_okay=False))
    @_friendly
    def diff_command(left: str, right: str) -> None:
        """Compare two saved `doctor --json` reports (one where it works, one where it does not)."""
        from cudnnload.doctor import diff_reports, diff_text

        docs = [_read_report(path) for path in (left, right)]
        differences = diff_reports(docs[0], docs[1])
        click.echo(diff_text(differences, left, right))
        sys.exit(EXIT_PROBLEMS if differences else EXIT_OK)

    @cli.command("backends")
    @_json_option
    @_friendly
    def backends_command(as_json: bool) -> None:
        """The convolution backends installed: where each comes from, whether it can run here, and why not."""
        from cudnnload import report
        from cudnnload.backends import list_backends

        statuses = list_backends()
        click.echo(report.dumps("backends", statuses) if as_json else report.backends_text(statuses))
        sys.exit(EXIT_PROBLEMS if any(status.broken for status in statuses) else EXIT_OK)

    return cli


def _read_report(path: str) -> dict[str, Any]:
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        raise UsageError(f"not a readable JSON report: {exc}", path=path) from None
    if not isinstance(doc, dict) or doc.get("kind") != "doctor":
        raise UsageError("not a `cudnnload doctor --json` report", path=path)
    return doc


def main() -> None:
    make_cli()(prog_name="cudnnload")


if __name__ == "__main__":
    main()
