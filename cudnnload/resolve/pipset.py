"""What pip would install for a requirements or lock file, and in which order: pip's own answer, never ours.

pip's resolver runs as pip runs it (``python -m pip install --dry-run --ignore-installed --report``, into a
fresh environment: nothing is installed), in the interpreter whose environment it is; its installation
report (pip's ``InstallationReport``, format 1) gives each distribution, its version, the file it would be
installed from and its metadata. The report lists them in the resolver's order, not the installation's:
pip installs them in the order ``Resolver.get_installation_order`` gives
(``src/pip/_internal/resolution/resolvelib/resolver.py``, pip 20.3 to 26: a distribution before those that
depend on it, by ``get_topological_weights``, ties broken by the canonical name, reversed). That order is
asked of pip itself: the child runs pip's own ``main`` with ``Resolver.resolve`` wrapped to call
``get_installation_order`` on the set it resolved, so the order is pip's own code on pip's own graph.

Lock files: a pinned requirements file is a requirements file. ``pylock.toml`` (PEP 751) is read by pip's
``-r`` from pip 26.1 (experimental, pypa/pip#13876); an older pip cannot read it, and saying so is the answer.
Another tool's lock file (Poetry, uv, Pipenv, PDM, conda-lock) is refused by name: pip reads none of them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudnnload.children import tails, untrusted
from cudnnload.errors import CannotRun, UsageError, clipped

# pip 26.1 reads pylock.toml through -r (its NEWS, "Add experimental support to read requirements from
# standardized pylock.toml files (-r pylock.toml)", pypa/pip#13876).
PYLOCK_PIP = (26, 1)
_PYLOCK_NAME = re.compile(r"^pylock\.([^.]+\.)?toml$")  # PEP 751's file name rule

# Lock files pip cannot read, by name, with the tool that writes them and its export to a pip requirements file.
OTHER_LOCKS: dict[str, tuple[str, str]] = {
    "poetry.lock": ("Poetry", "poetry export -f requirements.txt --output requirements.txt"),
    "uv.lock": ("uv", "uv export --format requirements-txt -o requirements.txt (or --format pylock.toml)"),
    "Pipfile.lock": ("Pipenv", "pipenv requirements > requirements.txt"),
    "Pipfile": ("Pipenv", "pipenv requirements > requirements.txt"),
    "pdm.lock": ("PDM", "pdm export -f requirements -o requirements.txt"),
    "conda-lock.yml": ("conda-lock", "conda-lock render --kind explicit (conda packages: pip cannot install "
                                     "them)"),
    "pixi.lock": ("pixi", "pixi's own environment (conda packages: pip cannot install them)"),
    "environment.yml": ("conda", "conda env create -f environment.yml (conda packages: pip cannot install them)"),
}

# The child: pip's own main, with the resolver's result asked for its installation order (module docstring).
_CHILD = """\
import json, os, sys
try:
    from pip._internal.resolution.resolvelib import resolver as _resolver
    _order = _resolver.Resolver.get_installation_order
except (ImportError, AttributeError) as error:
    _resolver = None
    with open(os.environ["CUDNNLOAD_PIP_ORDER"], "w") as out:
        json.dump({"error": f"{type(error).__name__}: {error}"}, out)
if _resolver is not None:
    _resolve = _resolver.Resolver.resolve

    def resolve(self, *args, **kwargs):
        result = _resolve(self, *args, **kwargs)
        order = [ireq.name for ireq in self.get_installation_order(result)]
        with open(os.environ["CUDNNLOAD_PIP_ORDER"], "w") as out:
            json.dump({"order": order}, out)
        return result

    _resolver.Resolver.resolve = resolve
# a distribution pip has only as source (an sdist, a local folder, a VCS link) gives its metadata only by running
# its code (setup.py, its build backend): refused, so that nothing of the requirements runs before it is installed
try:
    from pip._internal.distributions import sdist as _sdist
    from pip._internal.exceptions import InstallationError as _Refused

    def _from_source(self, *args, **kwargs):
        raise _Refused(f"cudnnload-source-only: {self.req}")

    _sdist.SourceDistribution.prepare_distribution_metadata = _from_source
except (ImportError, AttributeError):
    pass
from pip._internal.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
# pip options that choose another interpreter or platform than the one pip runs in (pip's check_dist_restriction
# then wants binary wheels only and a --target folder, which a dry run never writes into)
_RESTRICTING = ("--python-version", "--platform", "--abi", "--implementation")


