"""Each framework's own rules for the cuDNN it gets: its pins, the major its libraries NEED, its build
version against the runtime, and the releases it lists as broken; findings with fixes. Pure functions of
the consumer's facts (`resolve.consumers.Consumer`) and the cuDNN that loads for it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.fixes import cudnn_requirement, pip_into
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.consumers import FRAMEWORKS, Consumer, Framework, LinksGone, Pin
from cudnnload.verdicts import ERROR, WARNING, Action, Finding, Fix, Subject, fix, manual, unset

_KnownBad = Callable[[Consumer, Release, int | None, str | None], Finding | None]


def _into(consumer: Consumer, requirements: list[str], python: str | None, again: bool = False) -> Action:
    """pip's install of ``requirements`` into the consumer's own site-packages, by whoever installs there;
    ``again``: every file rewritten (the distribution is installed, its files are not what it shipped)."""
    return pip_into(requirements, consumer.site, consumer.pip_env, python=python,
                    options=("--force-reinstall", "--no-deps") if again else (), along=consumer.along)


def pinned_cudnn(consumer: Consumer, python: str | None) -> Action | None:
    """The cuDNN wheel ``consumer`` always requires (not through an extra), installed into its own site; every
    file rewritten when a version it allows is installed already (its folder does not hold what it shipped).
    None when it pins none."""
    pin = next((pin for pin in consumer.pins if not pin.extras), None)
    if pin is None:
        return None
    return _into(consumer, [pin.requirement], python, again=pin.installed is not None and pin.allows(pin.installed))


def _subject(consumer: Consumer, path: str | None = None) -> Subject:
    return Subject(SubjectKind.CONSUMER, path or consumer.site, name=consumer.label)


def _newer_than(consumer: Consumer, release: Release, python: str | None) -> Fix:
    """A cuDNN of the same major, at least ``release``, for the consumer's CUDA."""
    cuda = consumer.pinned_cuda
    base = cudnn_requirement(release.major, cuda)
    if base is None:
        return fix(manual(f"install cuDNN {release} or newer (a {release.major}.x)"))
    name = base.split(">=")[0]
    return fix(_into(consumer, [f"{name}>={release},<{release.major + 1}"], python))


def _cudnn_9_10_0(consumer: Consumer, release: Release, device_count: int | None, python: str | None) -> Finding | None:
    # jax_plugins/cuda/__init__.py, citing the cuDNN 9.10.1 release notes: 9.10.0 reordered enum values
    # of block-scale data types, breaking binary compatibility with other builds.
    if release != Release(9, 10, 0) or consumer.build in (None, Release(9, 10, 0)):
        return None
    return Finding(Code.CONSUMER_KNOWN_BAD, f"{consumer.label} was built with cuDNN {consumer.build}; cuDNN 9.10.0 "
                   "broke binary compatibility by reordering the enum values of block-scale data types",
                   _subject(consumer), _newer_than(consumer, Release(9, 10, 1), python), severity=ERROR)


def _multi_gpu_before_9_10_1(consumer: Consumer, release: Release, device_count: int | None,
                             python: str | None) -> Finding | None:
    # jax_plugins/cuda/__init__.py, citing the cuDNN 9.10.0 release notes: before 9.10.1, an execution
    # plan finalized once and run on several GPUs computed wrong matmuls with cuBLASLt >= 12.9.
    if release >= Release(9, 10, 1) or device_count is None or device_count < 2:
        return None
    return Finding(Code.CONSUMER_KNOWN_BAD, f"cuDNN {release} with {device_count} GPUs: before 9.10.1 some "
                   "multi-GPU matmuls are wrong when cuBLASLt is 12.9 or newer, and JAX refuses that combination",
                   _subject(consumer), _newer_than(consumer, Release(9, 10, 1), python), severity=WARNING)


KNOWN_BAD: dict[str, tuple[_KnownBad, ...]] = {"jax": (_cudnn_9_10_0, _multi_gpu_before_9_10_1)}


