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

from cudnnload.errors import CudnnloadError

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

    return cli


def main() -> None:
    make_cli()(prog_name="cudnnload")


if __name__ == "__main__":
    main()
