"""``cudnnload doctor``: every check, one short report, a fix for each problem; and ``diff`` of two reports.

Thin: it runs the stages (discovery, which, the child probe, the driver, the
consumers) and arranges what they return. Nothing here decides a verdict that
a stage could decide.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cudnnload import __version__
from cudnnload.findings import ERROR, INFO, WARNING, Finding
from cudnnload.loading.loader import choose_install, probe_files
from cudnnload.loading.probe import ProbeResult, probe
from cudnnload.resolve.discovery import Install, Inventory, find
from cudnnload.resolve.which import Which, which

# Variables that change what loads or how cuDNN behaves; a report records them for `diff`.
RELEVANT_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDNN_PATH", "CUDNN_HOME", "CUDA_HOME", "CUDA_PATH",
                      "CONDA_PREFIX", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING", "CUDNN_LOGLEVEL_DBG",
                      "CUDNN_LOGDEST_DBG", "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK")
_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


@dataclass(frozen=True)
class Check:
    name: str  # "installs", "coherent", "probe", "driver", "handle", "consumers"
    status: str  # "ok", "warn", "fail", "info" or "skip"
    summary: str


@dataclass(frozen=True)
class Report:
    cudnnload: str
    python: str
    machine: str
    environment: tuple[tuple[str, str], ...]
    chosen: str | None  # folder of the install load() would take
    release: str | None
    distribution: str | None
    inventory: Inventory
    which: Which
    probe: ProbeResult | None
    gpu: Any  # gpu.GpuFacts
    consumers: tuple[Any, ...]  # consumers.Consumer
    checks: tuple[Check, ...]
    findings: tuple[Finding, ...]  # every finding, errors first, each once

    @property
    def healthy(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)


def doctor(environ: Mapping[str, str] | None = None, *, site_paths: list[str] | None = None,
           timeout: float = 60.0) -> Report:
    """Run every check on this machine and environment."""
    from cudnnload.diagnose.consumers import consumer_findings, find_consumers
    from cudnnload.loading.gpu import gpu_facts, gpu_findings

    env = dict(os.environ if environ is None else environ)
    # Reading a framework's build version imports it in a child (torch: ~2 s): overlap that with the rest.
    pool = ThreadPoolExecutor(max_workers=1)
    pending = pool.submit(find_consumers, site_paths, environ=env, timeout=timeout)
    inventory = find(environ=env, site_paths=site_paths)
    resolved = which(environ=env, site_paths=site_paths)
    install, rejected = choose_install(inventory.installs)
    checks: list[Check] = [_installs_check(inventory, install, rejected)]
    # every install's problems: a framework may load any of them by path, whichever load() prefers
    findings: list[Finding] = list(inventory.findings) + list(resolved.findings)
    findings += [f for i in inventory.installs for f in i.all_findings]
    result: ProbeResult | None = None
    if install is not None:
        checks.append(_coherence_check(install))
        result = probe(probe_files(install), install.major, create=True, environ=env, timeout=timeout)
        checks.append(_probe_check(result))
        findings += _probe_findings(result, install)
    facts = gpu_facts(env)
    cudart = result.step("cudnnGetCudartVersion") if result else None
    max_sm = result.step("cudnnGetMaxDeviceVersion") if result else None
    passed = bool(result and result.completed and all(s.ok for s in result.steps if s.name.endswith("VersionCheck")))
    gpu = gpu_findings(facts, release=install.release if install else None,
                       cudart_version=cudart.value if cudart else None,
                       max_device_version=max_sm.value if max_sm else None,
                       gpu_code={c.library or "": c.elf.gpu_code for c in install.files if c.elf} if install else {},
                       version_checks_passed=passed)
    if any(f.code == "no-driver" for f in gpu):  # said once, by the driver check
        findings = [f for f in findings if f.code != "no-driver"]
    findings += gpu
    checks.append(_driver_check(facts, gpu))
    checks.append(_handle_check(result, facts))
    consumers = pending.result()
    pool.shutdown()
    for consumer in consumers:
        if install is not None:
            findings += consumer_findings(consumer, install.release, install.major, environ=env,
                                          install_version=install.distribution.split()[-1]
                                          if install.distribution else None,
                                          device_count=len(facts.devices))
    checks.append(Check("consumers", "ok" if not any(f.code.startswith("consumer-") and f.severity == ERROR
                                                     for f in findings) else "fail",
                        ", ".join(c.label for c in consumers) or "no PyTorch, JAX, ONNX Runtime or TensorFlow here"))
    return Report(
        cudnnload=__version__, python=sys.version.split()[0], machine=f"{platform.system()} {platform.machine()}",
        environment=tuple((name, env[name]) for name in RELEVANT_VARIABLES if name in env),
        chosen=install.folder if install else None, release=str(install.release) if install else None,
        distribution=install.distribution if install else None, inventory=inventory, which=resolved,
        probe=result, gpu=facts, consumers=consumers, checks=tuple(checks), findings=_unique(findings),
    )


def _unique(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    seen: dict[tuple[str, str | None, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.code, f.path, f.message), f)
    return tuple(sorted(seen.values(), key=lambda f: _ORDER.get(f.severity, 3)))


def _installs_check(inv: Inventory, install: Install | None, rejected: tuple[str, ...]) -> Check:
    found = ", ".join(f"{i.release or '?'} in {i.folder}" for i in inv.installs) or "none"
    if install is None:
        return Check("installs", "fail", f"no loadable cuDNN ({found})" +
                     (f"; passed over: {'; '.join(rejected)}" if rejected else ""))
    where = install.distribution or install.found_via
    passed = f"; passed over: {'; '.join(rejected)}" if rejected else ""
    return Check("installs", "warn" if rejected else "ok",
                 f"{len(inv.installs)} found; will load cuDNN {install.release} ({where}){passed}")


def _coherence_check(install: Install) -> Check:
    outside = [s for s in install.plan if not s.inside_install]
    if not outside:
        return Check("coherent", "ok", f"the shim loads all {len(install.plan)} sub-libraries from its own folder")
    names = ", ".join(f"{s.library} ({s.path or 'not found'})" for s in outside)
    return Check("coherent", "fail", f"the shim would not get these from its folder: {names}")


def _probe_check(result: ProbeResult) -> Check:
    """Loading and version checks; cudnnCreate has its own check ("handle")."""
    checks = [s for s in result.steps if s.name.endswith("VersionCheck")]
    passed = sum(1 for s in checks if s.ok)
    cudart = result.step("cudnnGetCudartVersion")
    cuda = f", built for CUDA {cudart.value // 1000}.{cudart.value % 1000 // 10}" if cudart and cudart.value else ""
    failed = [s for s in result.failures if s.name != "cudnnCreate"]
    took = f"{result.seconds * 1000:.0f} ms in a child process"
    if result.completed and not failed:
        return Check("probe", "ok", f"loads; {passed}/{len(checks)} VersionChecks pass{cuda} ({took})")
    return Check("probe", "fail", f"{result.verdict} ({took})")


def _probe_findings(result: ProbeResult, install: Install) -> list[Finding]:
    if result.completed and not result.failures:
        return []
    if not result.completed:
        return [Finding("probe-crashed", ERROR, f"loading cuDNN {install.release} kills the process: "
                        f"{result.verdict}", install.folder, "fix the findings above, or reinstall cuDNN")]
    failed = [s for s in result.failures if s.name != "cudnnCreate"]
    return [Finding("probe-failed", ERROR, f"{s.name}: {s.status_name or ''} {s.detail}".strip(), install.folder,
                    "reinstall the complete cuDNN; `cudnnload inspect` shows which file") for s in failed]


def _driver_check(facts: Any, findings: tuple[Finding, ...]) -> Check:
    if not facts.driver_found:
        worst = min((f.severity for f in findings), key=lambda s: _ORDER.get(s, 3), default=INFO)
        return Check("driver", "fail" if worst == ERROR else "info", facts.reason or "no NVIDIA driver")
    gpus = ", ".join(d.label for d in facts.devices) or "no GPU visible"
    bad = any(f.severity == ERROR for f in findings)
    return Check("driver", "fail" if bad else "ok", f"driver for CUDA {facts.driver_cuda}; {gpus}")


def _handle_check(result: ProbeResult | None, facts: Any) -> Check:
    create = result.step("cudnnCreate") if result else None
    if create is None:
        return Check("handle", "skip", "cuDNN did not load far enough to try cudnnCreate")
    if create.ok:
        return Check("handle", "ok", "cudnnCreate succeeded in the child process")
    reason = f"{create.status_name} ({create.detail})" if create.detail else str(create.status_name)
    status = "skip" if not facts.driver_found and not facts.hardware else "fail"
    return Check("handle", status, f"cudnnCreate: {reason}")


# --- diff ------------------------------------------------------------------------

def _facts(doc: Mapping[str, Any]) -> dict[str, str]:
    """The facts of a saved report (``doctor --json``) that decide whether cuDNN works, flattened."""
    result = doc.get("result", doc)
    out: dict[str, str] = {
        "python": str(result.get("python")), "machine": str(result.get("machine")),
        "cuDNN chosen": f"{result.get('release')} in {result.get('chosen')}",
        "distribution": str(result.get("distribution")),
    }
    for name, value in result.get("environment", []):
        out[f"${name}"] = value
    host = (result.get("inventory") or {}).get("host") or {}
    out["glibc"] = ".".join(map(str, host.get("glibc") or [])) or "?"
    for install in (result.get("inventory") or {}).get("installs", []):
        if install.get("folder") == result.get("chosen"):
            for step in install.get("plan", []) + install.get("dependencies", []):
                out[f"loads {step['library']}"] = f"{step.get('path')} ({step.get('rule')})"
    for step in (result.get("probe") or {}).get("steps", []):
        value = step.get("value") if step.get("value") is not None else step.get("status_name") or step.get("ok")
        out[f"probe {step['name']}"] = str(value)
    if result.get("probe"):
        out["probe verdict"] = str(result["probe"].get("verdict"))
    gpu = result.get("gpu") or {}
    out["driver"] = str(gpu.get("driver_version"))
    for device in gpu.get("devices", []):
        out[f"GPU {device['index']}"] = f"{device['name']} sm_{device['capability'][0]}{device['capability'][1]}"
    for consumer in result.get("consumers", []):
        out[f"consumer {consumer['distribution']}"] = f"{consumer['version']} (built with cuDNN {consumer['build']})"
    for f in result.get("findings", []):
        out[f"finding {f['code']} {f.get('path') or ''}".rstrip()] = f["severity"]
    return out


@dataclass(frozen=True)
class Difference:
    what: str
    left: str | None
    right: str | None


def diff_reports(left: Mapping[str, Any], right: Mapping[str, Any]) -> tuple[Difference, ...]:
    """What differs between two ``doctor --json`` reports, among the facts that matter."""
    a, b = _facts(left), _facts(right)
    return tuple(Difference(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b))
                 if a.get(key) != b.get(key))
