"""Turn stage results into JSON and terminal text. Formatting only: no searching, no loading."""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
import shlex
from collections.abc import Iterable
from enum import Enum
from typing import Any

from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.judge.which import Which
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.discovery import Candidate, Step
from cudnnload.resolve.fatbin import GpuCode
from cudnnload.resolve.records import is_record
from cudnnload.verdicts import Action, Finding, Fix

# The backends pull in numpy (90 ms): imported only by the command that lists them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudnnload.diagnose.before import Prediction
    from cudnnload.diagnose.doctor import Check, Difference, Report
    from cudnnload.diagnose.explain import Explanation
    from cudnnload.diagnose.fleet import Fleet
    from cudnnload.diagnose.observe import ProgramReport
    from cudnnload.diagnose.pid import ProcessReport
    from cudnnload.dispatch.backends import BackendStatus
    from cudnnload.dispatch.capabilities import Cell

SCHEMA = 1


# Derived values worth having in JSON beside the fields, by class name.
JSON_PROPERTIES: dict[str, tuple[str, ...]] = {
    "ElfInfo": ("version_checks",), "Judged": ("healthy",), "JudgedInventory": ("healthy",), "Which": ("healthy",),
    "Report": ("healthy",), "ProgramReport": ("healthy",), "ProcessReport": ("healthy",), "Fleet": ("healthy",),
    "StageStats": ("min", "median", "max"), "ProbeResult": ("ok",), "GpuFacts": ("driver_cuda",), "Device": ("sm",),
    "Finding": ("path",), "Difference": ("what",),
}
# Fields left out of JSON: the verdict's fields are the install's own (``findings``, ``expected``); a mapped
# library's ELF is read for the judge, not said.
JSON_HIDDEN: dict[str, tuple[str, ...]] = {"Judged": ("verdict",), "Finding": (), "MappedLibrary": ("elf",)}


