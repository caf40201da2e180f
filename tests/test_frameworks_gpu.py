"""The real PyTorch and JAX on the GPU machine, broken the ways users break them (issue 18 item 8, issue 19 item 5).

For each breakage (applied to the installed frameworks, restored after, whatever happens) the frameworks' own
convolution programs run first: that is the truth. Then every way of asking cudnnload must agree with it:
plain ``doctor`` (each framework's line), ``doctor <the framework's library>``, ``doctor -- <the program>``,
and ``explain`` on the framework's own message; each names the cause, and calls healthy exactly the runs that
worked. Then the pins: ``cudnnload run --for torch -- <program>`` and ``load(for_="torch")`` before
``import torch`` make the convolution run wherever a pin can fix the breakage.

Each case's outcome is appended to ``$OUT/frameworks.jsonl`` when ``OUT`` is set (bench/gpu_run.sh), for
bench/results/. Run only through bench/gpu_run.sh: it breaks the machine's installs (and puts them back).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures.scenarios.truth import never_started
from tests.gpu import REPO, require_gpus

pytestmark = pytest.mark.gpu

TORCH_PROGRAM = """
import torch
print("cudnn", torch.backends.cudnn.version(), flush=True)
conv = torch.nn.Conv2d(3, 8, 3).cuda()
out = conv(torch.randn(1, 3, 16, 16, device="cuda"))
torch.cuda.synchronize()
print("conv ok", float(out.detach().sum()), flush=True)
"""
JAX_PROGRAM = """
import jax, jax.numpy as jnp
out = jax.lax.conv(jnp.ones((1, 3, 16, 16)), jnp.ones((8, 3, 3, 3)), (1, 1), "SAME")
print("conv ok", float(out.sum()), jax.devices()[0].platform, flush=True)
assert jax.devices()[0].platform == "gpu", "JAX fell back to the CPU"
"""
LOAD_FIRST = "import cudnnload\ncudnnload.load(for_='torch')\n"


@dataclass(frozen=True)
class Machine:
    site: Path  # the site-packages of torch and JAX
    wheel: Path  # nvidia/cudnn/lib
    system: Path  # the folder of the system cuDNN in ld.so.cache

    @property
    def torch_library(self) -> Path:
        return self.site / "torch" / "lib" / "libtorch_cuda.so"

    @property
    def jax_library(self) -> Path:
        return next(iter(sorted((self.site / "jax_cuda13_plugin").glob("_versions*.so"))), self.site)


def this_machine() -> Machine | str:
    """The frameworks' site-packages and the system cuDNN to break them with, or why there is none to break
    (the fixture's skip reason; bench/frameworks_more.py's error)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "PyTorch is not installed in this Python"
    site = Path(subprocess.run([sys.executable, "-c", "import torch, os; print(os.path.dirname(os.path.dirname("
                                "torch.__file__)))"], capture_output=True, text=True, check=True).stdout.strip())
    system = next((Path(d) for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
                   if (Path(d) / "libcudnn.so.9").exists()), None)
    if system is None:
        return "no system cuDNN 9 in /lib/x86_64-linux-gnu to break the frameworks with"
    return Machine(site, site / "nvidia" / "cudnn" / "lib", system)


@pytest.fixture(scope="module")
def machine() -> Machine:
    require_gpus()
    found = this_machine()
    if isinstance(found, str):
        pytest.skip(found)
    return found


# --- the breakages: each a change and its undoing -------------------------------------------------------------

@dataclass(frozen=True)
class Breakage:
    name: str
    cause: str  # a word every diagnosis of a failing run must name
    environ: Callable[[Machine], dict[str, str]] = lambda m: {}
    files: Callable[[Machine, Path], None] | None = None  # breaks files; ``aside`` keeps what it moved
    # what pinning torch's cuDNN does: `cudnnload run --for torch` (with ``run_options``) and
    # `load(for_="torch")` first either make the convolution run ("fixes") or refuse, naming ``cause`` (run: pins
    # nothing, says why, and runs the program unchanged)
    run_pin: str = "refuses"
    load_pin: str = "refuses"
    run_options: tuple[str, ...] = ()
    # what `explain` must rank in its first three for the framework's own last lines (fixtures/explain families)
    explained: tuple[str, ...] = ()


