# Hearth: `make run` installs and starts the app, `make test` installs and runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: run test bench lint clean

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

run: $(VENV)/.installed-app
	$(VENV)/bin/hearth

test: $(VENV)/.installed-dev
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

bench: $(VENV)/.installed-dev
	@mkdir -p bench/results
	@set -e; for b in bench/*.py; do \
		case $$b in bench/_*) continue;; esac; \
		$(PY) $$b; \
	done

clean:
	rm -rf $(VENV) bench/results .pytest_cache .hypothesis
