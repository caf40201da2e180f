"""The ``cudnnload`` command: thin wrappers that format what the stages return.

Exit codes: 0 healthy, 1 problems found, 2 usage error, 3 cudnnload could not do its work (its output
cannot be written: a closed pipe, a full disk; a package it needs is missing; a bug). Every expected
failure prints one line naming the path and the reason; no traceback reaches the user.
"""

from __future__ import annotations

import errno
import os
import signal
import sys

from cudnnload import _catch_early_interrupt, _interrupted_while_starting, _is_the_command


def _interrupt_outside_imports(signum: int, frame: Any) -> None:
    """Ctrl-C while cudnnload works: KeyboardInterrupt, which `main` turns into one line; but never inside the
    import machinery, where it can leave a module lock held, and a thread importing beside it (plain doctor
    imports while its child runs) then waits for it for ever: there it is raised again 10 ms later."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            import threading

            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
            return
        frame = frame.f_back
    raise KeyboardInterrupt


_catch_early_interrupt()  # python -m cudnnload: runpy has made the command __main__ by now

from cudnnload.errors import CannotRun, CudnnloadError, LoadError, OutputError, UsageError  # noqa: E402

# click (and functools, 2 ms) is imported where it is used: `main` first starts the program of
# `doctor -- COMMAND` (`launch.early`), and click, like the rest, then loads while that program runs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn, TypeVar

    import click

    F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_CANNOT_RUN = 0, 1, 2, 3


class _OutputLost(Exception):
    """Standard output could not be written (a closed pipe, a full disk): the OSError, carried to `_run`."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _friendly(command: F) -> F:
    """Turn our own errors into one line and exit 2 (3 when cudnnload's output cannot be written), instead
    of a traceback."""
    import functools

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except OSError as exc:
            if exc.filename is not None or exc.errno is None:
                raise
            raise _OutputLost(exc) from None  # past click, whose handler would end a broken pipe silently
        except CudnnloadError as exc:
            import click

            from cudnnload.report import escaped

            code = _exit_code(exc)
            click.echo(f"cudnnload: error: {escaped(exc.message)}", err=True)
            if kwargs.get("as_json") and not isinstance(exc, OutputError):
                _json_error(exc.reason, exc.path, exc.fix, code)
            sys.exit(code)

    return wrapper  # type: ignore[return-value]


def _exit_code(error: CudnnloadError) -> int:
    """3 when cudnnload cannot do its work (its output, a package it needs), else 2."""
    return EXIT_CANNOT_RUN if isinstance(error, (OutputError, CannotRun)) else EXIT_USAGE


def _json_option(command: F) -> F:
    import click

    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema in README).")(command)


def _verify_option(command: F) -> F:
    import click

    return click.option("--verify", is_flag=True, help="Also check each pip-installed file's sha256 against its "
                        "RECORD (sizes are always checked; remembered per file until it changes).")(command)


