"""`cudnnload fleet`: the doctor reports of a whole cluster, grouped, with the odd nodes shown.

Reports come from a folder (written by ``cudnnload doctor --output DIR/%N.json`` under Slurm, pdsh, a
Kubernetes DaemonSet ...) or are collected through a running Ray cluster: one task per alive node, pinned
to it with Ray's node-affinity scheduling, that runs ``cudnnload doctor --json`` in a child process in the
node's own environment (the raylet's, which its workers inherit).

Nodes are grouped by a fingerprint of the facts that decide whether cuDNN works there (`doctor.decisive_facts`: the
chosen install and release, the file each library resolves to, the probe's answers, the driver, the GPUs,
the relevant environment, the findings). Each group keeps one report, the rest only node names: memory
grows with the number of distinct groups, not of nodes. Every other group is shown by its difference from
the reference group, the largest healthy one (else the largest: then no fix is offered, as no node shows
how a working one looks), as ``cudnnload diff`` shows two reports (`doctor.diff_reports`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cudnnload.children import isolated
from cudnnload.codes import Severity
from cudnnload.diagnose.doctor import Difference, decisive_facts, diff_reports, report_problem
from cudnnload.errors import CannotRun, UsageError
from cudnnload.files import NotRegularFile, read_regular
from cudnnload.verdicts import Action, Fix, fix, manual, pip_install, set_variable, unset

MAX_REPORT_BYTES = 64 << 20  # a doctor report is some ten to a few hundred KB
SHOWN_NAMES = 6  # node names shown per group or finding before "and N more"


@dataclass(frozen=True)
class NodeReport:
    """What one node gave: its doctor report, or why there is none."""

    node: str
    doc: Mapping[str, Any] | None
    problem: str | None = None  # the task failed or timed out, the file is not a report ...


@dataclass(frozen=True)
class Group:
    """Nodes whose reports agree on every fact that decides cuDNN."""

    fingerprint: str
    nodes: tuple[str, ...]
    healthy: bool
    release: str | None
    chosen: str | None
    differences: tuple[Difference, ...] = ()  # against the reference group; () for it
    fix: Fix | None = None  # what would make it like the reference group, where the difference says


@dataclass(frozen=True)
class FleetFinding:
    code: str
    severity: str
    message: str
    fix: Mapping[str, Any] | None  # the node's report's fix, as its JSON has it: {"text", "actions"}
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Fleet:
    nodes: int
    groups: tuple[Group, ...]  # the reference group first (the largest healthy one), then by size
    findings: tuple[FleetFinding, ...]  # errors first, then by how many nodes
    failed: tuple[NodeReport, ...]  # nodes without a usable report, with the reason

    @property
    def healthy(self) -> bool:
        """Every node reported, every report is healthy, and all agree."""
        return not self.failed and len(self.groups) <= 1 and all(g.healthy for g in self.groups)


# --- reading ---------------------------------------------------------------------------------------------

def read_folder(folder: str) -> Iterator[NodeReport]:
    """Every ``*.json`` in ``folder`` (and its subfolders), one at a time, named by its path without
    ``.json`` relative to the folder. UsageError when the folder holds none."""
    if not os.path.isdir(folder):
        raise UsageError("not a folder", path=folder)
    if not os.access(folder, os.R_OK | os.X_OK):  # os.walk says nothing of a folder it cannot list
        raise UsageError("this user cannot list it (permission denied)", path=folder)
    paths = sorted(os.path.join(root, name) for root, _, names in os.walk(folder) for name in names
                   if name.endswith(".json") and not name.startswith("."))
    if not paths:
        raise UsageError("no reports here (*.json)", path=folder,
                         fix="on each node: cudnnload doctor --output FOLDER/%N.json")
    for path in paths:
        node = os.path.relpath(path, folder).removesuffix(".json")
        try:
            yield NodeReport(node, parse_report(read_regular(path, MAX_REPORT_BYTES + 1), path))
        except (OSError, NotRegularFile, UsageError) as exc:
            yield NodeReport(node, None, getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc))


# The kinds of doctor's other reports (cli.py), and the form of the command that writes each
_FORMS = {"doctor-program": "-- COMMAND", "doctor-process": "--pid PID", "doctor-requirements": "--requirements"}


def parse_report(data: bytes, where: str) -> dict[str, Any]:
    """A ``cudnnload doctor --json`` document; UsageError naming what it is instead."""
    if len(data) > MAX_REPORT_BYTES:
        raise UsageError(f"larger than {MAX_REPORT_BYTES >> 20} MB: not a doctor report", path=where)
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON ({exc.msg} at byte {exc.pos}; cut short?)", path=where) from None
    except ValueError as exc:  # not UTF-8
        raise UsageError(f"not JSON ({exc})", path=where) from None
    except RecursionError:  # json's decoder recurses per level: a report is a few levels deep
        raise UsageError("not a doctor report: JSON nested too deeply", path=where) from None
    if not isinstance(doc, dict) or doc.get("kind") != "doctor" or not isinstance(doc.get("result"), dict):
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        form = _FORMS.get(kind) if isinstance(kind, str) else None
        if form is not None:  # doctor's other forms judge one program, one process or a requirement, not a machine
            raise UsageError(f"the report of `cudnnload doctor {form}`, which judges that alone: diff and fleet "
                             "compare reports of a machine or a target", path=where,
                             fix="on each machine: cudnnload doctor --json [TARGET] > FILE.json")
        raise UsageError(f"not a `cudnnload doctor --json` report (kind {kind!r})", path=where)
    if doc.get("schema") != 1:
        raise UsageError(f"report schema {doc.get('schema')!r}; this cudnnload reads schema 1", path=where)
    problem = report_problem(doc)
    if problem is not None:
        raise UsageError(f"unreadable report: {problem}", path=where)
    return doc


# --- through Ray -----------------------------------------------------------------------------------------

def node_doctor(args: Sequence[str], timeout: float) -> tuple[int | None, str, str]:
    """Runs on a node, in a Ray worker: ``cudnnload doctor --json ARGS`` in a child process with the
    worker's environment (the node's), so that no cuDNN is loaded into the worker itself."""
    # `-m` would import from the worker's current folder first: the command line, isolated (`children`)
    command = [sys.executable, "-c", isolated("from cudnnload.cli import main\nmain()\n"), "doctor", "--json", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, "", f"cudnnload doctor did not end within {timeout:g} s"
    except OSError as exc:
        return None, "", f"cannot run {sys.executable}: {exc}"
    return done.returncode, done.stdout, done.stderr


def collect_ray(address: str | None, args: Sequence[str], *, timeout: float = 120.0,
                init_timeout: float = 30.0) -> list[NodeReport]:
    """One doctor per alive node of the Ray cluster at ``address`` (None: ``auto``, the cluster this
    machine belongs to). CannotRun when Ray is missing, UsageError when the cluster cannot be reached."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise CannotRun("Ray is not installed here", fix="pip install 'cudnnload[ray]'") from None
    _connect(ray, address or "auto", init_timeout)
    try:
        nodes = [node for node in ray.nodes() if node.get("Alive")]
        names = _node_names(nodes)
        task = ray.remote(num_cpus=0, max_retries=0)(node_doctor)
        pending = {
            task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                         name=f"cudnnload doctor on {names[node['NodeID']]}").remote(list(args), timeout): node
            for node in nodes}
        reports: dict[str, NodeReport] = {}
        deadline = time.monotonic() + timeout + 30  # the child's own limit, and the worker's start
        while pending and time.monotonic() < deadline:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            for ref in done:
                node = pending.pop(ref)
                reports[node["NodeID"]] = _answer(ray, ref, names[node["NodeID"]])
        for ref, node in pending.items():
            ray.cancel(ref, force=True)
            reports[node["NodeID"]] = NodeReport(names[node["NodeID"]], None,
                                                 f"no report within {timeout + 30:g} s (the task was cancelled)")
        return [reports[node["NodeID"]] for node in nodes]
    finally:
        ray.shutdown()