def _remove(name: str) -> Callable[[Machine, Path], None]:
    return lambda m, aside: shutil.move(m.wheel / name, aside / name)  # type: ignore[func-returns-value]


def _truncate(name: str) -> Callable[[Machine, Path], None]:
    def cut(m: Machine, aside: Path) -> None:
        shutil.copy2(m.wheel / name, aside / name)
        os.truncate(m.wheel / name, 65536)
    return cut


def _versioned_link(stem: str, to: str) -> Callable[[Machine, Path], None]:
    """``STEM.so.9.MINOR`` in the wheel's folder, a link to another sub-library's file: the shim and graph try that
    name before ``STEM.so.9`` (the advice of many a thread, a name linked to "make it find" a library). `broken`
    takes away every name the breakage added."""
    def link(m: Machine, aside: Path) -> None:
        version = ctypes.CDLL(str(m.wheel / "libcudnn.so.9")).cudnnGetVersion()
        (m.wheel / f"{stem}.so.{version // 10000}.{version // 100 % 100}").symlink_to(to)
    return link


def _wheel_gone(m: Machine, aside: Path) -> None:
    shutil.move(m.wheel.parent, aside / "cudnn")


LONELY = Path(tempfile.gettempdir()) / "cudnnload-lonely"


def _lonely_engines(m: Machine, aside: Path) -> None:
    """The wheel's precompiled engines reached through a folder of their own (a symlink: ``$ORIGIN`` is the link's
    folder), as an LD_PRELOAD entry: their graph is not beside them, and the one the search finds is the system's."""
    shutil.rmtree(LONELY, ignore_errors=True)
    LONELY.mkdir()
    (LONELY / "libcudnn_engines_precompiled.so.9").symlink_to(m.wheel / "libcudnn_engines_precompiled.so.9")


SHADOWED = ("version-mismatch-shadowed", "runtime-older-than-build")
BREAKAGES = (
    Breakage("healthy", "", run_pin="fixes", load_pin="fixes"),
    Breakage("preload-system-graph", "LD_PRELOAD", lambda m: {"LD_PRELOAD": str(m.system / "libcudnn_graph.so.9")},
             run_pin="fixes", run_options=("--replace-preload",), explained=SHADOWED),
    Breakage("preload-system-shim", "LD_PRELOAD", lambda m: {"LD_PRELOAD": str(m.system / "libcudnn.so.9")},
             run_pin="fixes", run_options=("--replace-preload",), explained=SHADOWED),
    Breakage("library-path-system", "LD_LIBRARY_PATH", lambda m: {"LD_LIBRARY_PATH": str(m.system)},
             run_pin="fixes", load_pin="fixes", explained=SHADOWED),
    Breakage("no-gpu-visible", "CUDA_VISIBLE_DEVICES", lambda m: {"CUDA_VISIBLE_DEVICES": ""}, run_pin="n/a",
             load_pin="n/a"),
    Breakage("missing-cnn", "libcudnn_cnn", files=_remove("libcudnn_cnn.so.9")),
    Breakage("missing-engines-precompiled", "engines_precompiled", files=_remove("libcudnn_engines_precompiled.so.9"),
             run_pin="fixes", load_pin="fixes"),  # graph runs without it: the set is whole
    Breakage("missing-graph", "libcudnn_graph", files=_remove("libcudnn_graph.so.9"), explained=SHADOWED),
    Breakage("missing-runtime-compiled", "engines_runtime_compiled",
             files=_remove("libcudnn_engines_runtime_compiled.so.9"), explained=("sublibrary-missing",)),
    Breakage("truncated-cnn", "libcudnn_cnn", files=_truncate("libcudnn_cnn.so.9")),
    Breakage("truncated-graph", "libcudnn_graph", files=_truncate("libcudnn_graph.so.9")),
    Breakage("wheel-gone", "9.19", files=_wheel_gone, explained=SHADOWED),
    # on a machine with a driver (the fix differential's have none): graph's runtime-compiled engines and the shim's
    # cnn each answered by another library's file
    Breakage("runtime-compiled-named-to-precompiled", "runtime_compiled",
             files=_versioned_link("libcudnn_engines_runtime_compiled", "libcudnn_engines_precompiled.so.9")),
    Breakage("cnn-named-to-ops", "libcudnn_cnn", files=_versioned_link("libcudnn_cnn", "libcudnn_ops.so.9")),
    Breakage("preload-system-engines", "LD_PRELOAD",
             lambda m: {"LD_PRELOAD": str(m.system / "libcudnn_engines_precompiled.so.9")}, run_pin="fixes",
             run_options=("--replace-preload",)),
    # every program may stop at start there (cudnnload's own Python too): it is asked from outside, `--env`
    Breakage("preload-lonely-engines", "LD_PRELOAD",
             lambda m: {"LD_PRELOAD": str(LONELY / "libcudnn_engines_precompiled.so.9")}, files=_lonely_engines,
             run_pin="n/a", load_pin="n/a"),
)


