"""Python's start-up in doctor's model (issue 30 item 3): a cuDNN file a `.pth` import line maps before the program's
first line is in the process doctor judges, named with the line that maps it, and the fix takes that line out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.wheels import python_path, site_folder

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheels


def venv_with_cudnn(tmp_path: Path) -> tuple[Path, Path]:
    """A venv (no pip) holding the 9.28 cu12 wheel's files, hard-linked; its python and site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for source in (site_folder("cu12-9.28.0.42"), site_folder("cublas-cu12-12.9.1.4")):
        shutil.copytree(source, site, copy_function=os.link, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".unpacked"))
    return python, site


def venv_with_a_cut_graph(tmp_path: Path) -> tuple[Path, Path, Path]:
    """`venv_with_cudnn`, its graph cut to its first MiB (a copy: the venv's files are hard links to the wheel's)."""
    python, site = venv_with_cudnn(tmp_path)
    graph = site / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9"
    start = graph.read_bytes()[:1 << 20]
    graph.unlink()
    graph.write_bytes(start)
    return python, site, graph


def doctor_json(*args: str, tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return json.loads(done.stdout)["result"]


def test_a_cudnn_a_pth_file_maps_at_start_up_is_named_with_its_line_and_the_fix_takes_the_line_out(
        tmp_path: Path) -> None:
    python, site = venv_with_cudnn(tmp_path)
    old_graph = site_folder("cu12-9.0.0.312") / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9"
    line = f"import ctypes; ctypes.CDLL({str(old_graph)!r})"
    pth = site / "zz-old-cudnn.pth"
    pth.write_text(line + "\n")
    report = doctor_json("--python", str(python), tmp_path=tmp_path)
    first = next(f for f in report["findings"] if f["severity"] == "error")
    assert first["code"] == "mixed-release"
    assert first["fix"]["actions"] == [{"do": "remove-line", "path": str(pth), "line": line}]
    pth.write_text("")  # the fix, applied
    again = doctor_json("--python", str(python), tmp_path=tmp_path)
    assert not any(f["code"] == "mixed-release" for f in again["findings"]), again["findings"]
    assert again["release"] == "9.28.0"


def test_the_sys_path_doctor_judges_is_the_interpreters_own_not_cudnnloads(tmp_path: Path) -> None:
    """An older cuDNN in a folder on PYTHONPATH (a `pip install --target` copy) comes before site-packages on
    that Python's sys.path: doctor --python sees it where the interpreter puts it."""
    python, site = venv_with_cudnn(tmp_path)
    target = tmp_path / "target"
    shutil.copytree(site_folder("cu12-9.0.0.312"), target, copy_function=os.link,
                    ignore=shutil.ignore_patterns(".unpacked"))
    env = {**os.environ, "PYTHONPATH": f"{target}:{python_path(ROOT)}", "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--python", str(python)], env=env,
                          capture_output=True, text=True, timeout=300)
    result = json.loads(done.stdout)["result"]
    path = result["target"]["site_paths"]
    assert path.index(str(target)) < path.index(str(site))  # '' (the program's folder, for -c) comes first
    assert {i["folder"] for i in result["inventory"]["installs"]} >= {str(target / "nvidia" / "cudnn" / "lib"),
                                                                       str(site / "nvidia" / "cudnn" / "lib")}


REAL_ANSWER = """
import ctypes, os
class LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]
handle = ctypes.CDLL("libcudnn_graph.so.9", mode=os.RTLD_NOLOAD)._handle
found = ctypes.POINTER(LinkMap)()
assert ctypes.CDLL(None).dlinfo(ctypes.c_void_p(handle), 2, ctypes.byref(found)) == 0  # RTLD_DI_LINKMAP
print(os.fsdecode(found.contents.l_name))
"""