def make_cli() -> click.Group:
    """Build the command group; a factory, so tests get a fresh one without reloading modules."""
    import click

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(package_name="cudnnload")
    def cli() -> None:
        """Find, inspect and diagnose NVIDIA cuDNN: which libcudnn loads, why, and what is wrong."""

    @cli.command("which")
    @click.argument("targets", nargs=-1, metavar="[TARGET] [NAME...]")
    @click.option("--from", "consumer", metavar="PATH", hidden=True)  # before TARGET was positional
    @click.option("-v", "--verbose", is_flag=True, help="Show the full search trail for each name.")
    @_json_option
    @_friendly
    def which_command(targets: tuple[str, ...], consumer: str | None, verbose: bool, as_json: bool) -> None:
        """What each cuDNN name resolves to (default: the shim and every sub-library), and why.

        TARGET: a program or shared object (.../torch/lib/libtorch_cuda.so) to resolve as its own loads would,
        or a cuDNN file (its install); without one, this Python. NAME: libcudnn_ops.so.9, ops, cnn_infer ...
        """
        with _recording():
            from cudnnload import report
            from cudnnload.diagnose.which import which

            names, given = _names_and_target(targets, consumer)
            # without a target the names resolve as this Python loads them: a fix installs into it
            result = which(names, consumer=given, python=None if given else sys.executable)
            if as_json:
                _echo(report.dumps("which", result), as_json=True)
            else:
                _echo(report.which_text(report.printable(result), verbose))
        code = EXIT_OK if result.healthy else EXIT_PROBLEMS
        if _recorder is not None:
            _recorder.keep(code)
        sys.exit(code)

    @cli.command("inspect")
    @click.argument("paths", nargs=-1, type=_path())
    @click.option("-v", "--verbose", is_flag=True, help="Also list soname, build-id, VersionChecks and needs.")
    @click.option("--no-cache", is_flag=True, help="Re-read every file instead of using the on-disk memo.")
    @_verify_option
    @_json_option
    @_friendly
    def inspect_command(paths: tuple[str, ...], verbose: bool, no_cache: bool, verify: bool, as_json: bool) -> None:
        """Every cuDNN install found (or the given files and folders): inventory and verdicts."""
        from cudnnload import report
        from cudnnload.diagnose.inventory import find

        inventory = find(paths, use_cache=not no_cache, verify=verify)
        if as_json:
            _echo(report.dumps("inventory", inventory), as_json=True)
        else:
            _echo(report.inventory_text(report.printable(inventory), verbose))
        sys.exit(EXIT_OK if inventory.healthy else EXIT_PROBLEMS)

    @cli.command("doctor", cls=_command_after_dashes())
    @click.argument("target", required=False, type=_path())
    @click.option("--python", "python", metavar="PATH", type=_path(), help="Diagnose another interpreter or venv "
                  "and the frameworks installed there.")
    @click.option("--pid", type=click.IntRange(min=1), metavar="PID", help="Diagnose a running process from "
                  "/proc/PID, read-only: the cuDNN it has mapped, and where what it has not loaded yet would come "
                  "from.")
    @click.option("--timeout", type=_seconds(), help="Seconds for each child process (the probe, a "
                  "framework's build version; default 60), or for the COMMAND (default: no limit).")
    @click.option("--output", metavar="PATH", help="Write the JSON report to PATH (%N: this host's name) and "
                  "print one line instead; for `cudnnload fleet FOLDER`.")
    @click.option("--env", "assignments", metavar="NAME=VALUE", multiple=True, help="Judge (and run the COMMAND) "
                  "with NAME set to VALUE: for an environment cudnnload itself cannot start in, e.g. "
                  "`LD_PRELOAD= cudnnload doctor --env LD_PRELOAD=\"$LD_PRELOAD\"`. Repeatable.")
    @click.option("--requirements", "requirements", metavar="FILE", multiple=True, type=_path(), help="Predict, before "
                  "anything is installed, what `pip install -r FILE` would give each framework (pip's own resolver "
                  "and order; a pinned requirements file, or pylock.toml for pip >= 26.1). With --python: that "
                  "interpreter's pip. Repeatable.")
    @click.option("--pip-args", default="", metavar="ARGS", help="With --requirements: more arguments for pip "
                  "(\"--index-url URL --python-version 3.12 --platform manylinux_2_28_x86_64\").")
    @click.option("--root", metavar="DIR", type=_path(), help="Judge an unpacked container image or chroot without "
                  "running it: its ld.so.cache, ld.so.conf, Python and site-packages, seen from inside it.")
    @click.option("--env-file", metavar="FILE", type=_path(), help="With --root: the image's environment, "
                  "NAME=VALUE lines or an OCI/docker config.json (its Env).")
    @click.option("--driver", metavar="VERSION", help="With --requirements or --root: judge against this NVIDIA "
                  "driver (535.104.05) or CUDA version (12.2) instead of this machine's (--root: none unless given).")
    @_verify_option
    @_json_option
    @_friendly
    def doctor_command(target: str | None, python: str | None, pid: int | None, timeout: float | None,
                       output: str | None, assignments: tuple[str, ...], requirements: tuple[str, ...],
                       pip_args: str, root: str | None, env_file: str | None, driver: str | None, verify: bool,
                       as_json: bool) -> None:
        """Run every check and say what the user will see and what to fix.

        TARGET: a cuDNN library (the install it belongs to), a folder, a program or shared object that
        uses cuDNN, or a soname (libcudnn.so.9). Without one: this Python's environment.
        `doctor --pid PID` diagnoses a running process; `doctor -- COMMAND [ARGS...]` runs the program and
        explains what it did with cuDNN. `doctor --requirements FILE` and `doctor --root DIR` judge before
        anything is installed or run.
        """
        output = _output_path(output)  # refused before any work: the program has not run yet
        command = click.get_current_context().meta.get("command")
        given = [what for what, value in (("TARGET", target), ("--python", None if requirements else python),
                                          ("--pid", pid), ("`-- COMMAND`", command),
                                          ("--requirements", requirements or None), ("--root", root))
                 if value is not None]
        if len(given) > 1:
            raise UsageError(f"give one of TARGET, --python, --pid, `-- COMMAND`, --requirements or --root, not both "
                             f"{given[0]} and {given[1]}")
        for option, value, needs, name in (("--pip-args", pip_args, requirements, "--requirements"),
                                           ("--env-file", env_file, root, "--root"),
                                           ("--driver", driver, requirements or root, "--requirements or --root")):
            if value and not needs:
                raise UsageError(f"{option} goes with {name}")
        if requirements:
            from cudnnload import report
            from cudnnload.diagnose.before import predict

            predicted = predict(requirements, pip_args, python=python, driver=driver, environ=_environment(assignments),
                                timeout=timeout)
            _say(output, as_json, lambda: report.dumps("doctor-requirements", predicted),
                 lambda: report.prediction_text(report.printable(predicted)), predicted.healthy)
            sys.exit(EXIT_OK if predicted.healthy else EXIT_PROBLEMS)
        if root is not None:
            from cudnnload import report
            from cudnnload.diagnose.rooted import doctor_root

            judged = doctor_root(root, env_file=env_file, driver=driver)
            _say(output, as_json, lambda: report.dumps("doctor", judged),
                 lambda: report.report_text(report.printable(judged)), judged.healthy)
            sys.exit(EXIT_OK if judged.healthy else EXIT_PROBLEMS)
        environ = _environment(assignments)
        if pid is not None and assignments:
            raise UsageError("--env does not apply to --pid: a running process's environment is read from "
                             "/proc/PID/environ")
        if pid is not None:
            from cudnnload import report
            from cudnnload.diagnose.pid import diagnose_pid

            running = diagnose_pid(pid)
            _say(output, as_json, lambda: report.dumps("doctor-process", running),
                 lambda: report.process_report_text(report.printable(running)), running.healthy)
            sys.exit(EXIT_OK if running.healthy else EXIT_PROBLEMS)
        if command is not None:
            # the program starts first; what explains it is imported while it runs
            import importlib
            import threading

            from cudnnload.diagnose.observe import diagnose_program

            threading.Thread(target=importlib.import_module, args=("cudnnload.report",), daemon=True).start()
            seen = diagnose_program(command, timeout=timeout, environ=environ, json_out=as_json and output is None)
            from cudnnload import report

            _say(output, as_json, lambda: report.dumps("doctor-program", seen),
                 lambda: report.program_report_text(report.printable(seen)), seen.healthy)
            sys.exit(EXIT_OK if seen.healthy else EXIT_PROBLEMS)
        import importlib
        import threading
        from concurrent.futures import ThreadPoolExecutor

        # plain doctor: this Python's start-up is observed (a child, ~a python -c's time) while doctor's own
        # modules load; the report's renderers load while the probe runs (the main thread only waits for it)
        early = ThreadPoolExecutor(max_workers=1)
        started = early.submit(_observe_this_python, environ) if target is None and python is None else None
        from cudnnload.diagnose.doctor import doctor

        threading.Thread(target=importlib.import_module, args=("cudnnload.report",), daemon=True).start()
        result = doctor(environ, target=target, python=python, timeout=timeout or 60.0, verify=verify,
                        started=started.result if started is not None else None)
        early.shutdown()
        from cudnnload import report

        _say(output, as_json, lambda: report.dumps("doctor", result),
             lambda: report.report_text(report.printable(result)), result.healthy)
        sys.exit(EXIT_OK if result.healthy else EXIT_PROBLEMS)

    @cli.command("explain")
    @click.argument("text")
    @click.option("--here", is_flag=True, help="The error is from this machine: also check each cause here and rank "
                  "with what this machine shows (off by default: a pasted error is ranked by its text alone).")
    @_json_option
    @_friendly
    def explain_command(text: str, here: bool, as_json: bool) -> None:
        """The known causes of a pasted error message, ranked by what the text shows.

        TEXT: the message (quote it), a file that holds it (a saved log), or - to read it from standard input.
        Exit 1 when --here finds a cause on this machine, 0 otherwise.
        """
        from cudnnload import report
        from cudnnload.diagnose.explain import explain

        result = explain(_text_to_explain(text), here=here)
        _echo(report.dumps("explain", result.json()) if as_json else report.explanation_text(report.printable(result)),
              as_json=as_json)
        sys.exit(EXIT_PROBLEMS if result.confirmed else EXIT_OK)

    @cli.command("diff")
    @click.argument("left")
    @click.argument("right")
    @_json_option
    @_friendly
    def diff_command(left: str, right: str, as_json: bool) -> None:
        """Compare two saved `doctor --json` reports (one where it works, one where it does not)."""
        from cudnnload import report
        from cudnnload.diagnose.doctor import diff_reports

        docs = [_read_report(path) for path in (left, right)]
        differences = diff_reports(docs[0], docs[1])
        _echo(report.dumps("diff", {"left": left, "right": right, "differences": differences}) if as_json
              else report.diff_text(report.printable(differences), *report.printable((left, right))), as_json=as_json)
        sys.exit(EXIT_PROBLEMS if differences else EXIT_OK)

    @cli.command("fleet")
    @click.argument("where", required=False, metavar="FOLDER|TARGET", type=_path())
    @click.option("--ray", "ray_address", is_flag=False, flag_value="auto", metavar="[ADDRESS]",
                  help="Collect through the Ray cluster at ADDRESS (host:port; default auto): one doctor per node.")
    @click.option("--python", "python", metavar="PATH", type=_path(),
                  help="With --ray: the interpreter each node diagnoses.")
    @click.option("--timeout", type=_seconds(1), default=120.0, show_default=True,
                  help="With --ray: seconds for each node's doctor.")
    @click.option("--connect-timeout", type=_seconds(1), default=30.0, show_default=True,
                  help="With --ray: seconds to reach the cluster.")
    @_json_option
    @_friendly
    def fleet_command(where: str | None, ray_address: str | None, python: str | None, timeout: float,
                      connect_timeout: float, as_json: bool) -> None:
        """The doctor reports of every node, grouped; the odd nodes and what differs on them.

        `cudnnload fleet FOLDER`: the reports in FOLDER (`cudnnload doctor --output FOLDER/%N.json` on each
        node: srun, pdsh, a DaemonSet). `cudnnload fleet --ray [ADDRESS] [TARGET]`: run doctor [TARGET] on
        every node of a Ray cluster.
        """
        from cudnnload import report
        from cudnnload.diagnose import fleet

        if ray_address is not None:
            if not _looks_like_address(ray_address):  # `--ray TARGET`: the address is the default
                where, ray_address = where or ray_address, "auto"
            args = [*([where] if where else []), *(["--python", python] if python else [])]
            reports: Any = fleet.collect_ray(ray_address, args, timeout=timeout, init_timeout=connect_timeout)
        else:
            if where is None:
                raise UsageError("give a FOLDER of reports, or --ray", fix="cudnnload fleet reports/")
            if python:
                raise UsageError("--python is for --ray (each node's doctor); a report already says its Python")
            reports = fleet.read_folder(where)
        result = fleet.summarize(reports)
        if not result.nodes:
            raise UsageError("no node answered", path=ray_address or where)
        _echo(report.dumps("fleet", result) if as_json else report.fleet_text(report.printable(result)),
              as_json=as_json)
        sys.exit(EXIT_OK if result.healthy else EXIT_PROBLEMS)

    @cli.command("trace", cls=_command_after_dashes())
    @click.option("--lazy", "modes", flag_value="lazy", multiple=True, help="Open only the shim, as frameworks do.")
    @click.option("--preload", "modes", flag_value="preload", multiple=True, help="cudnnload.load() the whole set.")
    @click.option("--warm", "modes", flag_value="warm", multiple=True,
                  help="cudnnload.load(warmup=[the traced problem]) first, as an app's start-up would.")
    @click.option("--start", "modes", flag_value="start", multiple=True,
                  help="cudnnload.start(warmup=[...]) as the first statement: load and warm-up in threads.")
    @click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100), help="Cold processes.")
    @click.option("--folder", hidden=True)  # before TARGET was positional
    @click.option("--backend", default="auto", show_default=True, help="Backend for the convolution stages.")
    @click.option("--shape", default="32,64,64,56", show_default=True, metavar="N,C,K,HW",
                  help="3x3 convolution, padding 1, then ReLU.")
    @click.option("--dtype", type=click.Choice(["float32", "float16"]), default="float16", show_default=True)
    @click.option("--no-conv", is_flag=True, help="Stop after cudnnCreate.")
    @click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Also draw the waterfall (PNG/SVG).")
    @click.argument("target", required=False, type=_path())
    @_json_option
    @_friendly
    def trace_command(modes: tuple[str, ...], runs: int, folder: str | None, backend: str, shape: str, dtype: str,
                      no_conv: bool, plot_path: str | None, target: str | None, as_json: bool) -> None:
        """First-call latency stage by stage: of cudnnload's own path, or of `-- COMMAND...` (any program).

        TARGET: the cuDNN folder (or a file of it) to trace; default: the one load() would take.
        """
        from cudnnload import report
        from cudnnload.diagnose import trace

        _plot_problem(plot_path)  # before any work
        command = click.get_current_context().meta.get("command")
        if command is not None:
            if target or folder:
                raise UsageError("give a TARGET or `-- COMMAND`, not both")
            result = trace.trace_program(command, json_out=as_json)
            _echo(report.dumps("trace-program", result) if as_json else trace.program_text(report.printable(result)),
                  as_json=as_json)
            sys.exit(EXIT_OK if result.returncode == 0 else EXIT_PROBLEMS)
        conv = None if no_conv else {"backend": _backend_name(backend), "dtype": dtype, **_conv_shape(shape)}
        where, major = _trace_target(target or folder)
        traces = [trace.trace_loader(where, major, mode=mode, runs=runs, conv=conv)
                  for mode in (modes or ("lazy", "preload"))]
        _echo(report.dumps("trace", traces) if as_json else trace.loader_text(report.printable(traces)),
              as_json=as_json)
        if plot_path:
            trace.plot(traces, plot_path)
        sys.exit(EXIT_OK if all(t.runs for t in traces) else EXIT_PROBLEMS)

    @cli.command("run", cls=_command_after_dashes(), options_metavar="[OPTIONS] -- COMMAND [ARGS...]")
    @click.option("--cudnn", metavar="PATH", type=_path(), help="The cuDNN to pin: its folder, or a file of it "
                  "(default: the install load() takes).")
    @click.option("--for", "frameworks", metavar="FRAMEWORK", multiple=True, help="The framework the program uses "
                  "(torch, jax, ...): the install is chosen for it.")
    @click.option("--replace-preload", is_flag=True, help="Leave out your LD_PRELOAD entries that map another "
                  "cuDNN (said on stderr) instead of refusing them.")
    @_friendly
    def run_command(cudnn: str | None, frameworks: tuple[str, ...], replace_preload: bool) -> None:
        """Run a program (Python or not) with a proven, coherent cuDNN pinned.

        The set is proven in a child process, then preloaded by absolute path (LD_PRELOAD, leaves first, before
        your own entries), so every libcudnn the program asks for is the set's, whatever LD_LIBRARY_PATH says.
        The program replaces cudnnload: its exit status, signals, streams and terminal are its own.
        """
        _pin_and_run(click.get_current_context().meta.get("command"), cudnn, frameworks, replace_preload)

    @cli.command("backends")
    @_json_option
    @_friendly
    def backends_command(as_json: bool) -> None:
        """The convolution backends installed: where each comes from, whether it can run here, and why not."""
        from cudnnload import report
        from cudnnload.dispatch.backends import list_backends

        statuses = list_backends()
        _echo(report.dumps("backends", statuses) if as_json else report.backends_text(report.printable(statuses)),
              as_json=as_json)
        sys.exit(EXIT_PROBLEMS if any(status.broken for status in statuses) else EXIT_OK)

    return cli