@contextlib.contextmanager
def broken(m: Machine, breakage: Breakage) -> Iterator[dict[str, str]]:
    """The machine with ``breakage`` applied; the files put back after, whatever happens."""
    aside = Path(tempfile.mkdtemp(prefix="cudnnload-aside-"))
    before = sorted(p.name for p in m.wheel.iterdir())
    try:
        if breakage.files is not None:
            breakage.files(m, aside)
        yield {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
               **breakage.environ(m)}
    finally:
        if (aside / "cudnn").exists():
            shutil.move(aside / "cudnn", m.wheel.parent)
        for kept in aside.iterdir():
            os.replace(kept, m.wheel / kept.name)
        for added in m.wheel.iterdir():
            if added.name not in before:
                added.unlink()
        shutil.rmtree(aside, ignore_errors=True)
        shutil.rmtree(LONELY, ignore_errors=True)
        assert sorted(p.name for p in m.wheel.iterdir()) == before


# --- asking ----------------------------------------------------------------------------------------------------

def _run(argv: list[str], env: dict[str, str], stdin: str | None = None,
         timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout,
                          cwd=tempfile.gettempdir())


def _program(tmp_path: Path, framework: str, first: str = "") -> Path:
    script = tmp_path / f"{framework}_conv{'_after_load' if first else ''}.py"
    script.write_text(first + (TORCH_PROGRAM if framework == "torch" else JAX_PROGRAM))
    return script


