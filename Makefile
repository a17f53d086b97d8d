# The two commands of the README. Each creates .venv on first use and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium
NVIM := /usr/bin/nvim

.PHONY: demo test lint browser editor bench clean docs

$(STAMP): pyproject.toml examples/base-template/pyproject.toml examples/vector-kernels/pyproject.toml examples/mnist/pyproject.toml examples/transformer/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned: the CPU build, which `.[dev]` (its `torch` extra) then finds installed (unpinned, pip may
	# fetch a multi-GB CUDA build)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]' -e examples/base-template -e examples/vector-kernels -e 'examples/mnist[train]' -e 'examples/transformer[test]'
	touch $(STAMP)

# Step 3's `-p no:asyncio`: pytest-asyncio (installed for the language server's tests) would warn there that the
# example's pytest settings do not name its loop scope.
demo: $(STAMP)
	@cd examples/base-template && export PATH="$(CURDIR)/$(BIN):$$PATH" && set -e; \
	echo "== 1. CPU build: python -m base_template.gemm (host program, checked against its numpy oracle)"; \
	python -m base_template.gemm; \
	echo; echo "== 2. furiosa-opt compile: every kernel, Python -> vISA -> LIR -> EDF (cached per kernel)"; \
	furiosa-opt compile; \
	echo; echo "== 3. CPU oracle test: pytest tests/test_gemm.py"; \
	python -m pytest -q -p no:cacheprovider -p no:asyncio tests/test_gemm.py; \
	echo; echo "== 4. furiosa-opt compile gemm_kernel --dump-schedule (open it with: furiosa-opt view <file>)"; \
	furiosa-opt compile gemm_kernel --dump-schedule ../../target/gemm.schedule.json --dump-summary ../../target/gemm-summary; \
	head -5 ../../target/gemm-summary/summary.md; \
	furiosa-opt schedule summary ../../target/gemm.schedule.json --top 3; \
	echo; echo "== 5. NPU build: furiosa-opt run gemm (the EDF on the TCP simulator)"; \
	furiosa-opt run gemm; \
	echo; echo "Artifacts: EDFs in target/furiosa-opt/kernel/base_template, schedule in target/gemm.schedule.json,"; \
	echo "summary in target/gemm-summary. The other host programs: python -m base_template.<name>."; \
	echo; echo "== 6. MNIST: furiosa-opt run mnist (forward, 784 -> 256 ReLU -> 10, on the simulator; examples/mnist)"; \
	cd ../mnist && furiosa-opt run mnist

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

# Two workers, as CI has two cores (each test stands alone; plain `pytest` runs them in one process).
test: browser editor lint
	$(BIN)/python -m pytest -n 2 --dist worksteal

# The documentation site (mkdocs.yml): strict, so a broken link, anchor or docstring fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "site: target/site/index.html (open it as a file: no server needed, search included)"

# The viewer's browser tests drive Debian's Chromium (never a downloaded browser build) and the language
# server's editor test Debian's Neovim (0.7, headless); each fails without its program, so a fresh machine
# gets it here. $(call system_package,PATH,PACKAGE,SKIP_VARIABLE,WHY): nothing when PATH exists or
# SKIP_VARIABLE is 1, else apt installs PACKAGE when we are root (CI), else one line saying how.
comma := ,
system_package = $(if $(filter 1,$($(3)))$(wildcard $(1)),,$(if $(filter 0,$(shell id -u)),\
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2),\
	$(error $(1) is missing ($(4)): run `sudo apt-get update && sudo apt-get install -y $(2)`$(comma) or set $(3)=1 to skip those tests)))

browser:
	$(call system_package,$(CHROMIUM),chromium,FURIOSA_OPT_SKIP_BROWSER,the viewer's browser tests need it)

editor:
	$(call system_package,$(NVIM),neovim,FURIOSA_OPT_SKIP_NEOVIM,the language server's Neovim test needs it)

# The long fuzz: every hypothesis test (hypothesis's `hypothesis` marker; tests/hostile/test_fuzz.py sets it
# too) under the `fuzz` profile of tests/hypothesis_profiles.py: fresh random examples, forty times as many as
# `make test` runs. The fuzzers print their counts (-s), hypothesis each property's (--hypothesis-show-statistics).
# Then the differential harness and the simulator tests on inputs from a fresh seed (each test prints it).
.PHONY: fuzz
fuzz: $(STAMP)
	FURIOSA_OPT_FUZZ=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider -m 'hypothesis and not slow' \
		--hypothesis-show-statistics
	FURIOSA_OPT_FUZZ=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_differential.py tests/sim/test_simulator.py

bench: $(STAMP)
	$(BIN)/python -m pytest -m slow || test $$? -eq 5  # 5: no test is marked slow
	$(BIN)/python benchmarks/cpu_backend.py
	$(BIN)/python benchmarks/host_round_trip.py
	$(BIN)/python benchmarks/launch_overhead.py
	$(BIN)/python benchmarks/transformer_shapes.py
	$(BIN)/python benchmarks/lm_head.py
	$(BIN)/python benchmarks/transformer_decode.py
	$(BIN)/python benchmarks/compile.py
	$(BIN)/python benchmarks/compile_scaling.py
	$(BIN)/python benchmarks/schedule.py
	$(BIN)/python benchmarks/simulator.py
	$(BIN)/python benchmarks/timing.py
	$(BIN)/python benchmarks/wrapper.py
	$(BIN)/python benchmarks/viewer.py
	$(BIN)/python benchmarks/mnist.py
	$(BIN)/python benchmarks/tune.py
	$(BIN)/python benchmarks/lsp.py

clean:
	rm -rf $(VENV) target .pytest_cache .hypothesis