def _observe_this_python(environ: dict[str, str] | None) -> Any:
    """This interpreter's start-up in ``environ`` (`resolve.startup.this_python`: a light import), for plain
    doctor."""
    from cudnnload.resolve.startup import this_python

    return this_python(dict(os.environ if environ is None else environ))


def _command_after_dashes() -> type[click.Command]:
    import click

    class CommandAfterDashes(click.Command):
        """Everything after ``--`` is the program to run (``doctor -- python app.py``), kept apart from
        TARGET."""

        def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
            if "--" in args:
                at = args.index("--")
                ctx.meta["command"] = tuple(args[at + 1:])
                args = args[:at]
            return super().parse_args(ctx, args)

    return CommandAfterDashes


def _names_and_target(words: tuple[str, ...], consumer: str | None) -> tuple[tuple[str, ...], str | None]:
    """``which``'s words: the one written as a path (it has a '/') is the TARGET; the others are names, even
    where the current folder has a file of that name (a name is what a program asks the linker for)."""
    paths = [word for word in words if "/" in word]
    if consumer is not None:
        paths.append(consumer)
    if len(paths) > 1:
        raise UsageError(f"one TARGET at a time, not {len(paths)}: {', '.join(paths)}",
                         fix="cudnnload which TARGET [NAME...]")
    return tuple(word for word in words if word not in paths), (paths[0] if paths else None)


