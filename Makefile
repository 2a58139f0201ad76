# Two commands: `make run` and `make test`. Each does the whole set-up on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-no-kernels test-unit lint test-browser setup bench gradcheck sweep docs cards clean mutation

setup: $(STAMP)

# torch==2.13.0 first: the CPU build on disk. An unpinned torch could pull a multi-GB CUDA build.
$(STAMP): pyproject.toml examples/scalenorm/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps -e examples/scalenorm  # a user's norm as its own package (docs/extending.md)
	$(PY) -m lnbench.nn.kernels  # build the C++ kernels once (~2 min: LayerNorm, the fused recurrence, the few-row Linear); lnbench falls back without them
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/lnbench compare

# the suite on TEST_WORKERS processes (pytest-xdist), each test file on one of them, so a file's
# module fixtures (a trained compare) are built once: ~3 min on 2 cores instead of ~4 one by one
TEST_WORKERS ?= 2
test: lint
	MPLBACKEND=Agg $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# the suite on the step-by-step Python code everywhere (no C++ kernels): the reference path
test-no-kernels: $(STAMP)
	LNBENCH_KERNELS=0 MPLBACKEND=Agg $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# the unit tests alone (no training, no run folders): seconds
test-unit: $(STAMP)
	MPLBACKEND=Agg $(PY) -m pytest -m "not e2e"

# the gates: ruff (lint and format) and mypy, as CI runs them
lint: $(STAMP)
	$(VENV)/bin/ruff check lnbench tests benchmarks docs examples
	$(VENV)/bin/ruff format --check lnbench tests benchmarks docs examples
	$(VENV)/bin/mypy

# the report in a real browser: installs Debian's chromium (needs root or sudo), then runs that test
test-browser: $(STAMP)
	command -v chromium >/dev/null || (apt-get install -y chromium || sudo apt-get install -y chromium)
	MPLBACKEND=Agg $(PY) -m pytest tests/report/test_html.py -v

gradcheck: $(STAMP)
	$(VENV)/bin/lnbench gradcheck

sweep: $(STAMP)
	$(VENV)/bin/lnbench batchsize-sweep

bench: $(STAMP)
	$(PY) benchmarks/bench_layernorm.py
	$(PY) benchmarks/bench_training.py
	$(PY) benchmarks/bench_startup.py
	$(PY) benchmarks/bench_compare.py  # the default compare's cost, now vs before issue 18 (minutes)
	$(PY) benchmarks/bench_lstm.py --compare  # the LSTM against torch.nn.LSTM; the default compare with it added (minutes)
	$(PY) benchmarks/bench_grid.py  # the LSTM and RNN over a grid of B, T, I, H against torch.nn.LSTM / RNN: time, memory (~10 min)

# the reference pages of docs/ that restate the code (config keys, JSON fields, captions), from the code
docs: $(STAMP)
	$(PY) docs/generate.py

# the built-in norm layers' report cards and the ScaleNorm example's, into docs/cards/ (~4 min each on 2 cores; weight norm is no layer: it has none)
CARDS ?= layer batch rms group lnbench_scalenorm:ScaleNorm
cards: $(STAMP)
	for norm in $(CARDS); do \
		PYTHONPATH=examples/scalenorm $(VENV)/bin/lnbench card $$norm --runs-dir runs/cards || exit 1; \
	done
	$(PY) docs/cards/collect.py runs/cards

# mutation testing (mutmut; [tool.mutmut] in pyproject.toml) of the modules that decide and report results, one
# module at a time with the unit tests that reach each mutant; prints the score per module. Equivalent survivors (they
# cannot change an output) are listed in tests/mutation_equivalent.txt. Minutes, not for CI.
MUTATION_MODULES ?= analysis.stats analysis.comparisons analysis.verdicts analysis.claims analysis.confirm \
	analysis.aggregate analysis.grid training.baselines training.data training.tasks.trend records.runs records.schema testing \
	training.gradients training.optim training.tasks.images
MUTATION_JOBS ?= 2
mutation: $(STAMP)
	rm -rf mutants
	for m in $(MUTATION_MODULES); do \
		MPLBACKEND=Agg $(VENV)/bin/mutmut run --max-children $(MUTATION_JOBS) "lnbench.$$m.*" >/dev/null || exit 1; \
	done
	$(PY) tests/mutation_score.py $(MUTATION_MODULES)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