@dataclass(frozen=True)
class Planned:
    """One distribution pip would install."""

    name: str  # canonical ("nvidia-cudnn-cu12")
    version: str
    url: str  # the file it would be installed from (download_info.url)
    sha256: str | None
    requires: tuple[str, ...]  # Requires-Dist, as its metadata writes them
    requested: bool  # named in the requirements (not only a dependency)
    extras: tuple[str, ...]  # the extras asked of it

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1].split("#", 1)[0]

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class PipSet:
    """pip's answer: what it would install, first installed first."""

    pip: str  # pip's version
    python: str  # the interpreter pip ran in
    environment: tuple[tuple[str, str], ...]  # the marker environment pip resolved for
    planned: tuple[Planned, ...]  # in pip's installation order (``ordered``), else the report's
    ordered: bool  # the order is pip's own get_installation_order
    order_note: str  # where the order comes from, or why it is not known
    command: tuple[str, ...]  # the pip command line, as run

    def position(self, name: str) -> int:
        return next(index for index, planned in enumerate(self.planned) if planned.name == name)


def pip_version(python: str, environ: Mapping[str, str] | None = None) -> tuple[int, ...]:
    """The version of the pip that ``python -m pip`` runs; CannotRun when there is none."""
    try:
        done = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ if environ is None else environ), check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CannotRun(f"cannot run pip: {exc}", path=python) from None
    match = re.match(r"pip (\d+(?:\.\d+)*)", done.stdout)
    if done.returncode or match is None:
        raise CannotRun(f"{python} -m pip does not run: {(done.stderr or done.stdout).strip()[-200:]}", path=python,
                        fix=f"{python} -m ensurepip")
    return tuple(int(part) for part in match.group(1).split("."))


def requirement_source(path: str, pip: tuple[int, ...]) -> str:
    """``path`` as pip will read it, or UsageError: a file that is not there, another tool's lock file, a
    pylock.toml the pip cannot read."""
    name = os.path.basename(path)
    if not os.path.isfile(path):
        raise UsageError("no such requirements file" if not os.path.exists(path) else "not a file", path=path)
    tool = OTHER_LOCKS.get(name) or _other_lock_by_content(path)
    if tool is not None:
        raise UsageError(f"{tool[0]}'s lock file, which pip cannot read", path=path, fix=tool[1])
    if _PYLOCK_NAME.match(name) and pip < PYLOCK_PIP:
        said = ".".join(map(str, pip))
        raise UsageError(f"a pylock.toml (PEP 751): pip reads one from 26.1 (-r pylock.toml, experimental); this "
                         f"pip is {said}", path=path, fix="python -m pip install -U 'pip>=26.1' in the environment "
                         "it is for, or give a pinned requirements file")
    return path