def _trace_target(folder: str | None) -> tuple[str, int]:
    """The install to trace: the given folder (or the folder of a given cuDNN file), or the one load()
    would take."""
    from cudnnload.diagnose.inventory import find
    from cudnnload.files import path_problem
    from cudnnload.judge.choose import choose_install
    from cudnnload.resolve.catalog import classify

    problem = path_problem(folder) if folder else None
    if folder and problem is not None:
        raise UsageError(problem[1], path=folder, fix="give the folder that holds libcudnn.so.N, or a file of it")
    if folder and not os.path.isdir(folder):
        if classify(os.path.basename(folder)) is None:
            raise UsageError("not a cuDNN library or folder", path=folder, fix="give the folder that holds "
                             "libcudnn.so.N, or a file of it")
        folder = os.path.dirname(os.path.abspath(folder))  # a cuDNN file stands for its folder
    install, rejected = choose_install(find([folder] if folder else []).installs)
    if install is None:
        raise UsageError("no loadable cuDNN to trace" + (f" ({'; '.join(rejected)})" if rejected else ""),
                         path=folder, fix="give the folder of a cuDNN that loads as TARGET")
    return install.folder, install.major


def _pin_and_run(command: tuple[str, ...] | None, cudnn: str | None, frameworks: tuple[str, ...],
                 replace_preload: bool) -> NoReturn:
    """`run`: the set pinned, what was done said on stderr, then the program in cudnnload's place."""
    from cudnnload.loading.pin import execute, run_environment

    if not command:
        raise UsageError("no program to run: give it after --", fix="cudnnload run [--cudnn PATH] -- COMMAND")
    if cudnn is not None and frameworks:
        raise UsageError("give --cudnn PATH or --for FRAMEWORK, not both")
    try:
        pinned = run_environment(cudnn, for_=frameworks, replace_preload=replace_preload, command=command)
    except LoadError as exc:
        if cudnn is not None:
            raise  # the cuDNN you named cannot be pinned: said, nothing run
        # run never makes a working program fail: with nothing to pin (no cuDNN its rules accept, none at all), it
        # loads its own cuDNN, as without cudnnload
        whose = f", {', '.join(frameworks)} loading its own cuDNN" if frameworks else ""
        why = f"{exc.path}: {exc.reason}" if exc.path else exc.reason  # its fix is for pinning, which it goes without
        sys.stderr.write(f"cudnnload: nothing pinned ({why}); the program runs as it would without cudnnload{whose}\n")
        sys.stderr.flush()
        execute(command, os.environ, closed=_closed, pinning=False)
    said = [*pinned.notes] + ([f"left out of LD_PRELOAD, as each maps another cuDNN: {' '.join(pinned.removed)}"]
                              if pinned.removed else [])
    for line in said:
        sys.stderr.write(f"cudnnload: {line}\n")
    sys.stderr.flush()
    execute(command, pinned.environ, closed=_closed)