def _cudnnload(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """cudnnload in ``env``; where nothing starts there, from outside as its finding says: ``LD_PRELOAD=
    cudnnload doctor --env LD_PRELOAD=...`` (explain, which reads a text, without it)."""
    done = _run([sys.executable, "-m", "cudnnload", *args], env)
    if never_started(done) and env.get("LD_PRELOAD"):
        outside = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
        given = ["--env", f"LD_PRELOAD={env['LD_PRELOAD']}"] if args[0] == "doctor" else []
        rest = [a for a in args[1:] if a != "--here"] if args[0] == "explain" else list(args[1:])
        done = _run([sys.executable, "-m", "cudnnload", args[0], *given, *rest], outside)
    return done


def _explain(env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    done = _run([sys.executable, "-m", "cudnnload", "explain", "--here", "--json", "-"], env, stdin=message)
    if never_started(done) and env.get("LD_PRELOAD"):
        done = _run([sys.executable, "-m", "cudnnload", "explain", "--json", "-"],
                    {k: v for k, v in env.items() if k != "LD_PRELOAD"}, stdin=message)
    return done


def _errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The code and file of each error finding of a `doctor --json` (for the record), or its output's last line."""
    try:
        findings = json.loads(done.stdout)["result"]["findings"]
    except (ValueError, KeyError, TypeError):
        return (done.stdout + done.stderr).strip().splitlines()[-1:]
    return [f"{f['code']} {f.get('path') or ''}".strip() for f in findings if f["severity"] == "error"]


def _record(case: dict[str, object]) -> None:
    out = os.environ.get("OUT")
    if out:
        with open(Path(out) / "frameworks.jsonl", "a") as handle:
            handle.write(json.dumps(case) + "\n")


@pytest.mark.timeout_s(900)
@pytest.mark.parametrize("breakage", BREAKAGES, ids=[b.name for b in BREAKAGES])
def test_every_way_of_asking_agrees_with_what_the_framework_did(machine: Machine, breakage: Breakage,
                                                                tmp_path: Path) -> None:
    case: dict[str, object] = {"breakage": breakage.name}
    wrong: list[str] = []
    with broken(machine, breakage) as env:
        truth = {fw: _run([sys.executable, str(_program(tmp_path, fw))], env) for fw in ("torch", "jax")}
        worked = {fw: done.returncode == 0 and "conv ok" in done.stdout for fw, done in truth.items()}
        case["worked"] = worked
        case["stderr"] = {fw: done.stderr.strip().splitlines()[-1:] for fw, done in truth.items()}
        plain = _cudnnload(env, "doctor", "--json")
        doc = json.loads(plain.stdout)["result"]
        says = {use["framework"]: use["works"] for use in doc.get("frameworks", [])}
        case["doctor"] = says
        for fw in ("torch", "jax"):
            if says.get(fw) != worked[fw]:
                wrong.append(f"doctor says {fw} works={says.get(fw)}, it worked={worked[fw]}")
        if plain.returncode != (0 if all(worked.values()) else 1):
            wrong.append(f"doctor exit {plain.returncode} with torch/jax worked={worked}")
        # a finding as the user reads it: the file it is about (its ``path``), what is wrong, and its fix
        text = " ".join(f"{f.get('path') or ''} {f['message']} {json.dumps(f.get('fix'))}" for f in doc["findings"]
                        if f["severity"] == "error")
        if not all(worked.values()) and breakage.cause and breakage.cause not in text:
            wrong.append(f"doctor's errors do not name {breakage.cause}")
        for fw, library in (("torch", machine.torch_library), ("jax", machine.jax_library)):
            target = _cudnnload(env, "doctor", "--json", str(library))
            case[f"doctor {fw} library"] = target.returncode
            case[f"doctor {fw} library errors"] = _errors(target)
            if (target.returncode == 0) != worked[fw]:
                wrong.append(f"doctor {library.name} exit {target.returncode}, {fw} worked={worked[fw]}")
            program = _cudnnload(env, "doctor", "--", sys.executable, str(_program(tmp_path, fw)))
            lines = program.stdout.splitlines()  # the program's own output comes first
            start = next((i for i, line in enumerate(lines) if line.startswith("cudnnload doctor -- ")), -1)
            headline = lines[start + 1] if 0 <= start < len(lines) - 1 else ""
            case[f"doctor -- {fw}"] = [program.returncode, headline]
            if (program.returncode == 0) != worked[fw]:
                wrong.append(f"doctor -- {fw} exit {program.returncode}, it worked={worked[fw]}: {headline}")
            if not worked[fw] and breakage.cause and breakage.cause not in program.stdout:
                wrong.append(f"doctor -- {fw} does not name {breakage.cause}: {headline}")
            if not worked[fw] and truth[fw].stderr.strip():
                message = "\n".join(truth[fw].stderr.strip().splitlines()[-20:])  # what a user pastes
                explained = _explain(env, message)
                causes = json.loads(explained.stdout)["result"]["causes"] if explained.stdout.startswith("{") else []
                case[f"explain {fw}"] = [c["family"] for c in causes[:3]]
                if breakage.explained and causes and not set(breakage.explained) & set(case[f"explain {fw}"]):
                    wrong.append(f"explain of {fw}'s message ranks {case[f'explain {fw}']}, not {breakage.explained}")
    case["wrong"] = wrong
    _record(case)
    assert not wrong, wrong


PINNED = [b for b in BREAKAGES if b.run_pin != "n/a"]


@pytest.mark.timeout_s(600)
@pytest.mark.parametrize("breakage", PINNED, ids=[b.name for b in PINNED])
def test_a_pin_runs_torchs_convolution_or_refuses_naming_the_cause(machine: Machine, breakage: Breakage,
                                                                   tmp_path: Path) -> None:
    """``cudnnload run --for torch -- python train.py`` and ``load(for_="torch")`` before ``import torch``. Where
    no cuDNN torch accepts can be pinned, ``run`` pins nothing, says why in one line naming the cause, and runs the
    program as it would run without cudnnload (README: run never makes a working program fail); ``load`` raises,
    naming the cause."""
    program = str(_program(tmp_path, "torch"))
    with broken(machine, breakage) as env:
        pinned = _run([sys.executable, "-m", "cudnnload", "run", "--for", "torch", *breakage.run_options, "--",
                       sys.executable, program], env)
        loaded = _run([sys.executable, str(_program(tmp_path, "torch", LOAD_FIRST))], env)
        alone = _run([sys.executable, program], env) if breakage.run_pin == "refuses" else None
    _record({"breakage": breakage.name, "run --for torch": [pinned.returncode, pinned.stderr.strip()[-300:]],
             "load(for_=torch)": [loaded.returncode, loaded.stderr.strip()[-300:]]})
    if breakage.run_pin == "fixes":
        assert pinned.returncode == 0 and "conv ok" in pinned.stdout, pinned.stderr[-2000:]
    else:
        said = next((line for line in pinned.stderr.splitlines() if line.startswith("cudnnload: nothing pinned")), "")
        assert breakage.cause in said, pinned.stderr[-2000:]
        assert alone is not None and (pinned.returncode, "conv ok" in pinned.stdout) == \
            (alone.returncode, "conv ok" in alone.stdout), (pinned.stderr[-1000:], alone.stderr[-1000:])
    if breakage.load_pin == "fixes":
        assert loaded.returncode == 0 and "conv ok" in loaded.stdout, loaded.stderr[-2000:]
    else:
        assert "conv ok" not in loaded.stdout and loaded.returncode != 0, (loaded.stdout, loaded.stderr[-2000:])
        assert breakage.cause in loaded.stderr, loaded.stderr[-2000:]


@pytest.mark.timeout_s(600)
@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_the_first_fix_of_a_run_with_two_causes_makes_the_program_work(machine: Machine, framework: str,
                                                                        tmp_path: Path) -> None:
    """Two causes at once (the GPU hidden by CUDA_VISIBLE_DEVICES, the system cuDNN first on LD_LIBRARY_PATH):
    `doctor -- COMMAND`'s first error is the whole repair, as plain doctor's is, not the cuDNN half of it."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "1", "LD_LIBRARY_PATH": str(machine.system)}
    script = _program(tmp_path, framework)
    before = _run([sys.executable, str(script)], env)
    assert before.returncode != 0 or "conv ok" not in before.stdout  # JAX falls back to the CPU, and says so

    done = _cudnnload(env, "doctor", "--json", "--", sys.executable, str(script))
    first = next(f for f in json.loads(done.stdout)["result"]["findings"] if f["severity"] == "error")
    actions = first["fix"]["actions"]
    assert {"do": "env-unset", "variable": "CUDA_VISIBLE_DEVICES"} in actions, first
    after = dict(env)
    after.pop("CUDA_VISIBLE_DEVICES")
    for action in actions:
        if action["do"] == "env-remove-entry" and action["variable"] == "LD_LIBRARY_PATH":
            after.pop("LD_LIBRARY_PATH")
    done = _run([sys.executable, str(script)], after)
    assert done.returncode == 0 and "conv ok" in done.stdout, (actions, done.stderr[-1500:])
