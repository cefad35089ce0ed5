# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MODEL  := smollm2-135m-instruct
# pip extras of the editable install. `make test` adds llamacpp-server on top (llama-cpp-python
# and its OpenAI server, for the consistency matrix's llama.cpp and HTTP backend tests; its
# wheel is built once per machine, ~8 min on 2 cores, by .ci/llama-cpp-wheel).
EXTRAS ?= test
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test test-fast test-cuda test-bindings install libmcp clean

# torch first, pinned by constraints/cpu.txt, so no dependency range can pull another build.
# The editable install also compiles the native CPU kernels (setup.py), again when their sources change.
$(STAMP): pyproject.toml setup.py constraints/cpu.txt $(wildcard src/mcp/engine/kernels/csrc/*)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints/cpu.txt torch
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints/cpu.txt -e '.[$(EXTRAS)]'
	touch $@

install: $(STAMP)

# llama-cpp-python comes from the wheel .ci/llama-cpp-wheel builds once per machine (without
# ggml's AMX kernel, which crashes on AMX CPUs); pip prefers it to building the sdist again.
# The attestation extra's tpm2-pytss builds against Debian's libtss2-dev: .ci/tpm installs it first
# (so `make demo` and `make install` need no C library).
$(TEST_STAMP): $(STAMP) .ci/llama-cpp-wheel .ci/tpm
	bash .ci/tpm
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints/cpu.txt \
		--find-links "$$(bash .ci/llama-cpp-wheel $(BIN)/python)" -e '.[test,attestation,llamacpp-server]'
	touch $@

mcp-config.yaml:
	cp examples/mcp-config.yaml $@

# libmcp: the C API (include/mcp/mcp.h) embedding this venv's Python, and its pkg-config file
# build/libmcp/mcp.pc (docs/bindings.md). The Go package links it from there.
LIBMCP := build/libmcp/libmcp.so
$(LIBMCP): $(STAMP) include/mcp/mcp.h $(wildcard bindings/c/*)
	bash bindings/c/build.sh $(BIN)/python build/libmcp

libmcp: $(LIBMCP)

build/examples/c-quickstart: examples/c/quickstart.c $(LIBMCP)
	mkdir -p build/examples
	$(CC) -std=gnu11 -O2 -Wall -Iinclude $< -Lbuild/libmcp -lmcp -Wl,-rpath,$(CURDIR)/build/libmcp -o $@

# The quickstarts: `.venv/bin/python examples/quickstart.py`, `build/examples/c-quickstart`,
# `go run ./examples/go/quickstart` (Go from Debian's golang-go).
demo: $(STAMP) mcp-config.yaml build/examples/c-quickstart
	$(BIN)/mcp2026 inspect --plan $$($(BIN)/mcp2026 pull $(MODEL))
	$(BIN)/python examples/quickstart.py

# The registry tests need PostgreSQL on 127.0.0.1:5432: .ci/postgres starts it or says why not.
# The deploy/ tests need promtool and prometheus: .ci/ops-tools installs them when missing.
# The signing and evidence tests run the openssl tool: .ci/openssl installs it when missing.
# The multi-host gateway test makes network namespaces with iproute2's ip: .ci/iproute2 installs it when missing.
# The attestation tests need swtpm and libtss2 (tpm2-pytss builds against it): .ci/tpm.
# The compliance report tests render HTML in headless Chromium: .ci/browser installs it when missing.
# llama-index and instructor pin openai < 3: .ci/clients-openai2 puts them in .venv-clients of their own.
# The image test builds the Dockerfile: .ci/container starts a Docker daemon and makes its base image.
# The C and Go bindings: .ci/go installs Go; libmcp is built, then `go test` (also -race) runs
# the Go package's tests, and pytest's tests/bindings build and run the C test programs.
# --durations lists the 25 slowest tests, to keep an eye on the suite's time on 2 cores.
test: $(TEST_STAMP) $(LIBMCP)
	bash .ci/go
	go vet ./...
	go test -count=1 ./...
	go test -count=1 -race ./bindings/...
	bash .ci/postgres
	bash .ci/ops-tools
	bash .ci/container
	bash .ci/tpm
	bash .ci/browser
	bash .ci/openssl
	bash .ci/iproute2
	bash .ci/clients-openai2
	$(BIN)/python -m pytest -q --durations=25

test-bindings: $(TEST_STAMP) $(LIBMCP)
	bash .ci/go
	go test -count=1 ./...
	go test -count=1 -race ./bindings/...
	$(BIN)/python -m pytest -q tests/bindings

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not cuda"

test-cuda: $(STAMP)
	$(BIN)/python -m pytest -q -m cuda

clean:
	rm -rf $(VENV) build dist src/*.egg-info