def consumer_findings(consumer: Consumer, install_release: Release | None, install_major: int, *,
                      install_version: str | None = None, device_count: int | None = None,
                      environ: Mapping[str, str] | None = None, python: str | None = None) -> tuple[Finding, ...]:
    """The consumer's needs against the install that would load for it.

    ``install_version`` is the wheel version ("9.1.0.70") when the install came from one: pins are then
    checked exactly, else on the release. ``device_count`` enables the known-bad rules that depend on it.
    A pin not met is a warning (the framework may still work); a different major, a runtime older than
    the build, and a known-bad release are errors. ``environ``: the consumer's environment (its framework's
    skip variable); ``python``: the interpreter pip fixes name.
    """
    findings = [finding for pin in consumer.pins
                if (finding := _pin_finding(consumer, pin, install_version or install_release, python)) is not None]
    other = _other_major(consumer, install_major, python)
    if other:
        return (*findings, *other)
    if install_release is None:
        return tuple(findings)
    # a framework without a rule of its own (CTranslate2, CuPy, ...) compares no build version
    framework = FRAMEWORKS.get(consumer.framework) or Framework(consumer.framework, None, None)
    older = _older_than_build(consumer, framework, install_release)
    if older is not None:
        skipped = framework.skip_variable and (environ or {}).get(framework.skip_variable, "0") not in ("", "0")
        stops = framework.enforced and not skipped
        findings.append(Finding(
            Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD,
            f"{consumer.label} was built with cuDNN {consumer.build} and {older}; the cuDNN that loads is "
            f"{install_release}" + (f" ({framework.skip_variable} is set, so {consumer.framework}'s own check will "
                                    "not stop it)" if skipped else
                                    f"; {consumer.framework} stops {framework.checked_at}" if stops and
                                    framework.checked_at else "" if stops else
                                    f"; {consumer.framework} does not stop on it (its check compares the versions "
                                    "at different scales), newer features may be missing"), _subject(consumer),
            _install_fix(consumer, install_release.major, consumer.build, python),
            severity=ERROR if stops else WARNING))
    findings.extend(finding for rule in KNOWN_BAD.get(consumer.framework, ())
                    if (finding := rule(consumer, install_release, device_count, python)) is not None)
    return tuple(findings)


# The variable a framework reads for the platforms it may run on, and its names of the NVIDIA GPU there: JAX's
# JAX_PLATFORMS (config `jax_platforms`), platforms in order of priority, comma-separated; "gpu" is an alias of
# "cuda". Without either, JAX starts on the CPU, never loads its CUDA plugin or cuDNN, and only warns (measured on
# the H200: JAX_PLATFORMS=cpu, the convolution ran on the CPU).
PLATFORM_VARIABLES: dict[str, tuple[str, frozenset[str]]] = {"jax": ("JAX_PLATFORMS", frozenset({"cuda", "gpu"}))}


def gpu_turned_off(consumer: Consumer, environ: Mapping[str, str], gpu: bool) -> Finding | None:
    """The framework's own variable keeps it off the GPU: an error where a GPU is seen, else a warning."""
    rule = PLATFORM_VARIABLES.get(consumer.framework)
    if rule is None:
        return None
    variable, names = rule
    value = environ.get(variable, "")
    platforms = [name.strip().lower() for name in value.split(",") if name.strip()]
    if not platforms or names & set(platforms):
        return None
    return Finding(Code.FRAMEWORK_GPU_OFF, f"{variable}={value!r}: {consumer.label} runs on {', '.join(platforms)} "
                   f"only, never on the GPU, and loads no cuDNN", Subject(SubjectKind.VARIABLE, variable=variable,
                                                                         entry=value),
                   fix(unset(variable), note=f"or put cuda first in {variable} (cuda,cpu)"),
                   severity=ERROR if gpu else WARNING)


def _pin_finding(consumer: Consumer, pin: Pin, loading: str | Release | None, python: str | None) -> Finding | None:
    # the pinned wheel already there (and the cuDNN that loads another): its files are not what pip put there
    repair = fix(_into(consumer, [pin.requirement], python, again=pin.installed is not None and pin.allows(
        pin.installed)))
    if loading is not None and (pin.installed is not None or not pin.extras) and not pin.allows(loading):
        wheel = f" ({pin.distribution} {pin.installed} is installed)" if pin.installed else ""
        return Finding(Code.CONSUMER_PIN_UNMET, f"{consumer.label} requires {pin.requirement}, but the cuDNN that "
                       f"loads is {loading}{wheel}", _subject(consumer), repair)
    if pin.installed is not None and not pin.allows(pin.installed):
        return Finding(Code.CONSUMER_PIN_UNMET, f"{consumer.label} requires {pin.requirement}; {pin.distribution} "
                       f"{pin.installed} is installed", _subject(consumer), repair)
    if pin.installed is None and not pin.extras:
        return Finding(Code.CONSUMER_PIN_UNMET, f"{consumer.label} requires {pin.requirement}, which is not installed "
                       "(a package manager that skipped its nvidia-* dependencies?)", _subject(consumer), repair)
    return None