def _other_lock_by_content(path: str) -> tuple[str, str] | None:
    """A lock file under another name, by what it starts with (the first KB)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    if head.lstrip().startswith("{") and '"_meta"' in head and '"pipfile-spec"' in head:
        return OTHER_LOCKS["Pipfile.lock"]
    if "# This file is automatically @generated by Poetry" in head:
        return OTHER_LOCKS["poetry.lock"]
    if re.search(r"(?m)^requires-python = .*\n(?:.*\n)*?\[\[package\]\]", head) and "\nsource = {" in head:
        return OTHER_LOCKS["uv.lock"]
    if head.startswith("# This file is @generated by PDM"):
        return OTHER_LOCKS["pdm.lock"]
    return None


def resolve_requirements(files: Sequence[str], pip_args: str = "", *, python: str | None = None,
                         environ: Mapping[str, str] | None = None, timeout: float = 1800.0) -> PipSet:
    """What ``python -m pip install -r FILE... PIP_ARGS`` would install into a fresh environment, in pip's order.

    UsageError for input pip cannot read or resolve (one line: pip's own error), CannotRun when pip itself
    does not run. Nothing is installed: the dry run downloads what pip needs to resolve (where the index has
    no PEP 658 metadata, whole wheels) into pip's own temporary folder."""
    interpreter = python or sys.executable
    env = dict(os.environ if environ is None else environ)
    version = pip_version(interpreter, env)
    try:
        extra = shlex.split(pip_args)
    except ValueError as exc:
        raise UsageError(f"--pip-args {pip_args!r}: {exc}") from None
    sources = [requirement_source(path, version) for path in files]
    with tempfile.TemporaryDirectory(prefix="cudnnload-pip-") as scratch:
        report_file, order_file = os.path.join(scratch, "report.json"), os.path.join(scratch, "order.json")
        options = ["--dry-run", "--ignore-installed", "--report", report_file, "--quiet",
                   "--disable-pip-version-check", "--no-input"]
        if any(arg.split("=", 1)[0] in _RESTRICTING for arg in extra):
            options += ["--only-binary=:all:", "--target", os.path.join(scratch, "target")]
        command = ["install", *options, *(word for path in sources for word in ("-r", path)), *extra]
        # pip's own temporary folders in the scratch folder, and pip in a session of its own: stopped at the
        # timeout, it left pip-install-*, pip-build-tracker-* in the user's TMPDIR, and what it started running
        pip_tmp = os.path.join(scratch, "tmp")
        os.mkdir(pip_tmp)
        with untrusted({**env, "CUDNNLOAD_PIP_ORDER": order_file, "TMPDIR": pip_tmp}) as (child_env, _):
            try:
                child = subprocess.Popen([interpreter, "-c", _CHILD, *command], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                         env=child_env)
            except OSError as exc:
                raise CannotRun(f"cannot run pip: {exc}", path=interpreter) from None
            out, err, ended = tails(child, time.monotonic() + timeout, limit=1 << 20)
        if not ended:
            raise CannotRun(f"pip did not resolve the requirements within {timeout:g} s", path=", ".join(files),
                            fix="raise --timeout")
        if child.returncode:
            said = (err or out).decode(errors="replace")
            source = re.search(r"cudnnload-source-only: (.+)", said)
            if source is not None:
                raise UsageError(f"{source.group(1).strip()[:200]} is at hand only as its source, and its metadata "
                                 "comes only from running its code (setup.py or its build backend): refused, as "
                                 "nothing runs before it is installed", path=", ".join(files),
                                 fix="give a wheel of it (pip wheel, then --pip-args '--find-links DIR'), or "
                                 "install it first and ask doctor --python")
            raise UsageError(f"pip cannot resolve the requirements: {_pip_error(said)}",
                             path=", ".join(files), fix="fix the requirements until `pip install --dry-run -r FILE` "
                             "succeeds")
        try:
            with open(report_file, encoding="utf-8") as handle:
                report = json.load(handle)
        except (OSError, ValueError) as exc:
            raise CannotRun(f"pip wrote no installation report: {exc}") from None
        order = _read_json(order_file)
    shown = [interpreter, "-m", "pip", *(word.replace(scratch, "$TMP") for word in command)]
    return _pip_set(report, order, interpreter, shown)


def _read_json(path: str) -> Mapping[str, object]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return {"error": "the child wrote no order"}
    return value if isinstance(value, dict) else {"error": "the child wrote no order"}


def _pip_error(text: str) -> str:
    """pip's error, one line: its ERROR lines (the first and the last say what and why), each cut to 300
    characters (pip quotes the requirement it could not read: a line of a 2 MB file was a 2 MB message)."""
    lines = [clipped(line.strip(), 300) for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    chosen = errors[:1] + errors[-1:] if len(errors) > 1 else errors or lines[-1:]
    return " / ".join(dict.fromkeys(chosen)) or "pip failed without a message"


def _pip_set(report: Mapping[str, object], order: Mapping[str, object], python: str,
             command: Sequence[str]) -> PipSet:
    """The report's distributions in pip's installation order (its report lists them in the resolver's)."""
    from packaging.utils import canonicalize_name

    planned = []
    for item in report.get("install", []):  # type: ignore[attr-defined]
        metadata, info = item.get("metadata", {}), item.get("download_info", {})
        hashes = info.get("archive_info", {}).get("hashes", {})
        planned.append(Planned(str(canonicalize_name(metadata.get("name", "?"))), str(metadata.get("version", "?")),
                               str(info.get("url", "")), hashes.get("sha256"),
                               tuple(metadata.get("requires_dist", ()) or ()), bool(item.get("requested")),
                               tuple(str(canonicalize_name(e)) for e in item.get("requested_extras", ()) or ())))
    names = [str(canonicalize_name(name)) for name in order.get("order", ())]  # type: ignore[attr-defined]
    pip = str(report.get("pip_version", "?"))
    ordered = sorted(names) == sorted(p.name for p in planned)
    if ordered:
        planned.sort(key=lambda p: names.index(p.name))
        note = f"pip {pip}'s own installation order (Resolver.get_installation_order)"
    else:
        note = f"pip {pip} did not give its installation order ({order.get('error', 'it named other distributions')})"
    environment = report.get("environment", {})
    return PipSet(pip, python, tuple(sorted((str(k), str(v)) for k, v in environment.items())),  # type: ignore[attr-defined]
                  tuple(planned), ordered, note, tuple(command))
