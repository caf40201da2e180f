# Two entry points (README): `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Downloads are cached outside the repository so repeated runs (and CI re-runs) are fast.
CACHE  ?= $(HOME)/.cache/cudnnload
PIP    := $(PY) -m pip --disable-pip-version-check -q --cache-dir $(CACHE)/pip
DEMO_CUDNN ?= nvidia-cudnn-cu12==9.28.0.42

.PHONY: demo test wheels venv lint bench clean

venv: $(VENV)/.installed

# Editable in "compat" mode (a plain path in a .pth) plus plugins/ on the path: setuptools' default
# editable finder is imported by every Python start in the venv and costs ~20 ms each time.
# The demo needs only cudnnload's own dependencies; the test suite's come with `make test`.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e . --config-settings editable_mode=compat
	$(PY) -c 'import os, site; open(os.path.join(site.getsitepackages()[0], "cudnnload-plugins.pth"), "w").write(os.path.abspath("plugins") + "\n")'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[test]' --config-settings editable_mode=compat
	touch $@

# The real cuDNN wheels the tests run against, unpacked side by side (fixtures/wheels.py).
wheels: venv
	CUDNNLOAD_CACHE=$(CACHE) $(PY) fixtures/wheels.py

# One real cuDNN wheel (and the cuBLAS it depends on) from PyPI, into the venv, then the three commands.
demo: venv
	$(PIP) install '$(DEMO_CUDNN)'
	$(VENV)/bin/cudnnload inspect "$$($(PY) -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')"
	$(VENV)/bin/cudnnload which
	$(VENV)/bin/cudnnload doctor

test: $(VENV)/.installed-test wheels
	CUDNNLOAD_CACHE=$(CACHE) $(PY) -m pytest -q -ra

lint: venv
	$(PIP) install ruff mypy
	$(VENV)/bin/ruff check cudnnload plugins tests bench fixtures
	$(VENV)/bin/mypy cudnnload

bench: $(VENV)/.installed-test wheels
	CUDNNLOAD_CACHE=$(CACHE) $(PY) bench/bench_inspect.py
	CUDNNLOAD_CACHE=$(CACHE) $(PY) bench/bench_preload.py
	CUDNNLOAD_CACHE=$(CACHE) $(PY) bench/bench_diagnose.py
	CUDNNLOAD_CACHE=$(CACHE) $(PY) bench/bench_fleet.py

clean:
	rm -rf $(VENV) .pytest_cache
