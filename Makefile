# The two commands of the README. Each creates .venv on first use and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml examples/base-template/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' -e examples/base-template
	touch $(STAMP)

demo: $(STAMP)
	@for prog in constant_add elementwise_mul dot_product gemv gemm; do \
		echo "== python -m base_template.$$prog"; \
		$(BIN)/python -m base_template.$$prog || exit 1; \
	done

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/cpu_backend.py
	$(BIN)/python benchmarks/compile.py
	$(BIN)/python benchmarks/schedule.py
	$(BIN)/python benchmarks/simulator.py
	$(BIN)/python benchmarks/viewer.py

clean:
	rm -rf $(VENV) target .pytest_cache .hypothesis
