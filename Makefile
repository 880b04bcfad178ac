# Quick start: `make demo` and `make test`. Both create their own virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of PyTorch, installed first and explicitly; treenets itself asks for torch>=2.3.
TORCH ?= torch==2.13.0
DEMO_FIRST_MINUTES ?= 1.5
DEMO_RESUMED_MINUTES ?= 0.5
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-arm lint bench clean browser dist

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "$(TORCH)"
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

# The main job: the shipped models at work, then training from scratch (see the README's Quick start). The kernels'
# build may fail (no C++ compiler): the demo then goes on with the PyTorch code.
DEMO_SICK := --pair "A family is watching a little boy who is hitting a baseball." "A child is hitting a baseball."
DEMO_SICK2 := --pair "A large group of Asian people is eating at a restaurant." \
	"A small group of people is waiting to eat in a restaurant."
demo: $(STAMP)
	@echo "treenets demo: (0) the CPU kernels the demo runs are built, once per machine (about a minute each);"
	@echo "(1) the shipped models; (2) the ON-LSTM parses example sentences and is scored on the"
	@echo "NLTK WSJ sample beside the baselines, then its test perplexity; (3) the SICK and SST Tree-LSTMs predict"
	@echo "two examples each; (4) a small ON-LSTM trains from scratch for $(DEMO_FIRST_MINUTES) minutes, stops, resumes for $(DEMO_RESUMED_MINUTES)."
	-$(BIN)/treenets kernels build onlstm treelstm
	$(BIN)/treenets data check ptb treebank-sample sick sst
	$(BIN)/treenets models
	$(BIN)/treenets parse onlstm-ptb-small --file examples/sentences.txt
	$(BIN)/treenets parse-eval onlstm-ptb-small --treebank nltk-sample --output runs/demo-parse-eval
	$(BIN)/treenets eval onlstm-ptb-small --split test
	$(BIN)/treenets predict treelstm-sick $(DEMO_SICK)
	$(BIN)/treenets predict treelstm-sick $(DEMO_SICK2)
	$(BIN)/treenets predict treelstm-sst --sentence "A dull, lifeless movie."
	$(BIN)/treenets predict treelstm-sst --sentence "It is a moving film."
	$(BIN)/treenets train configs/onlstm-ptb-small.yaml --out runs/demo --overwrite --no-progress \
		--max-minutes $(DEMO_FIRST_MINUTES)
	$(BIN)/treenets train --resume runs/demo/last.pt --no-progress --max-minutes $(DEMO_RESUMED_MINUTES)
	$(BIN)/treenets metrics runs/demo --plot runs/demo/curve.png

# The suite in as many processes as the machine has cores (up to 4), each test file whole in one of them (its
# module fixtures, a run trained once, are made once).
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -q -n auto --maxprocesses 4 --dist loadfile

# The tests of the networks and kernels on 64-bit ARM, emulated (Debian x86-64; see tests/arm/run.sh).
test-arm: $(STAMP)
	bash tests/arm/run.sh

# The report and `treenets serve` in headless Chromium: Debian's (Playwright drives it and downloads no browser of
# its own; installing it needs root). `make test` runs the same tests, skipped with the reason when no Chromium is
# installed. Screenshots are copied to runs/screenshots.
browser: $(STAMP)
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
	TREENETS_SCREENSHOTS=runs/screenshots $(BIN)/pytest -q tests/report

# The release: the sdist and the wheel in dist/ (the wheel built from the sdist, as pip builds one). The models are
# not in them: a release publishes models/ at a URL (models/register.py --url-base) or users install them from a
# copy (README, Install).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

bench: $(STAMP)
	cd benchmarks && ../$(BIN)/python lm_throughput.py && ../$(BIN)/python parse_throughput.py && \
		../$(BIN)/python treelstm_throughput.py

clean:
	rm -rf $(VENV) runs build dist src/*.egg-info .pytest_cache
