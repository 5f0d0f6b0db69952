# GA2 -- every target creates or reuses the virtual environment itself.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
GA2    := $(VENV)/bin/ga2
STAMP  := $(VENV)/.installed
JOBS   ?= 2

.PHONY: setup test test-slow ch16 simulators clean docs

setup: $(STAMP) simulators

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,cluster,docs,onnx,formal]'
	touch $(STAMP)

# Icarus Verilog and Verilator come from Debian's packages.
simulators:
	@if command -v iverilog >/dev/null && command -v vvp >/dev/null && command -v verilator >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "installing iverilog and verilator with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog verilator g++ make; \
	else \
	  echo "GA2 needs Icarus Verilog and Verilator: install the Debian packages 'iverilog' and 'verilator' (apt-get install iverilog verilator)"; exit 1; \
	fi

test: setup
	$(PY) -m pytest -q -n $(JOBS) --durations=10

test-slow: setup
	$(PY) -m pytest -q -n $(JOBS) -m slow

ch16: setup
	$(GA2) ch16 --sims icarus,verilator

# the documentation site: docs/ (Markdown through MyST) and the API reference, warnings as errors
docs: $(STAMP)
	$(PY) -m sphinx -b html -W --keep-going -q docs build/docs
	@echo "build/docs/index.html"

clean:
	rm -rf out build .pytest_cache
