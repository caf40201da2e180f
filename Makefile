# Two entry points (README): `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
# The test suite's material (the real cuDNN wheels it runs against, pip's downloads, layouts it builds) lives in a
# cache of its own, outside the repository and never in the user's cudnnload cache (~/.cache/cudnnload):
# `make clean-test-cache` removes it. Empty or relative XDG_CACHE_HOME is ignored, as the XDG rules say.
XDG_CACHE := $(if $(filter /%,$(XDG_CACHE_HOME)),$(XDG_CACHE_HOME),$(HOME)/.cache)
TEST_CACHE ?= $(XDG_CACHE)/cudnnload-test
# Development: an editable install. The demo: the wheel built from this tree, installed as a user installs it.
VENV      := .venv
DEMO_VENV := .venv-demo
PY        := $(VENV)/bin/python
DEMO_PY   := $(DEMO_VENV)/bin/python
PIP       := $(PY) -m pip --disable-pip-version-check -q --cache-dir $(TEST_CACHE)/pip
DEMO_PIP  := $(DEMO_PY) -m pip --disable-pip-version-check
DEMO_CUDNN ?= nvidia-cudnn-cu12==9.28.0.42
DIST      := build/dist

.PHONY: demo test dev wheels lint bench clean clean-test-cache

# --- make demo: what a user gets --------------------------------------------------------------------------

# `pip install .` builds this wheel and installs it; built here once so that the demo runs exactly the file
# `make test` checks (tests/test_packaging.py). Downloads: cudnnload's dependencies (~60 MB: numpy,
# cuda-python) and the cuDNN wheel with the cuBLAS it needs (~1.4 GB for 9.28 cu12); pip shows its progress.
demo:
	rm -rf $(DIST) && $(PYTHON) -m pip wheel --disable-pip-version-check -q --no-deps -w $(DIST) .
	test -x $(DEMO_PY) || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_PIP) install --progress-bar on $(DIST)/cudnnload-*.whl '$(DEMO_CUDNN)'
	$(DEMO_PIP) install -q --no-deps --force-reinstall $(DIST)/cudnnload-*.whl
	$(DEMO_VENV)/bin/cudnnload inspect "$$($(DEMO_PY) -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')"
	$(DEMO_VENV)/bin/cudnnload which
	$(DEMO_VENV)/bin/cudnnload doctor

# --- make test: the suite, on the editable install, plus the built wheel in a fresh venv -----------------

dev: $(VENV)/.installed-test

# Editable in "compat" mode (a plain path in a .pth) plus plugins/ on the path: setuptools' default
# editable finder is imported by every Python start in the venv and costs ~20 ms each time.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e . --config-settings editable_mode=compat
	$(PY) -c 'import os, site; open(os.path.join(site.getsitepackages()[0], "cudnnload-plugins.pth"), "w").write(os.path.abspath("plugins") + "\n")'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[test]' --config-settings editable_mode=compat
	touch $@

# The real cuDNN wheels the tests run against, unpacked side by side (fixtures/wheels.py; ~4.9 GB once).
wheels: $(VENV)/.installed
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) fixtures/wheels.py

test: $(VENV)/.installed-test wheels
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) -m pytest -q -ra

lint: $(VENV)/.installed
	$(PIP) install ruff mypy
	$(VENV)/bin/ruff check cudnnload plugins tests bench fixtures
	$(VENV)/bin/mypy cudnnload

bench: $(VENV)/.installed-test wheels
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) bench/bench_inspect.py
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) bench/bench_preload.py
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) bench/bench_diagnose.py
	CUDNNLOAD_TEST_CACHE=$(TEST_CACHE) $(PY) bench/bench_fleet.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) build .pytest_cache

clean-test-cache:
	rm -rf $(TEST_CACHE)