def _other_major(consumer: Consumer, install_major: int, python: str | None) -> list[Finding]:
    evidence: dict[int, tuple[str, str | None]] = {}
    for need in consumer.needs:
        if need.major is not None:
            evidence.setdefault(need.major, (f"{posixpath.basename(need.path)} NEEDs {need.soname}", need.path))
    if consumer.build_major is not None:
        evidence.setdefault(consumer.build_major, (f"it was built with cuDNN {consumer.build or consumer.build_major}",
                                                   None))
    return [Finding(Code.CONSUMER_NEEDS_OTHER_MAJOR, f"{consumer.label} needs cuDNN {major} ({why}), but the cuDNN "
                    f"that loads for it is {install_major}.x", _subject(consumer, path),
                    _install_fix(consumer, major, None, python))
            for major, (why, path) in sorted(evidence.items()) if major != install_major]


def _install_fix(consumer: Consumer, major: int, build: Release | None, python: str | None) -> Fix:
    """What the consumer pins for ``major``, else a cuDNN of that major at least ``build`` for its CUDA; the
    other way, a build of the consumer for the cuDNN that loads, said as the alternative."""
    other = manual(f"install a {consumer.distribution} built for the cuDNN that loads")
    pinned = next((pin for pin in consumer.pins if pin.major == major), None)
    if pinned is not None:  # installed already (and another cuDNN loads): its files are not the wheel's
        again = pinned.installed is not None and pinned.allows(pinned.installed)
        return fix(_into(consumer, [pinned.requirement], python, again), alternatives=[other])
    cuda = consumer.pinned_cuda
    base = cudnn_requirement(major, cuda)
    if base is None:
        return fix(manual(f"install cuDNN {build or major} or newer of major {major}"), alternatives=[other])
    name = base.split(">=")[0]
    requirement = f"{name}>={build},<{major + 1}" if build is not None else base
    return fix(_into(consumer, [requirement], python), alternatives=[other])


def rejects(consumer: Consumer, release: Release) -> bool:
    """Whether the framework's own rules refuse ``release``: another major than its build's, or a runtime older
    than its build by its rule."""
    build = consumer.build
    if build is not None and build.major != release.major:
        return True
    framework = FRAMEWORKS.get(consumer.framework) or Framework(consumer.framework, None, None)
    return _older_than_build(consumer, framework, release) is not None


def _older_than_build(consumer: Consumer, framework: Framework, release: Release) -> str | None:
    """The framework's rule as text when ``release`` breaks it, else None."""
    build = consumer.build
    if build is None or framework.rule is None or build.major != release.major:
        return None
    if framework.rule == "minor" and release.minor < build.minor:
        return f"needs the same major and a minor of at least {build.minor}"
    if framework.rule == "release" and (release.major, release.minor) < (build.major, build.minor):
        return f"needs at least {build.major}.{build.minor} (the patch level may differ)"
    return None


def links_gone(gone: LinksGone, python: str | None) -> Finding:
    """Distributions whose every file is a link to nothing (`resolve.consumers.LinksGone`): nothing of theirs
    imports or loads, a framework's CUDA build reads as absent and its cuDNN as not installed; each installed
    again (every file rewritten, no dependency changed) is whole, the others being put back beside it."""
    shown = ", ".join(f"{name} {version}" for name, version in gone.distributions[:5])
    more = len(gone.distributions) - 5
    listed = shown + (f" and {more} more" if more > 0 else "")
    count = len(gone.distributions) + len(gone.by_url)
    by = "uv" if gone.installer == "uv" else f"the installer ({gone.installer})"
    where = f"into {gone.into}, which is gone" if gone.into_gone else f"to files under {gone.into} that are not there"
    message = (f"{count} distributions installed here are symbolic links {where} ({by} linked them from its cache, "
               f"and the cache was cleaned since: `uv cache clean`, `uv cache prune`): "
               f"{listed or ', '.join(gone.by_url)}; nothing of theirs can be imported or loaded")
    note = ("installed again they are files of their own unless links are asked for again (uv's --link-mode "
            "symlink, UV_LINK_MODE)")
    if gone.by_url:
        note += f"; install again from where they came from (no index has them): {', '.join(gone.by_url)}"
    actions = (pip_into(list(gone.requirements), gone.site, gone.pip_env, options=("--force-reinstall", "--no-deps"),
                        python=python),) if gone.distributions else ()
    return Finding(Code.LINKS_GONE, message, Subject(SubjectKind.TARGET, gone.site),
                   fix(*actions, note=note) if actions else fix(manual(note)))