def _connect(ray: Any, address: str, timeout: float) -> None:
    """ray.init, bounded: an address nobody answers at is an error at once (nothing listens) or in
    ``timeout`` seconds (something does, but not a Ray cluster), not a hang. The first connection is tried
    in a child process: Ray's native client retries for long and logs each try to file descriptor 2."""
    import socket

    fix = "start one (`ray start --head`) or give its address: cudnnload fleet --ray HOST:6379"
    host, _, port = address.rpartition(":")
    if host and port.isdigit() and not address.startswith("ray://"):
        try:
            socket.create_connection((host, int(port)), timeout=min(timeout, 5.0)).close()
        except OSError as exc:
            raise UsageError(f"no Ray cluster at {address}: {exc.strerror or exc}", path=address, fix=fix) from None
    trial = ("import sys, ray\nray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False)\n"
             "ray.shutdown()")
    try:
        done = subprocess.run([sys.executable, "-c", isolated(trial), address], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"no Ray cluster answered at {address} within {timeout:g} s", path=address,
                         fix=fix) from None
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if "Error" in line or "error" in line]
        reason = (said or done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise UsageError(f"cannot connect to the Ray cluster at {address}: {reason.strip()}", path=address,
                         fix=fix)
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)


def _node_names(nodes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each node's host name; where several share one (nodes of one machine), Ray's node name, else the
    host name and the start of the node ID."""
    hosts = [str(node.get("NodeManagerHostname") or node.get("NodeManagerAddress")) for node in nodes]
    names: dict[str, str] = {}
    for node, host in zip(nodes, hosts, strict=True):
        name = host
        if hosts.count(host) > 1:
            own = str(node.get("NodeName") or "")
            name = own if own and own != node.get("NodeManagerAddress") else f"{host}:{str(node['NodeID'])[:8]}"
        names[node["NodeID"]] = name
    return names


def _answer(ray: Any, ref: Any, name: str) -> NodeReport:
    try:
        returncode, out, err = ray.get(ref)
    except Exception as exc:  # noqa: BLE001 (a dead node, a crashed worker ...: the node's answer)
        first = (str(exc).strip().splitlines() or [""])[0]
        return NodeReport(name, None, f"the task failed: {type(exc).__name__}: {first}".rstrip(": "))
    if returncode is None:
        return NodeReport(name, None, err)
    try:
        return NodeReport(name, parse_report(out.encode(), name))
    except UsageError:
        last = (err.strip().splitlines() or [f"exit status {returncode}, no report"])[-1]
        return NodeReport(name, None, f"cudnnload doctor gave no report: {last}")


# --- summing up ------------------------------------------------------------------------------------------

@dataclass
class _Building:
    fingerprint: str
    doc: Mapping[str, Any]  # the first node's report: the group's representative
    nodes: list[str] = field(default_factory=list)


def summarize(reports: Iterable[NodeReport]) -> Fleet:
    """Group the nodes (reading ``reports`` once, in one pass), then compare each group with the reference group."""
    groups: dict[str, _Building] = {}
    findings: dict[tuple[str, str, str], tuple[Mapping[str, Any] | None, list[str]]] = {}
    failed: list[NodeReport] = []
    count = 0
    for report in reports:
        count += 1
        if report.doc is None:
            failed.append(report)
            continue
        facts = decisive_facts(report.doc)
        key = hashlib.sha1(json.dumps(sorted((fact.kind, fact.name, value) for fact, value in facts.items())).encode(),
                           usedforsecurity=False).hexdigest()[:12]
        group = groups.get(key)
        if group is None:  # the first node of a setup: its report is kept, the others' only their names
            group = groups[key] = _Building(key, report.doc)
        group.nodes.append(report.node)
        for finding in report.doc["result"].get("findings") or ():
            if not isinstance(finding, dict):
                continue
            found = (str(finding.get("code")), str(finding.get("severity")), str(finding.get("message")))
            said = finding.get("fix")
            findings.setdefault(found, (said if isinstance(said, dict) else None, []))[1].append(report.node)
    for g in groups.values():
        g.nodes.sort()
    # The group the others are compared with: the largest healthy one (a healthy node is never told to copy
    # an unhealthy one, whatever the sizes or names), else the largest; the others follow, largest first.
    ordered = sorted(groups.values(), key=lambda g: (-len(g.nodes), g.nodes[0]))
    majority = next((g for g in ordered if _healthy(g.doc)), ordered[0] if ordered else None)
    ordered = [g for g in ordered if g is majority] + [g for g in ordered if g is not majority]
    made = []
    for g in ordered:
        differences = diff_reports(majority.doc, g.doc) if majority is not None and g is not majority else ()
        fix = _fix(differences, majority.doc, g.nodes) if differences and majority is not None \
            and _healthy(majority.doc) else None
        made.append(Group(g.fingerprint, tuple(g.nodes), _healthy(g.doc), g.doc["result"].get("release"),
                          g.doc["result"].get("chosen"), differences, fix))
    listed = sorted(findings.items(), key=lambda item: (_rank(item[0][1]), -len(item[1][1]), item[0]))
    return Fleet(count, tuple(made), tuple(FleetFinding(code, sev, message, fix, tuple(sorted(nodes)))
                                          for (code, sev, message), (fix, nodes) in listed),
                 tuple(sorted(failed, key=lambda r: r.node)))


def _healthy(doc: Mapping[str, Any]) -> bool:
    return bool(doc["result"].get("healthy", False))


def _rank(severity: str) -> int:
    try:
        return Severity(severity).rank
    except ValueError:
        return 3


def _fix(differences: Sequence[Difference], majority: Mapping[str, Any], nodes: Sequence[str]) -> Fix | None:
    """Make the nodes like the reference group: its environment first (the usual drift: a module system's
    LD_LIBRARY_PATH), else its cuDNN, else its driver. The text says on which nodes."""
    where = f"on {names_text(nodes)}, as on the reference group"
    env = [d for d in differences if d.fact.kind == "variable"]
    if env:
        steps: list[Action] = [set_variable(d.fact.name, d.left) if d.left is not None else unset(d.fact.name)
                               for d in env]
        return fix(*steps, note=where)
    chosen = next((d for d in differences if d.fact.kind == "chosen"), None)
    if chosen is not None:
        result = majority.get("result", {})
        requirement = _requirement(result.get("distribution"))
        if requirement is not None:
            return fix(pip_install([requirement]), note=f"{where} ({chosen.left})")
        return fix(manual(f"install cuDNN {result.get('release')} as the reference group has it (shown above)"),
                   note=where)
    driver = next((d for d in differences if d.fact.kind == "driver"), None)
    if driver is not None:
        return fix(manual(f"install the NVIDIA driver {driver.left} (here {driver.right})"), note=where)
    return None


def _requirement(distribution: object) -> str | None:
    """``name==version`` for a report's ``"nvidia-cudnn-cu12 9.28.0.42"``, when both parts are of their form
    (a distribution name, PEP 508; a version, PEP 440): a report's text becomes a pip command only then."""
    from packaging.requirements import InvalidRequirement, Requirement

    name, _, version = str(distribution).partition(" ")
    try:
        requirement = Requirement(f"{name}=={version}")
    except InvalidRequirement:
        return None
    return str(requirement) if requirement.name == name and not requirement.marker and not requirement.extras \
        and str(requirement.specifier) == f"=={version}" else None


# the kinds of fact condensed into one line when many differ: a library's path and the rule that found it are
# one library's load; a probe's steps and its verdict one probe
_GROUPED = {"loads": "loads", "found-by": "loads", "probe": "probe", "probe-verdict": "probe"}


def condensed(differences: Sequence[Difference]) -> list[tuple[str, str | None, str | None]]:
    """The differences for reading: the libraries that all moved from one folder to another in one line,
    and a side that has none of a kind (no install, no probe) in one line, the rest as they are."""
    out: list[tuple[str, str | None, str | None]] = []
    kinds: dict[str, list[Difference]] = {}
    for d in differences:
        kind = _GROUPED.get(d.fact.kind, "")
        kinds.setdefault(kind, []).append(d)
    for kind, items in kinds.items():
        if not kind or len(items) < 3:
            out += [(d.what, d.left, d.right) for d in items]
        elif all(d.right is None for d in items):
            out.append((f"{kind}: {len(items)} differ", f"{len(items)} on the reference group", "none here"))
        elif all(d.left is None for d in items):
            out.append((f"{kind}: {len(items)} differ", "none on the reference group", f"{len(items)} here"))
        elif kind == "loads" and (moved := _moved(items)) is not None:
            out.append((f"loads: {sum(d.fact.kind == 'loads' for d in items)} libraries from another folder", *moved))
        elif kind == "probe":
            out.append((f"probe: {len(items)} answers differ", _answers(items, "left"), _answers(items, "right")))
        else:
            out += [(d.what, d.left, d.right) for d in items]
    return out


def _answers(items: Sequence[Difference], side: str) -> str:
    """The first three of one side's probe answers, in a line."""
    shown = [f"{d.fact.name} {getattr(d, side)}" for d in items
             if getattr(d, side) is not None and d.fact.kind == "probe"][:3]
    return "; ".join(shown) + (" ..." if len(items) > 4 else "")


def _moved(items: Sequence[Difference]) -> tuple[str, str] | None:
    """(folder, folder) when every library of ``items`` comes from the one folder there and the other here."""
    def folder(path: str | None) -> str | None:
        return os.path.dirname(path) if path and path.startswith("/") else None

    items = [d for d in items if d.fact.kind == "loads"]
    pairs = {(folder(d.left), folder(d.right)) for d in items if d.left is not None and d.right is not None}
    if len(pairs) == 1 and None not in next(iter(pairs)):
        left, right = next(iter(pairs))
        return f"{left}/ ({sum(d.left is not None for d in items)} libraries)", \
            f"{right}/ ({sum(d.right is not None for d in items)} libraries)"
    return None


def names_text(nodes: Sequence[str]) -> str:
    shown = ", ".join(nodes[:SHOWN_NAMES])
    return shown + (f" and {len(nodes) - SHOWN_NAMES} more" if len(nodes) > SHOWN_NAMES else "")
