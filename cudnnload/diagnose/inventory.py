"""Every cuDNN on the machine, gathered and judged: `find` and `inspect` gather resolve's facts
(`discovery.gather`) in one context and hand them to `judge.inventory.judge_inventory`; `judged_install_of`
does the same for the install one file belongs to.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from cudnnload.errors import UsageError
from cudnnload.judge.installs import judge_install
from cudnnload.judge.inventory import judge_inventory
from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.resolve.access import Access
from cudnnload.resolve.discovery import Context, context, gather, install_of
from cudnnload.resolve.sources import Distribution


def find(paths: Sequence[str] = (), *, environ: Mapping[str, str] | None = None,
         site_paths: Sequence[str] | None = None, system: bool | None = None, use_cache: bool = True,
         ctx: Context | None = None, python: str | None = None, verify: bool = False) -> JudgedInventory:
    """Every cuDNN install on the machine (or only under ``paths`` when given), with verdicts.

    ``system`` (default: True unless ``paths`` are given) adds the ld.so cache, the default linker folders
    and /usr/local/cuda*; ``site_paths`` (default ``sys.path``) is where pip distributions are looked for;
    ``ctx`` (default: this Python in ``environ``) is the process the loads are judged for; ``python`` the
    interpreter whose environment it is (pip fixes name it); ``verify``: check each RECORD-listed file's
    sha256 too. A given file stands for the install it belongs to. Nothing is loaded."""
    ctx = ctx or context(environ, use_cache=use_cache, verify=verify)
    facts = gather(paths, ctx=ctx, site_paths=site_paths, system=system)
    judged = judge_inventory(facts, ctx, python or sys.executable, Access())
    ctx.cache.save()  # what judging read (the symbols two files of a load share), for the next process
    return judged


def inspect(paths: Sequence[str], *, environ: Mapping[str, str] | None = None, use_cache: bool = True,
            verify: bool = False) -> JudgedInventory:
    """Inventory and verdicts for the given files and folders only."""
    if not paths:
        raise UsageError("inspect() needs at least one file or folder")
    return find(paths, environ=environ, system=False, use_cache=use_cache, verify=verify)


def judged_install_of(path: str, ctx: Context, found_via: str, dists: Sequence[Distribution] = (),
                      python: str | None = None, access: Access | None = None) -> Judged | None:
    """`discovery.install_of`, judged."""
    install = install_of(path, ctx, found_via, dists)
    return None if install is None else judge_install(install, ctx, access or Access(), python)
