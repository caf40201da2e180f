"""Which file each cuDNN name resolves to for a given consumer, and by which rule.

The consumer is this Python process (default) or a shared object such as
``libtorch_cuda.so``. The shim is looked up as the consumer's ``dlopen`` would;
each sub-library as the shim's own run-time ``dlopen`` would (the part ``ldd``
cannot see), with the shim and the consumer as the loader chain.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudnnload.errors import UsageError
from cudnnload.findings import ERROR, INFO, Finding
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import GENERATIONS, Generation, Release, SubLibrary, classify
from cudnnload.resolve.discovery import Step, make_step, plan, python_requester, requester, step_findings
from cudnnload.resolve.elfcache import ElfCache, cache_file, linker_defaults
from cudnnload.resolve.mapped import mapped_libraries
from cudnnload.resolve.sources import cudnn_distributions


@dataclass(frozen=True)
class Which:
    consumer: str
    loaded: tuple[str, ...]  # cuDNN files already mapped in the consumer process
    steps: tuple[Step, ...]
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)


def _names(requested: Sequence[str]) -> tuple[SubLibrary, ...] | None:
    libs: list[SubLibrary] = []
    for name in requested:
        lib = classify(name) or next(
            (found for major in (9, 8, 7) if (found := classify(f"libcudnn_{name}.so.{major}"))), None) or (
            GENERATIONS[9].shim if name in ("shim", "libcudnn") else None)
        if lib is None:
            raise UsageError(f"not a cuDNN library name: {name!r} (try libcudnn_ops.so.9, ops, or cnn_infer)")
        libs.append(lib)
    return tuple(libs) or None


def which(
    names: Sequence[str] = (),
    *,
    consumer: str | None = None,
    environ: Mapping[str, str] | None = None,
    site_paths: Sequence[str] | None = None,
    use_cache: bool = True,
) -> Which:
    """Resolve cuDNN names (default: the v9 shim and every sub-library) as the consumer would."""
    env_vars = dict(os.environ if environ is None else environ)
    cache = ElfCache(cache_file(env_vars) if use_cache else None)
    mapped = mapped_libraries() if consumer is None else ()
    loaded = {os.path.basename(path): path for path in mapped if os.path.basename(path).startswith("libcudnn")}
    env = linker.LinkerEnv.from_environ(env_vars, loaded=loaded, executable=python_requester(cache),
                                        defaults=linker_defaults(cache, env_vars))
    consumer_path = consumer or sys.executable
    consumer_req = requester(consumer, cache) if consumer else None
    if consumer and consumer_req is None:
        raise UsageError("cannot read the consumer as an ELF shared object", path=consumer)
    requested = _names(names)
    gens = sorted({lib.major for lib in requested}, reverse=True) if requested else [9, 8, 7]
    steps: list[Step] = []
    findings: list[Finding] = []
    for major in gens:
        gen = GENERATIONS[major]
        libs = tuple(lib for lib in requested if lib.major == major) if requested else gen.libraries
        shim_step = _shim(gen, consumer_req, env, cache, site_paths)
        if shim_step.path is None and not requested:
            continue  # this generation is not here; try the next older one
        steps += _resolve_generation(gen, libs, shim_step, env, cache, findings, explicit=bool(requested))
        if not requested:
            break
    if not steps:
        findings.append(Finding("not-found", ERROR, "no cuDNN shim (libcudnn.so.9/.8/.7) is reachable by the "
                                "linker or installed as a pip wheel", consumer_path,
                                "pip install nvidia-cudnn-cu12 (or -cu13), or set LD_LIBRARY_PATH to the folder "
                                "holding libcudnn.so.9"))
    cache.save()
    return Which(consumer_path, tuple(sorted(loaded.values())), tuple(steps), tuple(findings))


def _shim(gen: Generation, consumer: linker.Requester | None, env: linker.LinkerEnv, cache: ElfCache,
          site_paths: Sequence[str] | None) -> Step:
    """The shim as the consumer's dlopen (or DT_NEEDED) would find it; None consumer: the executable asks."""
    shim = gen.shim
    asker = consumer.path if consumer else sys.executable
    res = linker.resolve(shim.soname, linker.Chain((consumer,)) if consumer else None, env)
    if res.path:
        return make_step("shim", asker, (shim.soname,), res, os.path.dirname(res.path), cache, env)
    # Not on any linker path: frameworks (PyTorch, JAX) load the pip wheel's shim by absolute path.
    for dist in cudnn_distributions(sys.path if site_paths is None else site_paths):
        for folder in dist.lib_folders:
            path = os.path.join(folder, shim.soname)
            if os.path.exists(path):
                rule = f"by-path (pip wheel {dist.name} {dist.version}; not on any linker path)"
                return make_step("shim", asker, (shim.soname,), res, folder, cache, env, found=(path, rule))
    return make_step("shim", asker, (shim.soname,), res, None, cache, env)


def _resolve_generation(gen: Generation, libs: Sequence[SubLibrary], shim_step: Step, env: linker.LinkerEnv,
                        cache: ElfCache, findings: list[Finding], explicit: bool) -> list[Step]:
    """Steps for ``libs``; an optional library (ext, tensor_ir) that is nowhere is left out unless asked for."""
    steps: list[Step] = []
    if shim_step.path is None:
        findings.append(Finding("not-found", ERROR, f"{gen.shim.soname} would not be found", shim_step.requested_by,
                                "pip install nvidia-cudnn-cu12, or add its folder to LD_LIBRARY_PATH"))
        return [shim_step] if any(lib.key == "shim" for lib in libs) else []
    if shim_step.rule.startswith("by-path"):
        findings.append(Finding("only-by-path", INFO, f"{gen.shim.soname} is not on any linker search path; it "
                                "is found only by programs that load it by absolute path (PyTorch, JAX do)",
                                shim_step.path))
    folder = os.path.dirname(shim_step.path)
    if gen.shim in libs:
        steps.append(shim_step)
    for lib, step in plan(gen, shim_step.path, folder, shim_step.release, cache, env):
        if lib in libs and (step.path or lib.required or explicit):
            steps.append(step)
            findings += _findings(step, lib, folder, shim_step.release)
    return steps


def _findings(step: Step, lib: SubLibrary, folder: str, release: Release | None) -> list[Finding]:
    if step.path is None:
        severity = ERROR if lib.required else INFO
        return [Finding("missing-sublibrary", severity, f"the shim would find none of {', '.join(step.names_tried)}",
                        folder, "reinstall the complete cuDNN next to the shim")]
    return list(step_findings(step, folder, release))

