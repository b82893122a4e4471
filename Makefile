# Hearth: `make run` installs and starts the app, `make test` installs and runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: run test bench lint clean package package-test install-desktop uninstall-desktop

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Hearth needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

# Stamps are per extra, so `make run` stays light and `make test` adds the dev tools.
$(VENV)/.installed-app: $(VENV)/bin/python pyproject.toml constraints.txt
	$(PIP) -e .
	@touch $@

$(VENV)/.installed-dev: $(VENV)/bin/python pyproject.toml constraints.txt
	$(PIP) -e '.[dev]'
	@touch $@ $(VENV)/.installed-app

$(VENV)/.installed-package: $(VENV)/bin/python pyproject.toml constraints.txt
	$(PIP) -e '.[package]'
	@touch $@ $(VENV)/.installed-app

run: $(VENV)/.installed-app
	$(VENV)/bin/hearth

# pytest-xdist: one worker per core (`make test WORKERS=0` runs in this process); the Spark tests
# share one worker and its one session, the mDNS tests another (tests/conftest.py SHARED_WORKER).
WORKERS ?= auto

test: $(VENV)/.installed-dev
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n $(WORKERS) --dist loadgroup

# ruff, then mypy over the packages [tool.mypy] names.
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Every benchmark runs to its end; a missed target fails `make bench` after all have run.
bench: $(VENV)/.installed-dev
	@mkdir -p bench/results
	@failed=""; for b in bench/*.py; do \
		case $$b in bench/_*) continue;; esac; \
		$(PY) $$b || failed="$$failed $$b"; \
	done; \
	if [ -n "$$failed" ]; then echo "missed a target or failed:$$failed" >&2; exit 1; fi

# `make package`: the standalone application folder dist/hearth/ (PyInstaller, packaging/hearth.spec);
# rebuilt when a source file, the spec or the installed dependencies change.
BUNDLE := dist/hearth/hearth
BUNDLE_SOURCES := $(shell find hearth app core storage sync ui analytics packaging -type f \
	\( -name '*.py' -o -name '*.json' -o -name '*.spec' \) -not -path '*/__pycache__/*' 2>/dev/null)

$(BUNDLE): $(VENV)/.installed-package $(BUNDLE_SOURCES)
	$(VENV)/bin/pyinstaller --noconfirm --clean --log-level WARN \
		--distpath dist --workpath build/pyinstaller packaging/hearth.spec
	@touch $@
	@du -sh dist/hearth

package: $(BUNDLE)

package-test: $(BUNDLE) $(VENV)/.installed-dev
	HEARTH_PACKAGE_FRESH=1 QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m package tests/packaging

# The bundle, a `hearth` command, the desktop entry, icons and AppStream metainfo, for this user
# (under ~/.local, or PREFIX=DIR); `make uninstall-desktop` removes them.
install-desktop: $(BUNDLE)
	PREFIX="$(PREFIX)" sh packaging/linux/install.sh

uninstall-desktop:
	PREFIX="$(PREFIX)" sh packaging/linux/install.sh --uninstall

clean:
	rm -rf $(VENV) bench/results .pytest_cache .hypothesis build dist
