# The two commands a fresh machine needs: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest clean

$(PY):
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m s3claim demo

test: lint typecheck pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check s3claim tests

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict s3claim

pytest: $(STAMP)
	$(VENV)/bin/pytest --cov --cov-report=term:skip-covered

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
