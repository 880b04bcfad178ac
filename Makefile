# Quick start: `make demo` and `make test`. Both create their own virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of PyTorch, installed first and explicitly; treenets itself asks for torch>=2.3.
TORCH ?= torch==2.13.0
DEMO_MINUTES ?= 4
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "$(TORCH)"
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

# The main job: train the small ON-LSTM language model on PTB for a few minutes from scratch, report its
# perplexity, parse example sentences with it, and score its trees on the NLTK WSJ sample beside the baselines.
demo: $(STAMP)
	$(BIN)/treenets data check ptb treebank-sample
	$(BIN)/treenets train configs/onlstm-ptb-small.yaml --out runs/demo --overwrite --max-minutes $(DEMO_MINUTES)
	$(BIN)/treenets metrics runs/demo --plot runs/demo/curve.png
	$(BIN)/treenets parse runs/demo/best.pt --file examples/sentences.txt
	$(BIN)/treenets parse-eval runs/demo/best.pt --treebank nltk-sample --output runs/demo/parse-eval

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -q

bench: $(STAMP)
	cd benchmarks && ../$(BIN)/python lm_throughput.py && ../$(BIN)/python parse_throughput.py && \
		../$(BIN)/python treelstm_throughput.py

clean:
	rm -rf $(VENV) runs build src/*.egg-info .pytest_cache