def _run_args(args: list[str]) -> tuple[tuple[str, ...], str | None, tuple[str, ...], bool] | None:
    """`run`'s command line as its click command reads it: (COMMAND, --cudnn, --for, --replace-preload); None
    for anything else (--help, a mistake), which the click command then answers."""
    if "--" not in args:
        return None
    at = args.index("--")
    options, command = args[:at], tuple(args[at + 1:])
    cudnn: str | None = None
    frameworks: list[str] = []
    replace = False
    while options:
        name, equals, value = options.pop(0).partition("=")
        if name == "--replace-preload" and not equals:
            replace = True
        elif name in ("--cudnn", "--for") and (equals or options):
            value = value if equals else options.pop(0)
            if name == "--cudnn":
                if not value:  # click's type says why (`_path`)
                    return None
                cudnn = value  # the last one given, as click takes it
            else:
                frameworks.append(value)
        else:
            return None
    return command, cudnn, tuple(frameworks), replace


def _run_now(command: tuple[str, ...], cudnn: str | None, frameworks: tuple[str, ...], replace: bool) -> int:
    """`run`, without click: its exit code when the program could not be started."""
    try:
        _pin_and_run(command, cudnn, frameworks, replace)
    except CudnnloadError as exc:
        from cudnnload.report import escaped

        _say_error(escaped(exc.message))
        return _exit_code(exc)
    except Exception as exc:  # noqa: BLE001 (the last line of defence: one line, never a traceback)
        return _internal(exc)


# An error message and the lines around it: a log pasted whole is some KB; /dev/zero never ends. Of a longer text
# the first and the last STDIN_KEPT bytes are kept (a log's failure is at its end, the message that caused it often
# near its start), and of the rest between them the lines that may tell (`_TELLING`: a library, a loader's or a
# status's words), up to MIDDLE_KEPT bytes, the first half and the last half of them (a 5 MB training log with the
# cuDNN message in its middle was "not recognised"); no more than STDIN_READ_LIMIT bytes are read.
STDIN_KEPT = 1 << 19
MIDDLE_KEPT = 1 << 18
STDIN_READ_LIMIT = 1 << 26
_TELLING = (rb"(?i)cudnn|cuda|cublas|nvrtc|nvidia|driver|\.so\b|\.dll\b|error|fail|abort|fault|traceback|"
            rb"exception|cannot|could not|unable|status_|out of memory")
_LINE_KEPT = 2000  # of a telling line in the middle, its first bytes (explain reads no more of a line)


def _read_stdin() -> str:
    """Standard input: its first and last `STDIN_KEPT` bytes, of at most `STDIN_READ_LIMIT` read."""
    stream = getattr(sys.stdin, "buffer", None)
    read = stream.read if stream is not None else lambda size: sys.stdin.read(size).encode("utf-8", "replace")
    return _decoded(_head_and_tail(read))


def _text_to_explain(text: str) -> str:
    """What ``explain TEXT`` explains: standard input for ``-``; a saved log's head and tail where TEXT is one line
    that names a regular file (``cudnnload explain crash.log`` was read as the words "crash.log" and not
    recognised); otherwise TEXT itself. A path that is there but gives no text (a folder, a FIFO or a device, which
    is never opened; a file this user cannot read; a link to nothing) is refused in one line naming it: explained as
    words, it said "no cuDNN message" of a log it never read. A library named is refused in one line that points
    to ``inspect``."""
    if text == "-":
        return _read_stdin()
    if not text.strip() or "\n" in text:
        return text
    from cudnnload.files import NotRegularFile, open_regular

    try:
        with open_regular(text) as handle:
            saved = _head_and_tail(handle.read)
    except NotRegularFile as exc:
        raise UsageError(f"{exc.reason}, not a saved error message", path=text,
                         fix="give the log file, or quote the message itself") from None
    except OSError as exc:
        if not os.path.lexists(text):
            return text
        reason = "a symbolic link to nothing" if exc.errno == errno.ENOENT else f"cannot be read ({exc.strerror})"
        raise UsageError(reason, path=text, fix="give a log file you can read, or quote the message itself") from None
    except ValueError:
        return text
    if saved.startswith(b"\x7fELF"):
        raise UsageError("a library, not a saved error message: `cudnnload inspect` reads a library", path=text)
    return _decoded(saved)