def to_jsonable(value: Any) -> Any:
    """One encoder for every result: dataclasses become objects, tuples lists, releases "9.28.0"."""
    if isinstance(value, Release):
        return str(value)
    if isinstance(value, (Fix, Action)):
        return value.json()  # the fix contract (README "Fixes")
    if is_record(value) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        names = value._fields if is_record(value) else [f.name for f in dataclasses.fields(value)]
        hidden = JSON_HIDDEN.get(type(value).__name__, ())
        out = {name: to_jsonable(getattr(value, name)) for name in names if name not in hidden}
        if type(value).__name__ == "Judged":
            out["findings"], out["expected"] = to_jsonable(value.findings), to_jsonable(value.expected)
            out["maps"] = list(value.maps)
        for name in JSON_PROPERTIES.get(type(value).__name__, ()):
            out[name] = to_jsonable(getattr(value, name))
        return out
    if isinstance(value, (tuple, list)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def dumps(kind: str, value: Any) -> str:
    return json.dumps({"schema": SCHEMA, "kind": kind, "result": to_jsonable(value)}, indent=2)


# --- text ---------------------------------------------------------------------

def escaped(text: str) -> str:
    """``text`` with its control characters written as escapes (a file name may hold a newline or an
    escape sequence: printed raw, it would fake a line of the report or drive the terminal)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


# The words a check or finding line starts with (`check_line`, `finding_line`), and the colour each is given
# on a terminal (ANSI SGR: 32 green, 33 yellow, 31 red, 2 dim, 1 bold).
_COLOURS = {"ok": "32", "healthy": "32", "warn": "33", "warning": "33", "fail": "31", "error": "31", "info": "2",
            "skip": "2", "PROBLEMS": "1;31"}
_STATUS = re.compile(r"^(\s*)(" + "|".join(_COLOURS) + r")\b")


def for_terminal(text: str, width: int, colour: bool) -> str:
    """``text`` for a person at a terminal ``width`` columns wide: each longer line wrapped at its spaces and
    continued under its own indent, four deeper (never cut: a path longer than the width stays whole, so it
    can be pasted); with ``colour``, each line's leading status word (ok, warn, fail, error ...) coloured."""
    import textwrap

    out = []
    for line in text.split("\n"):
        indent = line[:len(line) - len(line.lstrip(" "))]
        parts = [line] if len(line) <= width else textwrap.wrap(
            line, width, initial_indent="", subsequent_indent=indent + "    ", break_long_words=False,
            break_on_hyphens=False, drop_whitespace=True) or [line]
        if parts[0] != line and not parts[0].startswith(indent):
            parts[0] = indent + parts[0].lstrip(" ")
        if colour:
            parts[0] = _STATUS.sub(lambda m: f"{m.group(1)}\033[{_COLOURS[m.group(2)]}m{m.group(2)}\033[0m",
                                   parts[0], count=1)
        out += parts
    return "\n".join(out)


def printable(value: Any) -> Any:
    """``value`` with every string in it `escaped`, for the text renderers: the same record, field for field
    (JSON needs none of this: json.dumps escapes them)."""
    if isinstance(value, Enum):
        return value  # a word of the vocabulary (`codes`): nothing to escape, and its type matters
    if isinstance(value, str):
        return escaped(value)
    if is_record(value):
        return value._make(printable(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: printable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(printable(item) for item in value)
    if isinstance(value, list):
        return [printable(item) for item in value]
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    return value


def _mb(size: int) -> str:
    return f"{size / 1e6:7.1f} MB"


def _gpu(code: GpuCode | None) -> str:
    if code is None:
        return "-"
    sass = " ".join(a.arch.removeprefix("sm_") for a in code.sass)
    ptx = " ".join(a.arch.removeprefix("sm_") for a in code.ptx)
    return f"SASS {sass or '-'}; PTX {ptx or '-'}"


def _search_path(cand: Candidate) -> str:
    if cand.elf is None:
        return "-"
    if cand.elf.rpath:
        return "RPATH " + ":".join(cand.elf.rpath)
    if cand.elf.runpath:
        return "RUNPATH " + ":".join(p.replace("$ORIGIN/../../", "../../") for p in cand.elf.runpath)
    return "-"


def finding_line(f: Finding) -> str:
    where = f"{f.path}: " if f.path else ""
    seen = "".join(f"\n      you will see: {consequence}" for consequence in f.consequences)
    fix = f"\n      fix: {f.fix.text}" if f.fix.text else ""
    return f"  {f.severity:<7} {f.code:<24} {where}{f.message}{seen}{fix}"


def check_line(check: Check) -> str:
    return f"  {check.status:<5} {check.name:<10} {check.summary}"


def _step_line(step: Step, dependency: bool = False, maps: Iterable[str] | None = None) -> str:
    """One row of what the shim (or a library) would load; with ``maps`` (the files the judged process maps), a
    row whose file the process does not map while the file its opener's later names lead to is (the shim's bare
    name, after the first file failed to bind) says so, and where it goes on to."""
    if step.path is None:
        return f"    {step.library:<26} -> NOT FOUND (tried {', '.join(step.names_tried)})"
    fails = ""
    if step.error is not None:
        fails = "  KILLS THE PROCESS (SIGBUS): " if step.outcome == "cut-segments" else "  FAILS: "
        fails += step.error
    elif step.lacks:
        asker = os.path.basename(step.requested_by or "")
        fails = f"  FAILS: version `{step.lacks[0]}' not found (required by {asker})"
    if dependency:
        return f"    {step.library:<26} -> {os.path.normpath(step.path)}  [via {step.rule}]{fails}"
    mapped = {os.path.realpath(path) for path in maps} if maps is not None else None
    went_on = step.fallback is not None and step.fallback.path is not None and mapped is not None and \
        os.path.realpath(step.path) not in mapped and os.path.realpath(step.fallback.path) in mapped
    if went_on and not fails:
        fails = "  FAILS to load (the findings say why)"
    shown = os.path.basename(step.path) if step.inside_install else step.path
    where = "this install" if step.inside_install else "ELSEWHERE"
    line = f"    {step.library:<26} -> {shown}  [{where}, via {step.rule}]{fails}"
    if step.fallback is None or not fails:
        return line
    # its opener goes on to its later names (cuDNN 9's shim and graph): what answers them is what the process gets
    then = _step_line(step.fallback).lstrip()
    return f"{line}\n      then {', '.join(step.fallback.names_tried)}: {then.split(' -> ', 1)[1]}"


def install_text(install: Judged, verbose: bool = False) -> str:
    status = "OK" if install.healthy else "PROBLEMS"
    release = f"cuDNN {install.release}" if install.release else f"cuDNN {install.major}.x (release unknown)"
    dist = f" ({install.distribution})" if install.distribution else ""
    lines = [f"{release}{dist}  [{status}]", f"  folder:    {install.folder}", f"  found via: {install.found_via}"]
    if install.release_source:
        lines.append(f"  release from: {install.release_source}")
    elif install.release is None:
        lines.append("  release: no version constant or versioned file name: `cudnnload doctor` reads it with "
                     "cudnnGetVersion in a child process")
    built = next((c.elf.cudart_version for c in install.files if c.elf and c.elf.cudart_version), None)
    if built:
        from cudnnload.loading.gpu import minimum_driver

        driver = minimum_driver(built)
        lines.append(f"  built for CUDA {built // 1000}.{built % 1000 // 10}"
                     + (f": needs an NVIDIA driver {driver} or newer" if driver else ""))
    lines.append(f"  {'file':<40} {'size':>10}  {'exports':>7}  {'search path':<34} GPU code")
    for cand in install.files:
        name = os.path.basename(cand.path)
        if cand.elf is None:
            lines.append(f"  {name:<40} {'-':>10}  {'-':>7}  unusable: see findings")
            continue
        lines.append(f"  {name:<40} {_mb(cand.elf.size):>10}  {cand.elf.exported_count:>7}  "
                     f"{_search_path(cand)[:34]:<34} {_gpu(cand.elf.gpu_code)}")
    if install.plan:
        lines.append("  what the shim would load at run time:")
        lines += [_step_line(step, maps=install.maps) for step in install.plan]
    if install.dependencies:
        lines.append("  dependencies:")
        lines += [_step_line(step, dependency=True) for step in install.dependencies]
    if verbose:
        for cand in install.files:
            if cand.elf:
                lines.append(f"  {os.path.basename(cand.path)}: soname {cand.elf.soname}, build-id "
                             f"{cand.elf.build_id}, VersionCheck {', '.join(cand.elf.version_checks) or '-'}, "
                             f"needs {', '.join(cand.elf.needed)}")
    findings = install.findings
    if findings:
        lines.append("  findings:")
        lines += [finding_line(f) for f in findings]
    return "\n".join(lines)


def inventory_text(inv: JudgedInventory, verbose: bool = False) -> str:
    host = inv.host
    glibc = ".".join(map(str, host.glibc)) if host.glibc else "?"
    glibcxx = ".".join(map(str, host.glibcxx)) if host.glibcxx else "?"
    parts = [f"host: {host.machine}, glibc {glibc}, libstdc++ GLIBCXX_{glibcxx} ({host.libstdcxx or 'not found'})"]
    if not inv.installs:
        parts.append("no cuDNN found")
    parts += [install_text(i, verbose) for i in inv.installs]
    if inv.findings:
        parts.append("findings:\n" + "\n".join(finding_line(f) for f in inv.findings))
    return "\n\n".join(parts)


def findings_summary(findings: Iterable[Finding]) -> str:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return ", ".join(f"{n} {sev}{'s' if n != 1 else ''}" for sev, n in counts.items()) or "no problems"


def which_text(result: Which, verbose: bool = False) -> str:
    lines = [f"as loaded by: {result.consumer}"]
    if result.loaded:
        lines.append("already mapped in this process: " + ", ".join(result.loaded))
    shim_folder = next((os.path.dirname(s.path) for s in result.steps if s.library == "shim" and s.path), None)
    for step in result.steps:
        if step.path is None:
            target = "NOT FOUND"
        elif shim_folder and step.library != "shim" and os.path.dirname(step.path) == shim_folder:
            target = f"{os.path.basename(step.path)} (beside the shim)"
        else:
            target = step.path
        release = f", cuDNN {step.release}" if step.release else ""
        lines.append(f"  {step.library:<26} -> {target}  [{step.rule}{release}]")
        if verbose:
            lines.append(f"  {'':<26}    tried {', '.join(step.names_tried)}")
            lines += [f"  {'':<26}      {attempt}" for attempt in step.trail]
            if step.undecided:
                lines.append(f"  {'':<26}    cannot decide: {step.undecided}")
    if result.findings:
        lines.append("findings:")
        lines += [finding_line(f) for f in result.findings]
    return "\n".join(lines)


def backends_text(statuses: tuple[BackendStatus, ...]) -> str:
    """``cudnnload backends``: a line per backend (name, state, where it comes from), why it cannot run, and
    what its capability table rules out (``--json`` has every cell)."""
    from cudnnload.dispatch.backends import ENTRY_POINT_GROUP

    if not statuses:
        return f"no backend plugins installed (entry-point group {ENTRY_POINT_GROUP})"
    width = max(len(status.name) for status in statuses)
    lines = []
    for status in statuses:
        state = "BROKEN" if status.broken else "available" if status.available else "unavailable"
        lines.append(f"{status.name:<{width}}  {state:<11}  {status.source}")
        if status.reason:
            lines.append(f"{'':<{width}}  {'':<11}  {status.reason}")
        if status.capabilities:
            refused = _refusals(status.capabilities)
            lines.append(f"{'':<{width}}  {'':<11}  runs every operation of its table" +
                         (", except:" if refused else ""))
            lines += [f"{'':<{width}}  {'':<11}    {what}: {reason}" for what, reason in refused]
    return "\n".join(lines)


def _refusals(cells: tuple[Cell, ...]) -> list[tuple[str, str]]:
    """The "no" cells of a table, grouped by reason: (which cells, in words; the reason)."""
    from cudnnload.dispatch.capabilities import LAYOUTS, OPERATIONS, SPATIAL
    from cudnnload.dispatch.tensors import DTYPES

    grouped: dict[str, list[Cell]] = {}
    for cell in cells:
        if not cell.runs:
            grouped.setdefault(cell.reason or "", []).append(cell)
    found = []
    for reason, refused in grouped.items():
        parts = []
        for axis, everything, name in (("dtype", DTYPES, "dtype"), ("operation", OPERATIONS, "operation"),
                                       ("layout", LAYOUTS, "layout"), ("spatial", SPATIAL, "rank")):
            values = list(dict.fromkeys(getattr(cell, axis) for cell in refused))
            if len(values) < len(everything):
                parts.append(", ".join(f"{value}-D" if axis == "spatial" else str(value) for value in values))
            elif axis == "operation":
                parts.append(f"every {name}")
        found.append(("; ".join(parts), reason))
    return found


def capabilities_markdown(statuses: tuple[BackendStatus, ...]) -> str:
    """README's capability table: a row per operation, a column per backend, each cell the dtypes it runs
    (in both layouts and 1-3 spatial axes unless it says which), then what each backend rules out and why."""
    from cudnnload.dispatch.capabilities import LAYOUTS, OPERATIONS, SPATIAL
    from cudnnload.dispatch.tensors import DTYPES

    tables = [status for status in statuses if status.capabilities]
    full = len(LAYOUTS) * len(SPATIAL)
    lines = ["| operation | " + " | ".join(f"`{status.name}`" for status in tables) + " |",
             "|---|" + "---|" * len(tables)]
    for operation in OPERATIONS:
        row = []
        for status in tables:
            runs = {dtype: [c for c in status.capabilities if (c.operation, c.dtype) == (operation, dtype) and c.runs]
                    for dtype in DTYPES}
            if all(len(found) == full for found in runs.values()):
                row.append("all")
                continue
            row.append(", ".join(dtype if len(found) == full else
                                 f"{dtype} ({', '.join(f'{c.layout} {c.spatial}-D' for c in found)})"
                                 for dtype, found in runs.items() if found) or "-")
        lines.append(f"| `{operation}` | " + " | ".join(row) + " |")
    lines += ["", f"\"all\": {', '.join(DTYPES)}; every cell holds for {' and '.join(LAYOUTS)} and "
              f"{', '.join(f'{n}-D' for n in SPATIAL)} unless it names them."]
    refused = [(status.name, what, reason) for status in tables for what, reason in _refusals(status.capabilities)]
    if refused:
        lines += ["", "Not run:", ""]
        lines += [f"- `{name}`, {what}: {reason}" for name, what, reason in refused]
    return "\n".join(lines) + "\n"


# --- doctor and diff ---------------------------------------------------------

def report_text(report: Report) -> str:
    """``cudnnload doctor``: what was diagnosed, a line per check, then every finding with what the user
    will see and the fix."""
    theirs = [use for use in report.frameworks if use.shim]  # with none of its own, what its frameworks get
    loads = f"cuDNN {report.release or '(release unknown)'} from {report.chosen}" if report.chosen else \
        "no cuDNN of its own; " + "; ".join(
            f"{use.distribution} {use.version} gets {f'cuDNN {use.release}' if use.release else 'a cuDNN'} from "
            f"{posixpath.dirname(use.shim or '')}" for use in theirs) if theirs else "no cuDNN"
    head = f"cudnnload doctor: {loads}" if report.target.kind == "environment" else \
        f"cudnnload doctor: {report.target.description}\n  loads {loads}"
    lines = [head]
    lines += [check_line(c) for c in report.checks]
    if report.findings:
        lines.append(f"findings ({findings_summary(report.findings)}):")
        lines += [finding_line(f) for f in report.findings]
    lines.append("healthy" if report.healthy else "PROBLEMS FOUND: apply the fixes above, then run doctor again")
    return "\n".join(lines)


def diff_text(differences: tuple[Difference, ...], left_name: str, right_name: str) -> str:
    """``cudnnload diff``: each fact that differs, as in a unified diff."""
    if not differences:
        return f"no difference that matters between {left_name} and {right_name}"
    lines = [f"--- {left_name}", f"+++ {right_name}"]
    for d in differences:
        lines += [d.what, *_changed(d.left, d.right, "  ")]
    return "\n".join(lines)


def _changed(left: object, right: object, indent: str) -> list[str]:
    """One fact's two sides, as a unified diff shows them."""
    return [f"{indent}{sign} {side if side is not None else '(absent)'}" for sign, side in (("-", left), ("+", right))]


def fleet_text(fleet: Fleet) -> str:
    """``cudnnload fleet``: the reference group, then the others by size, each with its difference from it, the
    findings with the nodes they occur on, the nodes without a report."""
    from cudnnload.diagnose.fleet import condensed, names_text

    odd = sum(len(g.nodes) for g in fleet.groups[1:])
    lines = [f"cudnnload fleet: {fleet.nodes} node{'s' * (fleet.nodes != 1)} in {len(fleet.groups)} "
             f"group{'s' * (len(fleet.groups) != 1)}; {odd} differ from the reference group"
             + (f"; {len(fleet.failed)} without a report" if fleet.failed else "")]
    for group in fleet.groups:
        what = f"cuDNN {group.release} from {_quoted(group.chosen)}" if group.chosen else "no cuDNN"
        count = f"{len(group.nodes)} node{'s' * (len(group.nodes) != 1)}"
        lines.append(f"  {count:<10} {'healthy ' if group.healthy else 'PROBLEMS'}  {what}  [{group.fingerprint}]")
        lines.append(f"             {names_text(group.nodes)}")
    if len(fleet.groups) > 1:
        largest = fleet.groups[0]
        for group in fleet.groups[1:]:
            lines += ["", f"{names_text(group.nodes)}, against the reference group ({names_text(largest.nodes)}):"]
            for what, left, right in condensed(group.differences):
                lines += [f"  {what}", *_changed(left, right, "    ")]
            if group.fix is not None and group.fix.text:
                lines.append(f"  fix: {group.fix.text}")
    if fleet.findings:
        lines += ["", "findings, with the nodes they occur on:"]
        for f in fleet.findings:  # each node's own words, quoted: never an instruction of cudnnload's (issue 29)
            whose = f"{f.nodes[0]}'s report" if len(f.nodes) == 1 else f"the reports of {names_text(f.nodes)}"
            lines.append(f"  {f.severity:<7} {f.code:<24} on {names_text(f.nodes)}")
            lines.append(f"      {whose} {'says' if len(f.nodes) == 1 else 'say'}: {_quoted(f.message)}")
            if f.fix and f.fix.get("text"):
                lines.append(f"      and suggest{'s' * (len(f.nodes) == 1)}: {_quoted(str(f.fix['text']))}")
    if fleet.failed:
        lines += ["", "nodes without a report:"]
        lines += [f"  {r.node}: {r.problem}" for r in fleet.failed]
    unhealthy = sum(len(g.nodes) for g in fleet.groups if not g.healthy) + len(fleet.failed)
    lines += ["", f"all {fleet.nodes} nodes healthy and alike" if fleet.healthy else
              f"PROBLEMS: {unhealthy} of {fleet.nodes} nodes unhealthy or without a report; "
              f"{len(fleet.groups)} different setups"]
    return "\n".join(lines)


def _quoted(text: str) -> str:
    """Words from a node's report (already `printable`), in double quotes: what it says, not what cudnnload says."""
    return '"' + text.replace('"', '\\"') + '"'


def program_report_text(report: ProgramReport) -> str:
    """``cudnnload doctor -- COMMAND``: how the program ended, what the linker mapped and by which rule, what
    cuDNN printed, the prediction beside it, then the findings."""
    seen = report.observation
    program = shlex.join(seen.command)
    if seen.timed_out:
        end = f"killed at the timeout after {seen.seconds:.2f} s" + (f", hung in {seen.died_in}" if seen.died_in
                                                                     else "")
    elif seen.signal:
        end = f"died of {seen.signal} after {seen.seconds:.2f} s" + (f" in {seen.died_in}" if seen.died_in else "")
    else:
        end = f"exited with status {seen.returncode} after {seen.seconds:.2f} s"
    lines = [f"cudnnload doctor -- {program}", *([report.headline] if report.headline else []), f"  {end}"
             + (f" ({seen.processes} processes)" if seen.processes > 1 else "")]
    for use in report.frameworks:
        lines.append(f"  {use.framework:<10} {use.distribution} {use.version} got cuDNN {use.release or '?'} "
                     f"from {os.path.dirname(os.path.normpath(use.shim)) if use.shim else 'nowhere'}")
    if seen.libraries:
        lines.append("  mapped, in order (the dynamic linker's account" + (
            "; each file once, with the number of processes that mapped it)" if seen.processes > 1 else "):"))
        counts: dict[tuple[str, str], int] = {}
        for opened in seen.libraries:
            counts[(opened.path, opened.rule)] = counts.get((opened.path, opened.rule), 0) + 1
        for opened in seen.libraries:
            count = counts.pop((opened.path, opened.rule), 0)
            if not count:
                continue
            via = f" from {os.path.basename(opened.via)}" if opened.via else ""
            dying = "" if opened.initialized else "  (never initialized: the process ended mapping it)"
            times = f" x{count}" if count > 1 else ""
            lines.append(f"    {os.path.basename(opened.path):<40} {opened.path}  [{opened.rule}{via}, "
                         f"{opened.how} by {os.path.basename(opened.requested_by)}]{dying}{times}")
    elif not seen.unlogged:
        lines.append("  no cuDNN, cuBLAS, NVRTC or driver library was seen mapped" if seen.unwatched else
                     "  no cuDNN, cuBLAS, NVRTC or driver library was mapped")
    if seen.unlogged:
        lines.append("  also mapped (seen in /proc/PID/maps; the linker's log does not say how):")
        lines += [f"    {os.path.basename(path):<40} {path}" for path in seen.unlogged]
    reuses: dict[tuple[str, tuple[str, ...]], int] = {}
    for reuse in seen.reused:
        reuses[(reuse.path, tuple(reuse.after))] = reuses.get((reuse.path, tuple(reuse.after)), 0) + 1
    for (path, after), count in reuses.items():
        lines.append(f"    already loaded, handed out again{f' ({count} times)' if count > 1 else ''}: {path}"
                     + (f" (after {', '.join(after)} were not found)" if after else ""))
    if seen.messages:
        lines.append("  cuDNN printed:")
        lines += [f"    {message}" for message in seen.messages]
    for comparison in report.comparisons:
        said = "agrees" if not comparison.disagreements else f"disagrees ({len(comparison.disagreements)})"
        lines.append(f"  cudnnload's prediction for {comparison.shim} in this environment: {said}"
                     + (f" (said once for its {seen.processes} processes)" if seen.processes > 1 else ""))
    if report.findings:
        lines.append(f"findings ({findings_summary(report.findings)}):")
        lines += [finding_line(f) for f in report.findings]
    lines.append("healthy" if report.healthy else "PROBLEMS FOUND: apply the fixes above, then run it again")
    return "\n".join(lines)


def process_report_text(report: ProcessReport) -> str:
    """``cudnnload doctor --pid PID``: the process, the cuDNN (and cuBLAS, NVRTC, driver) files it has mapped
    with their release and whether the disk still has them, where each sub-library it has not loaded yet
    would come from, the frameworks mapped, a line per check, then the findings."""
    command = shlex.join(report.command) or report.executable
    lines = [f"cudnnload doctor --pid {report.pid}: {command[:200]}", f"  program: {report.executable}"]
    if report.libraries:
        lines.append(f"  mapped (/proc/{report.pid}/maps):")
        for lib in report.libraries:
            release = f"cuDNN {lib.release}" if lib.release else "cuDNN ?" if lib.major else ""
            notes = [f"LD_PRELOAD {lib.preloaded_by}"] if lib.preloaded_by else []
            notes += [] if lib.state == "on-disk" else ["this user cannot reach it now"] if lib.state == "unreachable" \
                else [f"{lib.state.upper()} on disk since"]
            lines.append(f"    {os.path.basename(lib.path):<32} {release:<13} {lib.path}"
                         + (f"  ({'; '.join(notes)})" if notes else ""))
    if report.pending:
        lines.append("  not loaded yet: what the shim's dlopen would get, in the process's environment:")
        lines += [_step_line(step) for step in report.pending]
    lines += [check_line(c) for c in report.checks]
    if report.findings:
        lines.append(f"findings ({findings_summary(report.findings)}):")
        lines += [finding_line(f) for f in report.findings]
    lines.append("healthy" if report.healthy else f"PROBLEMS FOUND: apply the fixes above, then restart process "
                 f"{report.pid}")
    return "\n".join(lines)


def explanation_text(explanation: Explanation, shown: int = 5) -> str:
    """``cudnnload explain``: the messages recognized, what the text shows, the causes ranked by the text (the
    first ``shown``) with their evidence, how often the corpus saw each, and the fix; then this machine's
    checks, or how to ask for them."""
    if not explanation.recognized and not explanation.causes:
        return "\n".join(filter(None, (
            "no cuDNN message cudnnload knows in this text; `cudnnload doctor` checks this machine, "
            "`cudnnload doctor -- YOUR-PROGRAM` runs the program and explains what it does", explanation.note)))
    reading = explanation.reading
    # a text without a known message whose words still name causes (a program that ended at a load)
    lines: list[str] = [] if explanation.recognized else ["no cuDNN message cudnnload knows in this text"]
    for signal in reading.signals:
        lines += [signal.line, f"  from: {signal.source}", f"  means: {signal.meaning}"]
    shows = [f"{name} {value}" for name, value in (
        ("platform", reading.platform), ("cuDNN", reading.cudnn_major),
        ("CUDA", ".".join(map(str, reading.cuda)) if reading.cuda else None), ("program", reading.framework))
        if value is not None]
    lines.append("the text shows: " + (", ".join(shows) if shows else "no platform, version or program"))
    if explanation.note:
        lines.append(f"note: {explanation.note}")
    ranked_by = "the text and this machine" if explanation.checked_here else "the text alone"
    lines.append(f"causes, most likely first (ranked by {ranked_by}):")
    for number, cause in enumerate(explanation.causes[:shown], 1):
        lines.append(f"  {number}. {cause.title}  [{cause.confidence}; {cause.family}]")
        lines += [f"       evidence: {item}" for item in cause.evidence]
        fix = cause.fix.text or "not known: nothing to apply"
        lines += [f"       how often: {cause.prior}", f"       why: {cause.why}",
                  f"       tells it apart: {cause.tell}", f"       fix: {fix}"]
    if len(explanation.causes) > shown:
        lines.append(f"  ... and {len(explanation.causes) - shown} less likely (--json lists every cause)")
    if not explanation.checked_here:
        lines.append("on this machine: not checked (the error is from another machine?); for an error of this "
                     "machine, `cudnnload explain --here` checks each cause here")
    else:
        lines.append("on this machine:")
        lines += [f"  {cause.family}: {cause.here} ({cause.here_detail})" for cause in explanation.causes[:shown]]
    return "\n".join(lines)


def prediction_text(prediction: Prediction) -> str:
    """``cudnnload doctor --requirements``: what pip would install, in its order, whose files stay, the cuDNN
    each framework would get, then every finding with its fix."""
    files = ", ".join(prediction.requirements)
    lines = [f"cudnnload doctor --requirements {files}: what pip {prediction.pip} would install for "
             f"{prediction.python} into a fresh {prediction.site} ({len(prediction.installs)} distributions)",
             f"  order ({prediction.order}): {', '.join(prediction.installs)}"]
    for read in prediction.read:
        cost = f"{read.fetched / 1e6:.1f} MB of its {read.size / 1e6:.0f} MB" if read.fetched else "nothing"
        cudnn = f"; cuDNN {read.cudnn}" if read.cudnn else ""
        lines.append(f"  read   {read.filename}: RECORD of {read.files} files{cudnn} ({read.how}, {cost} fetched)")
    for pair in prediction.overwrites:
        lines.append(f"  overwrites {pair.first} -> {pair.last}: {len(pair.paths)} files ({pair.paths[0]} ...)")
    for expected in prediction.frameworks:
        status = "ok" if expected.works else "fail"
        whose = expected.cudnn_distribution or ("its own wheel's" if expected.bundled else "this machine's")
        gets = f"cuDNN {expected.release or '(release unknown)'} ({whose}) from {os.path.dirname(expected.shim)}" \
            if expected.shim else "no cuDNN"
        nearest = "" if expected.exact or expected.surveyed is None else f"; loader of {expected.surveyed}, the nearest"
        lines.append(f"  {status:<5} {expected.framework:<10} {expected.distribution} {expected.version} would get "
                     f"{gets} ({expected.how}{nearest})")
    lines.append(f"  driver     {prediction.driver}")
    if prediction.findings:
        lines.append(f"findings ({findings_summary(prediction.findings)}):")
        lines += [finding_line(f) for f in prediction.findings]
    lines.append("healthy: nothing above stops a framework of the set" if prediction.healthy else
                 "PROBLEMS PREDICTED: apply the fixes above before installing")
    return "\n".join(lines)
