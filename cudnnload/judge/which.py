"""What ``which`` says of the steps it resolved: the `Which` result, the names a user may ask for, and the
findings about a shim no search finds, one found only by path, and the install's findings about the names
asked for. Pure: `diagnose.which` resolves the steps (resolve's linker) and gathers the install first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cudnnload.codes import Code, SubjectKind
from cudnnload.errors import UsageError
from cudnnload.judge.judged import Judged
from cudnnload.judge.policy import CODES
from cudnnload.resolve.catalog import GENERATIONS, Generation, SubLibrary, classify
from cudnnload.resolve.discovery import Step
from cudnnload.verdicts import ERROR, Finding, Fix, Subject


@dataclass(frozen=True)
class Which:
    consumer: str
    loaded: tuple[str, ...]  # cuDNN files already mapped in the consumer process
    steps: tuple[Step, ...]
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not any(f.severity is ERROR for f in self.findings)


def requested_names(requested: Sequence[str]) -> tuple[SubLibrary, ...] | None:
    libs: list[SubLibrary] = []
    for name in requested:
        lib = classify(name) or next(
            (found for major in (9, 8, 7) if (found := classify(f"libcudnn_{name}.so.{major}"))), None) or (
            GENERATIONS[9].shim if name in ("shim", "libcudnn") else None)
        if lib is None:
            raise UsageError(f"not a cuDNN library name: {name!r} (try libcudnn_ops.so.9, ops, or cnn_infer)")
        libs.append(lib)
    return tuple(libs) or None


def not_found(gen: Generation, requested_by: str | None, repair: Fix, *, generic: bool = False) -> Finding:
    """No search finds ``gen``'s shim for the program that asks (``generic``: of any generation, none asked)."""
    said = ("no cuDNN shim (libcudnn.so.9/.8/.7) is reachable by the linker or installed as a pip wheel" if generic
            else f"{gen.shim.soname} would not be found")
    return Finding(Code.NOT_FOUND, said, Subject(SubjectKind.CONSUMER, requested_by, "shim"), repair)


def only_by_path(gen: Generation, shim: Step) -> Finding:
    return Finding(Code.ONLY_BY_PATH, f"{gen.shim.soname} is not on any linker search path; it is found only by "
                   "programs that load it by absolute path (PyTorch, JAX do) or whose own RPATH names its folder",
                   Subject(SubjectKind.FILE, shim.path, "shim"))


def about(install: Judged, keys: set[str]) -> list[Finding]:
    """The install's findings about these sub-libraries (and what they need), and its search-path ones."""
    return [f for f in install.findings
            if f.subject.library in keys or any(c.library in keys for c in f.consequences)
            or (f.code in CODES and f.subject.library is None)]  # search-path policy about the whole install


