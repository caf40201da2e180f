"""``cudnnload doctor --requirements FILE``: the verdict on a requirements or lock file before anything is installed.

Thin: pip's own resolver says what would be installed and in which order (`resolve.pipset`); the wheels that
decide a cuDNN are read where they lie (`resolve.wheelfacts`: RECORD and the cuDNN build, by HTTP range
requests); `resolve.planned` lays out the new site-packages and follows each framework's loader into it;
`judge.before` says what that means. Nothing is installed and nothing is run but pip's dry run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.codes import Code
from cudnnload.diagnose.installer import by_installer
from cudnnload.errors import CannotRun, UsageError
from cudnnload.judge.before import driver_needs, failing, overwrite_findings, way_findings
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.discovery import Context, context
from cudnnload.resolve.hardware import GpuFacts, given_driver
from cudnnload.resolve.pipset import PipSet, resolve_requirements
from cudnnload.resolve.planned import Layout, Overwrite, Way, layout, matters, ways
from cudnnload.resolve.wheelfacts import WheelError, WheelFacts, progress_to_stderr, wheel_facts
from cudnnload.verdicts import ERROR, Finding, unique


@dataclass(frozen=True)
class Read:
    """One wheel read for the prediction, and what that cost."""

    distribution: str
    filename: str
    how: str  # "range requests", "local file", "remembered", "whole file ..."
    fetched: int  # bytes over the network
    size: int  # the wheel's own size
    files: int  # entries of its RECORD
    cudnn: str | None  # "9.28.0, CUDA 12.9" for a cuDNN wheel


@dataclass(frozen=True)
class Expected:
    """One framework's cuDNN, as predicted."""

    framework: str
    distribution: str
    version: str
    release: Release | None
    shim: str | None
    cudnn_distribution: str | None  # the wheel whose files it gets; None: this machine's, its own, or none
    bundled: bool  # a cuDNN its own wheel ships
    how: str
    surveyed: str | None  # the surveyed wheel its loader was read from
    exact: bool  # that wheel is its own release
    works: bool
    codes: tuple[Code, ...]  # its findings' codes


@dataclass(frozen=True)
class Prediction:
    requirements: tuple[str, ...]
    python: str
    pip: str
    command: tuple[str, ...]
    order: str  # where the installation order comes from
    installs: tuple[str, ...]  # "name version", first installed first
    site: str  # the site-packages the prediction is for
    read: tuple[Read, ...]
    overwrites: tuple[Overwrite, ...]
    frameworks: tuple[Expected, ...]
    driver: str  # what the driver was judged against
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not any(f.severity is ERROR for f in self.findings)


def predict(files: Sequence[str], pip_args: str = "", *, python: str | None = None, driver: str | None = None,
            environ: Mapping[str, str] | None = None, timeout: float | None = None,
            progress: Callable[[str], None] | None = progress_to_stderr) -> Prediction:
    """Everything `doctor --requirements` says. UsageError for input that cannot be one (a file pip cannot read
    or resolve, another tool's lock file, a wheel without RECORD, a ``--driver`` that is no version). ``timeout``
    (``--timeout``): the longest pip may take to resolve (default 30 minutes: it may download)."""
    env = dict(os.environ if environ is None else environ)
    given = driver_option(driver)
    interpreter = _interpreter(python)
    pip_set = resolve_requirements(files, pip_args, python=interpreter, environ=env,
                                   **({} if timeout is None else {"timeout": timeout}))
    site = _purelib(interpreter, env)
    facts = _facts(pip_set, env, progress)
    ctx = context(env)
    now = layout(pip_set, facts, site)
    found = ways(pip_set, now, ctx)
    library_path = env.get("LD_LIBRARY_PATH", "")
    judged = {way.consumer.label: way_findings(way, python=interpreter, library_path=library_path) for way in found}
    outcomes = _outcomes(pip_set, facts, now, ctx, interpreter, library_path)
    facts_now = given if given is not None else _this_driver(env)
    findings = [*overwrite_findings(now.overwrites, outcomes, site=site, python=interpreter),
                *(f for way in found for f in judged[way.consumer.label]),
                *driver_needs(found, now.staying, facts_now, given=given is not None, python=interpreter)]
    return Prediction(
        tuple(os.path.abspath(f) for f in files), interpreter, pip_set.pip, pip_set.command, pip_set.order_note,
        tuple(p.label for p in pip_set.planned), site, tuple(_read(f) for f in facts.values()), now.overwrites,
        tuple(_expected(way, judged[way.consumer.label]) for way in found),
        _driver_text(facts_now, given is not None), unique(by_installer(findings)))