def test_a_pth_line_runs_after_the_preloads_so_its_file_answers_no_name_a_preload_answered(tmp_path: Path) -> None:
    """ld.so maps LD_PRELOAD and what it NEEDs before any Python code: a `.pth` line's dlopen by path of another
    release's graph then maps a second object, and the name libcudnn_graph.so.9 stays the preload's. The model's
    answer is the real loader's (dlinfo of a by-name dlopen in that interpreter); before, it put the start-up's
    file first and said the process had the 9.0 graph under that name."""
    from cudnnload.diagnose.targets import resolve_target

    python, site = venv_with_cudnn(tmp_path)
    old_graph = site_folder("cu12-9.0.0.312") / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9"
    (site / "zz-old-cudnn.pth").write_text(f"import ctypes; ctypes.CDLL({str(old_graph)!r}, mode=ctypes.RTLD_GLOBAL)\n")
    preload = site_folder("cu13-9.28.0.42") / "nvidia" / "cudnn" / "lib" / "libcudnn_ops.so.9"
    env = {**os.environ, "LD_PRELOAD": str(preload), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    real = subprocess.run([str(python), "-c", REAL_ANSWER], env=env, capture_output=True, text=True, timeout=60)
    assert real.returncode == 0, real.stderr
    resolved = resolve_target(None, python=str(python), environ=env)
    modelled = resolved.ctx.linker.loaded.get("libcudnn_graph.so.9")
    assert modelled is not None and os.path.realpath(modelled) == os.path.realpath(real.stdout.strip())
    assert os.path.dirname(modelled) == str(preload.parent)
    assert any(p.path == str(old_graph) and p.cause is not None for p in resolved.ctx.preloads)


def test_a_fix_that_writes_on_a_read_only_file_system_is_said_in_words_with_where_to_make_it(
        tmp_path: Path, read_only: Callable[[Path], Path]) -> None:
    """The venv's cuDNN wheel missing its ops, in a site-packages mounted read-only (a container image's root, a
    squashfs): pip's reinstall would stop at "[Errno 30] Read-only file system". The fix is said in words, naming the
    folder, remounting it read-write or changing the image it is built from, then the reinstall as it was."""
    python, site = venv_with_cudnn(tmp_path)
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_ops.so.9").unlink()
    writable_fix = [f["fix"]["actions"] for f in doctor_json("--python", str(python), tmp_path=tmp_path)["findings"]
                    if f["code"] == "missing-sublibrary"]
    assert writable_fix and writable_fix[0][0]["do"] == "pip-install", writable_fix
    read_only(site)
    [said] = [f for f in doctor_json("--python", str(python), tmp_path=tmp_path)["findings"]
              if f["code"] == "missing-sublibrary"]
    [words] = said["fix"]["actions"]
    assert words["do"] == "manual" and words["text"].startswith(f"{site} is on a file system mounted read-only"), words
    assert "pip install --force-reinstall" in words["text"], words


def test_a_fix_tried_in_an_environment_where_the_interpreter_dies_at_start_up_is_no_fix_and_no_refusal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fix differential 3-11790: the venv's graph cut short, and a sitecustomize that loads 9.0's ops, whose NEEDED
    graph comes from the first LD_LIBRARY_PATH entry (a whole 9.28 graph: the dlopen fails, site.py says so and
    goes on). Without that entry, the cut graph answers it and the interpreter dies of SIGBUS in its start-up. The
    remedy tries that world first; before, its start-up's death ended doctor ("not a Python interpreter that
    answers") for an interpreter that starts. Now that world is one where it fails, and the report comes."""
    python, site, graph = venv_with_a_cut_graph(tmp_path)
    lib = graph.parent
    whole = tmp_path / "whole"
    whole.mkdir()
    os.link(site_folder("cu12-9.28.0.42") / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9",
            whole / "libcudnn_graph.so.9")
    ops = site_folder("cu12-9.0.0.312") / "nvidia" / "cudnn" / "lib" / "libcudnn_ops.so.9"
    (site / "sitecustomize.py").write_text(f"import ctypes\nctypes.CDLL({str(ops)!r}, mode=ctypes.RTLD_GLOBAL)\n")
    env = {**os.environ, "LD_LIBRARY_PATH": f"{whole}:{lib}"}
    today = subprocess.run([str(python), "-c", "pass"], env=env, capture_output=True, text=True, timeout=60)
    assert today.returncode == 0 and "Error in sitecustomize" in today.stderr, today.stderr
    without = subprocess.run([str(python), "-c", "pass"], env={**env, "LD_LIBRARY_PATH": str(lib)},
                             capture_output=True, text=True, timeout=60)
    assert without.returncode == -7, (without.returncode, without.stderr)  # SIGBUS
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--python", str(python)],
                          env={**env, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")},
                          capture_output=True, text=True, timeout=300)
    assert "not a Python interpreter" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)["result"]
    [repair] = [f for f in result["findings"] if f["code"] == "repair"]
    assert [a["do"] for a in repair["fix"]["actions"]] == ["pip-install", "env-remove-entry"], repair["fix"]
    assert repair["fix"]["actions"][0]["requirements"] == ["nvidia-cudnn-cu12==9.28.0.42"]
    assert repair["fix"]["actions"][1]["entry"] == str(whole)
    graph.unlink()  # the fix, applied: the wheel's graph back, the entry taken out
    os.link(site_folder("cu12-9.28.0.42") / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9", graph)
    after = subprocess.run([str(python), "-c", "pass"], env={**env, "LD_LIBRARY_PATH": str(lib)},
                           capture_output=True, text=True, timeout=60)
    assert after.returncode == 0, after.stderr
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))  # doctor_json's environment
    again = doctor_json("--python", str(python), tmp_path=tmp_path)
    assert not [f for f in again["findings"] if f["severity"] == "error"], again["findings"]