def _decoded(data: bytes) -> str:
    """A saved log's or a pipe's text in the encoding Windows may have written it in: UTF-8 (its BOM dropped);
    UTF-16 where a BOM says so or its every other byte is NUL (Windows PowerShell 5.1's `>` writes UTF-16LE); a
    Chinese Windows console's GBK (read as GB18030) where the bytes are no UTF-8 but read as Chinese in it; else
    UTF-8 with each byte it cannot read replaced."""
    import codecs
    import re

    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8):].decode("utf-8", "replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    appended = re.search(_UTF16_RUN, data)
    if appended is not None and _lines_of_utf8(data[:appended.start()]):
        return _mixed(data)  # UTF-16LE appended to UTF-8 lines (PowerShell 5.1's `>>` to a log another program wrote)
    sample = data[:4096]
    if len(sample) >= 8 and sample[1::2].count(0) > len(sample) // 4 and sample[0::2].count(0) < len(sample) // 16:
        return data.decode("utf-16-le", "replace")
    text = data.decode("utf-8", "replace")
    if text.count("\ufffd") > 4:  # more than a head's and a tail's cut characters: not UTF-8
        try:
            chinese = data.decode("gb18030")
        except UnicodeDecodeError:
            return text
        if any("\u4e00" <= character <= "\u9fff" for character in chinese):
            return chinese
    return text


# A run of UTF-16LE text: characters of the first 256 (ASCII and Latin-1: every message's words), each a byte then a
# NUL, long enough (16 characters) that no UTF-8 text or binary junk is read as one by chance
_UTF16_RUN = rb"(?:\xff\xfe)?(?:[\x01-\xff]\x00){16,}"


def _lines_of_utf8(head: bytes) -> bool:
    """Whether ``head`` is whole lines of UTF-8 (a line break in it, no NUL): no UTF-16 text starts that way."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\n" in head and b"\x00" not in head


def _mixed(data: bytes) -> str:
    """``data`` read as UTF-8 but for its runs of UTF-16LE (`_UTF16_RUN`, a BOM before one dropped)."""
    import re

    parts, at = [], 0
    for run in re.finditer(_UTF16_RUN, data):
        parts += [data[at:run.start()].decode("utf-8", "replace"),
                  run.group().removeprefix(b"\xff\xfe").decode("utf-16-le", "replace")]
        at = run.end()
    return "".join([*parts, data[at:].decode("utf-8", "replace")])


def _head_and_tail(read: Callable[[int], bytes]) -> bytes:
    """What ``read`` gives: its first and last `STDIN_KEPT` bytes and, between them, the telling lines of what was
    left out (`_Middle`), a line break between the parts where some were left out; reading at most
    `STDIN_READ_LIMIT`."""
    head = read(STDIN_KEPT)
    tail, total, middle = b"", len(head), _Middle()
    while total < STDIN_READ_LIMIT:
        chunk = read(min(STDIN_KEPT, STDIN_READ_LIMIT - total))
        if not chunk:
            break
        total += len(chunk)
        tail += chunk
        if len(tail) > STDIN_KEPT:  # what falls out of the tail's window, in whole lines where it has them
            cut = len(tail) - STDIN_KEPT
            line_end = tail.find(b"\n", cut)
            cut = line_end + 1 if 0 <= line_end < cut + _LINE_KEPT else cut
            middle.add(tail[:cut])
            tail = tail[cut:]
    return head + middle.kept() + tail


class _Middle:
    """The telling lines (`_TELLING`) of the bytes between a long text's head and tail, each once (numbers aside):
    the first and the last MIDDLE_KEPT / 2 bytes of them, each line cut at `_LINE_KEPT`."""

    def __init__(self) -> None:
        import re
        from collections import deque

        self.telling = re.compile(_TELLING)
        self.digits = re.compile(rb"\d+")
        self.seen: set[bytes] = set()  # each kept line with its numbers blanked: a log repeats its errors
        self.first: list[bytes] = []
        self.last: deque[bytes] = deque()
        self.first_size = self.last_size = 0
        self.skipped = False
        self.partial = b""  # a line cut between two calls

    def add(self, data: bytes) -> None:
        self.skipped = True
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()[-_LINE_KEPT:]
        for line in lines:
            if self.telling.search(line[:_LINE_KEPT]):
                self._keep(line[:_LINE_KEPT] + b"\n")

    def _keep(self, line: bytes) -> None:
        shape = self.digits.sub(b"0", line)
        if shape in self.seen:
            return
        if len(self.seen) > 65536:  # (a text of none the same: the memory of them bounded)
            self.seen.clear()
        self.seen.add(shape)
        if self.first_size + len(line) <= MIDDLE_KEPT // 2:
            self.first.append(line)
            self.first_size += len(line)
            return
        self.last.append(line)
        self.last_size += len(line)
        while self.last_size > MIDDLE_KEPT // 2:
            self.last_size -= len(self.last.popleft())

    def kept(self) -> bytes:
        if not self.skipped:
            return b""
        if self.partial and self.telling.search(self.partial):
            self._keep(self.partial + b"\n")
        return b"\n" + b"".join(self.first) + b"".join(self.last)


def _path() -> click.ParamType:
    """A path given on the command line; an empty one refused (every call would read it as the current folder)."""
    import click

    class GivenPath(click.ParamType):
        name = "path"

        def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
            if value == "":
                self.fail("an empty name is no path (it would be read as the current folder)", param, ctx)
            return value

    return GivenPath()


def _seconds(shortest: float | None = None) -> click.ParamType:
    """A number of seconds for a ``--timeout`` within `launch`'s bounds; nan, which passes every range check of
    click's FloatRange, refused too."""
    import math

    import click

    from cudnnload.diagnose.launch import LONGEST_TIMEOUT_S, SHORTEST_TIMEOUT_S

    class Seconds(click.FloatRange):
        def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
            number = super().convert(value, param, ctx)
            if math.isnan(number):
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
            return number

    return Seconds(SHORTEST_TIMEOUT_S if shortest is None else shortest, LONGEST_TIMEOUT_S)


def _conv_shape(text: str) -> dict[str, int]:
    try:
        n, c, k, size = (int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--shape wants N,C,K,HW (four integers), not {text!r}") from None
    if min(n, c, k, size) < 1:
        raise UsageError(f"--shape wants N,C,K,HW of 1 or more each, not {text!r}")
    return {"n": n, "c": c, "k": k, "size": size}


def _backend_name(name: str) -> str:
    """``--backend``: "auto" or a backend installed here (`cudnnload backends` lists them), else UsageError."""
    if name == "auto":
        return name
    from cudnnload.dispatch.backends import load_registry

    known = load_registry().names
    if name not in known:
        raise UsageError(f"--backend: no backend named {name!r} (installed: auto, {', '.join(known)})",
                         fix="cudnnload backends")
    return name


def _looks_like_address(text: str) -> bool:
    """A Ray address: ``auto``, ``host:port``, ``ray://host:port``; not a library or a path."""
    return text == "auto" or text.startswith("ray://") or (":" in text and "/" not in text)


def _output_path(output: str | None) -> str | None:
    """``--output PATH`` with ``%N`` (this host's name) filled in, or UsageError when nothing may be written
    there (`files.output_problem`: only an absent path or a regular file of this user)."""
    if output is None:
        return None
    import socket

    from cudnnload.files import output_problem

    path = output.replace("%N", socket.gethostname().split(".")[0]).replace("%%", "%")
    problem = "an empty name is no file" if not path else output_problem(path)
    if problem is not None:
        raise UsageError(f"--output: {problem}", path=path, fix="give a new file name, or a file of your own")
    return path


def _plot_problem(path: str | None) -> None:
    """UsageError, before any work, when ``--plot PATH`` cannot be written as `--output` could not
    (`files.output_problem`: a link, a device, a FIFO, a folder ...), its folder does not exist, its name
    does not end in a format (matplotlib would add ".png" to it), or matplotlib is missing."""
    if path is None:
        return
    import importlib.util

    from cudnnload.diagnose.trace import PLOT_FORMATS
    from cudnnload.files import output_problem

    problem = output_problem(path)
    if problem is None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        problem = "its folder does not exist"
    if problem is None and os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        problem = f"the name must end in {' or '.join(PLOT_FORMATS)}, the image's format"
    if problem is not None:
        raise UsageError(f"--plot: {problem}", path=path, fix="give a new file name ending .png or .svg, in a "
                         "folder of yours")
    if importlib.util.find_spec("matplotlib") is None:
        raise CannotRun("--plot needs matplotlib", fix="pip install 'cudnnload[plot]'")


def _say(output: str | None, as_json: bool, document: Callable[[], str], text: Callable[[], str],
         healthy: bool) -> None:
    """The report on standard output; or, with ``--output``, into that file (JSON) and one line."""
    import click

    if output is None:
        _echo(document() if as_json else text(), as_json=as_json)
        return
    from cudnnload.files import write_output
    from cudnnload.report import escaped

    write_output(output, document() + "\n")
    click.echo(f"cudnnload doctor: wrote {escaped(output)} ({'healthy' if healthy else 'PROBLEMS'})")


def _environment(assignments: Sequence[str]) -> dict[str, str] | None:
    """This process's environment with each ``NAME=VALUE`` of ``--env`` set; None when there are none."""
    if not assignments:
        return None
    from cudnnload.diagnose.launch import assignment

    environ = dict(os.environ)
    for text in assignments:
        parsed = assignment(text)
        if parsed is None:
            raise UsageError(f"--env {text!r}: expected NAME=VALUE, NAME a variable's name")
        environ[parsed[0]] = parsed[1]
    return environ


def _read_report(path: str) -> dict[str, Any]:
    """A saved `doctor --json` report, checked as `fleet` checks each node's (a FIFO is refused, not read)."""
    from cudnnload.diagnose.fleet import MAX_REPORT_BYTES, parse_report
    from cudnnload.files import NotRegularFile, read_regular

    try:
        data = read_regular(path, MAX_REPORT_BYTES + 1)
    except NotRegularFile as exc:
        raise UsageError(exc.reason, path=path) from None
    except OSError as exc:
        raise UsageError(f"not a readable JSON report: {exc.strerror or exc}", path=path) from None
    return parse_report(data, path)


def main() -> None:
    """The command line. Ctrl-C, or an error, before click runs the command (while its modules load: a SIGINT
    0.15 s after the start was a KeyboardInterrupt traceback) or after it is one line, as within it."""
    if signal.getsignal(signal.SIGINT) in (_interrupted_while_starting, signal.default_int_handler) \
            and _is_the_command():
        signal.signal(signal.SIGINT, _interrupt_outside_imports)  # from here `_main`'s own handling
    try:
        _main()
    except KeyboardInterrupt:
        _end(_interrupted())
    except Exception as exc:  # noqa: BLE001 (the last line of defence: one line, never a traceback)
        _end(_internal(exc))


def _main() -> None:
    global _closed
    _loader_variables_as_started()
    _closed = _open_closed_streams()
    _buffered_stdout()
    # `run ... -- COMMAND`: straight to the program, without click (30 ms to import) or the program ownership
    # of `doctor --`: the program takes this process's place
    if sys.argv[1:2] == ["run"] and (parsed := _run_args(sys.argv[2:])) is not None:
        sys.exit(_run_now(*parsed))
    if sys.argv[1:2] == ["which"]:
        _recalled(sys.argv[1:])  # the answer of an earlier run, when all it was made of is as it was
    from cudnnload.diagnose import launch

    # `doctor|trace ... -- COMMAND`: this process owns the program it runs (its signals, and whatever it
    # leaves running); `doctor -- COMMAND` starts it now, and what explains it loads beside it
    owning = launch.own(sys.argv[1:])
    if owning:
        launch.early(sys.argv[1:])
    code = _run()
    if owning:
        launch.finish(code)  # by the signal that interrupted it, if one did; without the teardown
    _end(code)


def _loader_variables_as_started() -> None:
    """The loader's variables (``LD_*``, ``GLIBC_TUNABLES``) as this process was started with them, in place of
    what this Python's start-up (a sitecustomize, a .pth line) set in ``os.environ`` before cudnnload ran. ld.so
    read them once, at the start: a value set later reaches no load of this process, nor of a program of the same
    environment started without cudnnload, so doctor's model and the program `run` and `doctor --` start see
    what the shell gave (before, a sitecustomize's ``os.environ["LD_PRELOAD"] = ...`` reached the program's loader
    through cudnnload only). Linux's /proc/self/environ is the environment as exec gave it; elsewhere nothing
    changes."""
    try:
        with open("/proc/self/environ", "rb") as file:
            raw = file.read()
    except OSError:
        return
    # a name given twice: the last, as ld.so reads it (rtld.c process_envvars; measured: of two LD_LIBRARY_PATH
    # entries it searched the second), where Python's os.environ and `pid`'s reader keep the first
    started: dict[bytes, bytes] = {}
    for entry in raw.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and (name.startswith(b"LD_") or name == b"GLIBC_TUNABLES"):
            started[name] = value
    for name in [n for n in os.environb if n.startswith(b"LD_") or n == b"GLIBC_TUNABLES"]:
        if name not in started:
            del os.environb[name]
    os.environb.update(started)


# `which` from the command line: the key its answer is kept under (`recall`), and the recording of this run
_answer_key: list[str] | None = None
_recorder: Any = None


def _recalled(args: list[str]) -> None:
    """Print the answer kept for this command line and exit, when every file, folder and variable it was made of
    is as it was (`recall`); else return, with the key this run's answer is to be kept under."""
    global _answer_key
    from cudnnload.recall import recall
    from cudnnload.resolve.mapped import mapped_libraries

    try:
        cwd = os.getcwd()
    except OSError:
        return  # a folder since removed: relative paths mean nothing to keep an answer by
    uname = os.uname()
    key = [*args, "\0", cwd, sys.executable, *sys.path, "\0", sys.version, uname.nodename, uname.release, uname.machine,
           " ".join(map(str, (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), *os.getgroups()))),
           str(_is_terminal(sys.stdout)), *mapped_libraries()]
    answer = recall(key)
    if answer is None:
        _answer_key = key
        return
    text, _colour, code = answer
    try:
        sys.stdout.write(text + "\n")  # as click.echo writes it (its ANSI codes are there only when coloured)
        sys.stdout.flush()
    except OSError:
        return  # the command runs and says what stopped its output
    _end(code)


def _recording() -> Any:
    """Observe what this command looks at (`recall.Recording`) when it ran from the command line; else nothing."""
    global _recorder
    import contextlib

    if _answer_key is None:
        return contextlib.nullcontext()
    from cudnnload.cachedir import cache_dir
    from cudnnload.recall import Recording

    folder = cache_dir()
    _recorder = Recording(_answer_key, exempt=[*([folder] if folder else []), "/proc/self/maps"])
    return _recorder


def _end(code: int) -> NoReturn:
    """Exit with ``code`` once the output is out and Python's exit handlers have run, without the interpreter's
    teardown: freeing every module and the CUDA driver's own exit work (the driver is initialised to read the
    GPUs) cost a warm `doctor` ~150 ms on an H200 after its report was printed."""
    import atexit
    import contextlib

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


# The standard streams the caller closed (`>&-`, `2>&-`, `<&-`), held open on /dev/null while cudnnload runs.
_closed: tuple[int, ...] = ()


def _open_closed_streams() -> tuple[int, ...]:
    """Open each closed standard stream (0, 1, 2) on /dev/null, and give Python a stream for it; which were
    closed. What is written to a closed stream is lost, as the caller asked: no error, no exit 3 (issue 29).
    And the next file opened cannot take its number: a report written to fd 1 must not land in a cache file.
    `run` closes them again for the program (`loading.pin.execute`)."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)  # the lowest free number: ``fd``
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:  # Python found it closed at start
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False, errors="backslashreplace"))  # noqa: SIM115
    return tuple(closed)


def _buffered_stdout() -> None:
    """Under PYTHONUNBUFFERED (or ``-u``) sys.stdout writes straight to the descriptor, and the part of a write a
    pipe did not take (its reader gone: ``inspect | head -1``) was dropped without a word: exit 1, the output cut.
    Through a buffer the rest is written again and meets the closed pipe (exit 3, one line), as without it."""
    import io

    stream = sys.stdout
    if isinstance(getattr(stream, "buffer", None), io.FileIO):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(stream.fileno(), "w", closefd=False)),
                                      encoding=stream.encoding, errors=stream.errors, line_buffering=True)


def _run() -> int:
    """The command's exit code, its output flushed: an output that cannot be written (a closed pipe,
    ``> /dev/full``), a malformed command line or an error of cudnnload's own is one line on standard
    error, never a traceback."""
    import click

    try:
        try:
            code = make_cli().main(prog_name="cudnnload", standalone_mode=False)
            code = code if isinstance(code, int) else 0
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
            if isinstance(end.code, str):
                print(end.code, file=sys.stderr)
        except click.exceptions.Abort:
            code = _interrupted()
        except click.ClickException as exc:
            from cudnnload.report import escaped

            context = getattr(exc, "ctx", None)
            hint = f" (`{context.command_path} --help` shows the usage)" if context is not None else ""
            reason = " ".join(exc.format_message().split())
            _say_error(escaped(reason) + hint)
            code = EXIT_USAGE
            if "--json" in sys.argv[1:]:
                _json_error(reason, None, None, code)
        sys.stdout.flush()
        return code
    except (OSError, _OutputLost) as caught:
        error = caught.error if isinstance(caught, _OutputLost) else caught
        if error.errno is None or error.filename is not None:
            return _internal(error)
        # click.echo or the final flush: standard output is gone or full. Python would print the same
        # error again when it flushes at exit: standard output is pointed at /dev/null first.
        _silence_stdout()
        what = "it was closed (broken pipe)" if isinstance(error, BrokenPipeError) else error.strerror or str(error)
        _say_error(f"cannot write to standard output: {what}")
        return EXIT_CANNOT_RUN
    except Exception as exc:  # noqa: BLE001 (the last line of defence: one line, never a traceback)
        return _internal(exc)


def _echo(output: str, as_json: bool = False) -> None:
    """A command's output on standard output. Text for a terminal is wrapped to its width and coloured (not
    with ``NO_COLOR`` set, or ``TERM=dumb``; ``FORCE_COLOR`` colours a pipe too); JSON, and text for a pipe or a
    file, is written as it is."""
    import click

    from cudnnload.report import for_terminal

    terminal = _is_terminal(sys.stdout)
    colour = not as_json and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb" and (
        terminal or bool(os.environ.get("FORCE_COLOR")))
    if terminal and not as_json:
        import shutil

        output = for_terminal(output, max(40, shutil.get_terminal_size().columns), colour)
    elif colour:
        output = for_terminal(output, 1 << 30, colour)
    if _recorder is not None:
        _recorder.said(output, colour)
    click.echo(output, color=colour or None)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed stream
        return False


def _json_error(reason: str, path: str | None, fix: str | None, code: int) -> None:
    """With ``--json``, a command that fails still prints one JSON document: what went wrong."""
    import json

    document = {"schema": 1, "kind": "error", "result": {"error": reason, "path": path, "fix": fix, "exit": code}}
    print(json.dumps(document, indent=2))


def _interrupted() -> int:
    """Ctrl-C (SIGINT) while cudnnload works: one line, exit 130 (128 + SIGINT, as a shell says it)."""
    _say_error("interrupted")
    return 130


def _internal(exc: BaseException) -> int:
    """An error no stage turned into a finding: a bug in cudnnload, said as one line (the traceback with
    ``CUDNNLOAD_DEBUG=1``). One a KeyboardInterrupt caused (Python wraps one raised in a class body being made,
    ``RuntimeError: Error calling __set_name__``) is the interrupt."""
    cause: BaseException | None = exc
    for _ in range(64):  # a chain, not a loop
        if cause is None:
            break
        if isinstance(cause, KeyboardInterrupt):
            return _interrupted()
        cause = cause.__cause__ or cause.__context__
    if os.environ.get("CUDNNLOAD_DEBUG"):
        import traceback

        traceback.print_exc()
    message = " ".join(str(exc).split()) or "no message"
    _say_error(f"internal error, a bug in cudnnload ({type(exc).__name__}: {message[:300]}); "
               "CUDNNLOAD_DEBUG=1 shows where")
    return EXIT_CANNOT_RUN


def _say_error(line: str) -> None:
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"cudnnload: error: {line}\n")
        sys.stderr.flush()


def _silence_stdout() -> None:
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    main()