def driver_option(text: str | None) -> GpuFacts | None:
    """``--driver``'s facts; UsageError for a text that is no version."""
    if text is None:
        return None
    facts = given_driver(text)
    if facts is None:
        raise UsageError(f"--driver {text!r}: neither a driver version (535.104.05) nor a CUDA version (12.2)")
    return facts


def _this_driver(env: Mapping[str, str]) -> GpuFacts | None:
    from cudnnload.loading.gpu import gpu_facts

    facts = gpu_facts(env)
    return facts if facts.driver_version is not None else None


def _driver_text(facts: GpuFacts | None, given: bool) -> str:
    if facts is None or facts.driver_cuda is None:
        return "no NVIDIA driver here (give --driver VERSION)"
    return f"{'given' if given else 'this machine'}: driver for CUDA {facts.driver_cuda}"


def _interpreter(python: str | None) -> str:
    if python is None:
        return sys.executable
    candidates = [os.path.join(python, "bin", name) for name in ("python", "python3")] if os.path.isdir(python) \
        else [python]
    found = next((path for path in candidates if os.path.isfile(path) and os.access(path, os.X_OK)), None)
    if found is None:
        raise UsageError("no Python interpreter there", path=python, fix="give a python executable or a venv folder")
    return os.path.abspath(found)


def _purelib(python: str, env: Mapping[str, str]) -> str:
    """The site-packages pip installs pure and platform wheels into for ``python`` (sysconfig's purelib)."""
    try:
        done = subprocess.run([python, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, timeout=60, env=dict(env), check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CannotRun(f"cannot ask {python} for its site-packages: {exc}", path=python) from None
    return done.stdout.strip()


def _facts(pip_set: PipSet, env: Mapping[str, str], progress: Callable[[str], None] | None) -> dict[str, WheelFacts]:
    """RECORD (and a cuDNN wheel's build) of each distribution that decides a cuDNN, read where it lies."""
    wanted = [p for p in pip_set.planned if matters(p)]
    facts = {}
    for index, planned in enumerate(wanted, start=1):
        if progress is not None:
            progress(f"[{index}/{len(wanted)}] {planned.filename}")
        try:
            facts[planned.name] = wheel_facts(planned.name, planned.version, planned.url, planned.sha256,
                                              cudnn=planned.name.startswith("nvidia-cudnn-"), environ=env,
                                              progress=progress)
        except WheelError as exc:
            raise UsageError(exc.reason, path=planned.url) from None
    return facts


def _outcomes(pip_set: PipSet, facts: Mapping[str, WheelFacts], now: Layout, ctx: Context, python: str,
              library_path: str) -> dict[str, bool]:
    """For each distribution of an overwrite: whether every framework works when it is the last installed."""
    names = {label.split(" ")[0] for pair in now.overwrites for label in (pair.first, pair.last)}
    outcomes = {}
    for name in sorted(names):
        last = [p for p in pip_set.planned if p.name != name] + [p for p in pip_set.planned if p.name == name]
        alternative = ways(replace(pip_set, planned=tuple(last)), layout(replace(pip_set, planned=tuple(last)), facts,
                                                                         now.site), ctx)
        outcomes[name] = not any(failing(way_findings(way, python=python, library_path=library_path))
                                 for way in alternative)
    return outcomes


def _read(facts: WheelFacts) -> Read:
    build = facts.cudnn
    said = None if build is None else f"{build.release or '?'}, CUDA " + (
        f"{build.cudart_version // 1000}.{build.cudart_version % 1000 // 10}" if build.cudart_version else "?")
    return Read(facts.name, facts.filename, facts.how, facts.fetched, facts.size, len(facts.record), said)


def _expected(way: Way, findings: Sequence[Finding]) -> Expected:
    consumer, seen = way.consumer, way.cudnn
    return Expected(consumer.framework, consumer.distribution, consumer.version, seen.release if seen else None,
                    seen.shim if seen else None, seen.distribution if seen else None, bool(seen and seen.bundled),
                    way.error if seen is None and way.error else way.how,
                    way.survey.wheel.provenance.wheel if way.survey else None,
                    bool(way.survey and way.survey.exact), not failing(findings),
                    tuple(dict.fromkeys(f.code for f in findings)))