def test_an_interpreter_that_dies_in_a_pth_line_is_judged_without_that_line_and_the_fix_takes_it_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fix differential 2-2034: a `.pth` import line dlopens another folder's ops, whose NEEDED graph the first
    LD_LIBRARY_PATH entry answers with the venv's graph, cut short: every start of that Python dies of SIGBUS in
    that line. doctor refused it ("not a Python interpreter that answers"), and `doctor -- python ...` had no
    change to offer. Now its start-up is observed without that file, the error says so, and the repair (the line
    out, the wheel put back) is checked by running the interpreter; `doctor -- python` (the bare name, found on
    PATH as the shell finds it) gives the same repair."""
    python, site, graph = venv_with_a_cut_graph(tmp_path)
    lib = graph.parent
    ops = site_folder("cu12-9.28.0.42") / "nvidia" / "cudnn" / "lib" / "libcudnn_ops.so.9"
    line = f"import ctypes; ctypes.CDLL({str(ops)!r}, mode=ctypes.RTLD_GLOBAL)"
    pth = site / "000-gpu-env.pth"
    pth.write_text(line + "\n")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))
    monkeypatch.setenv("PATH", f"{python.parent}:{os.environ['PATH']}")
    dies = subprocess.run([str(python), "-c", "pass"], capture_output=True, text=True, timeout=60)
    assert dies.returncode == -7, (dies.returncode, dies.stderr)  # SIGBUS
    report = doctor_json("--python", str(python), tmp_path=tmp_path)
    [dead] = [f for f in report["findings"] if f["code"] == "startup-failed"]
    assert dead["severity"] == "error" and f"{pth} line 1" in dead["message"], dead
    assert "died of SIGBUS (signal 7)" in dead["message"], dead
    assert dead["fix"]["actions"] == [{"do": "remove-line", "path": str(pth), "line": line}]
    [repair] = [f for f in report["findings"] if f["code"] == "repair"]
    assert [a["do"] for a in repair["fix"]["actions"]] == ["remove-line", "pip-install"], repair["fix"]
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    output = tmp_path / "run.json"
    ran = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--output", str(output), "--", "python", "-c",
                          "pass"], env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in ran.stderr, ran.stderr
    found = json.loads(output.read_text())["result"]["findings"]
    assert found[0]["code"] == "repair" and found[0]["fix"]["actions"] == repair["fix"]["actions"], found[0]
    pth.write_text("")  # the fix, applied: the line out, the wheel's graph back
    graph.unlink()
    os.link(site_folder("cu12-9.28.0.42") / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9", graph)
    assert subprocess.run([str(python), "-c", "pass"], timeout=60).returncode == 0
    again = doctor_json("--python", str(python), tmp_path=tmp_path)
    assert not [f for f in again["findings"] if f["severity"] == "error"], again["findings"]


def test_an_interpreter_that_dies_in_three_steps_is_judged_without_each_and_the_repair_takes_out_every_line(
        tmp_path: Path) -> None:
    """Two `.pth` import lines and a sitecustomize, each dlopening a library cut short: the start-up dies in the
    first, then (without it) in the second, then in sitecustomize. Each is an error of its own, the repair takes
    out all three lines, and applied, the interpreter starts. A fourth is more than doctor looks past: refused."""
    python, site = venv_with_cudnn(tmp_path)
    whole = site_folder("cu12-9.28.0.42") / "nvidia" / "cudnn" / "lib"
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"):
        with open(whole / name, "rb") as library:
            (cut / name).write_bytes(library.read(1 << 20))
    pths = {site / "000-a.pth": f"import ctypes; ctypes.CDLL({str(cut / 'libcudnn_graph.so.9')!r})",
            site / "001-b.pth": f"import ctypes; ctypes.CDLL({str(cut / 'libcudnn_ops.so.9')!r})"}
    for pth, line in pths.items():
        pth.write_text(line + "\n")
    customize = f"ctypes.CDLL({str(cut / 'libcudnn_cnn.so.9')!r})"
    (site / "sitecustomize.py").write_text(f"import ctypes\n{customize}\n")
    assert subprocess.run([str(python), "-c", "pass"], timeout=60).returncode == -7  # SIGBUS

    report = doctor_json("--python", str(python), tmp_path=tmp_path)
    dead = [f for f in report["findings"] if f["code"] == "startup-failed"]
    assert [f["severity"] for f in dead] == ["error"] * 3, dead
    assert all(f"{pth} line 1" in f["message"] for pth, f in zip(pths, dead, strict=False)), dead
    assert "sitecustomize.py line 2" in dead[2]["message"], dead[2]
    [repair] = [f for f in report["findings"] if f["code"] == "repair"]
    assert repair["fix"]["actions"] == [
        *({"do": "remove-line", "path": str(pth), "line": line} for pth, line in pths.items()),
        {"do": "remove-line", "path": str(site / "sitecustomize.py"), "line": customize}], repair["fix"]

    fourth = site / "002-c.pth"
    fourth.write_text(f"import ctypes; ctypes.CDLL({str(cut / 'libcudnn_ops.so.9')!r})\n")
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    refused = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--python", str(python)], env=env,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "not a Python interpreter that answers" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    fourth.unlink()

    for pth in pths:  # the repair, applied
        pth.write_text("")
    (site / "sitecustomize.py").write_text("import ctypes\n")
    assert subprocess.run([str(python), "-c", "pass"], timeout=60).returncode == 0
    again = doctor_json("--python", str(python), tmp_path=tmp_path)
    assert not [f for f in again["findings"] if f["severity"] == "error"], again["findings"]
