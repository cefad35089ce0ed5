# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MODEL  := smollm2-135m-instruct
# pip extras of the editable install; CI (.ci/run) adds llamacpp-server for the consistency checks' llama.cpp tests
EXTRAS ?= test

.PHONY: demo test test-fast test-cuda install clean

# torch first, pinned by constraints/cpu.txt, so no dependency range can pull another build.
# The editable install also compiles the native CPU kernels (setup.py), again when their sources change.
$(STAMP): pyproject.toml setup.py constraints/cpu.txt $(wildcard src/mcp/engine/kernels/csrc/*)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints/cpu.txt torch
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints/cpu.txt -e '.[$(EXTRAS)]'
	touch $@

install: $(STAMP)

mcp-config.yaml:
	cp examples/mcp-config.yaml $@

demo: $(STAMP) mcp-config.yaml
	$(BIN)/mcp2026 inspect --plan $$($(BIN)/mcp2026 pull $(MODEL))
	$(BIN)/python examples/quickstart.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not cuda"

test-cuda: $(STAMP)
	$(BIN)/python -m pytest -q -m cuda

clean:
	rm -rf $(VENV) build dist src/*.egg-info
