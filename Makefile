# Two commands on a fresh machine: `make run` and `make test`. Each bootstraps .venv by itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# make test's workers: one more than the cores, as its tests spend much of their time waiting on the processes they
# start (Streamlit, Chromium, Milvus Lite, uvicorn): on 2 cores, 3 workers ran it in 614 s here, 2 in 786 s in CI
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

.PHONY: run serve test test-fast test-unit lint messages bench sample clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench,ocr,lint]"
	touch $(STAMP)

run: $(STAMP)  ## start the app on http://127.0.0.1:8501 (Milvus Lite + local embedder, no key)
	$(PY) -m streamlit run app.py --server.address 127.0.0.1 --server.port 8501

serve: $(STAMP)  ## start the HTTP API on http://127.0.0.1:8000 (OpenAPI at /docs; RAG_API_TOKEN to require a token)
	$(PY) -m rag_core serve

test: $(STAMP)  ## the whole suite: unit, Milvus Lite, AppTest and real-browser tests, a worker per core and one more
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile

test-fast: $(STAMP)  ## everything but the real-browser tests
	$(PY) -m pytest -q -n auto --dist loadfile -m "not e2e"

lint: $(STAMP)  ## ruff (lint and import order) on the code and tests, mypy on rag_core and the app (pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

messages: $(STAMP)  ## put the app's strings (t, tn, N_ in app.py, pages/, ui/) into locale/messages.pot and both catalogs
	$(VENV)/bin/pybabel extract --no-default-keywords -k t -k tn:1,2 -k N_ --no-location --sort-output \
		--project rag-workbench -o locale/messages.pot app.py pages ui rag_core/retrieval/options.py
	for lang in en zh; do test -f locale/$$lang/LC_MESSAGES/messages.po || \
		$(VENV)/bin/pybabel init -i locale/messages.pot -d locale -l $$lang; done
	$(VENV)/bin/pybabel update -i locale/messages.pot -d locale --no-fuzzy-matching --ignore-obsolete

test-unit: $(STAMP)  ## the edit-run loop: the quick tests, without Milvus, a browser or `slow` ones (tests/conftest.py)
	$(PY) -m pytest -q --unit -n auto --dist load

sample: $(STAMP)  ## index the sample knowledge base from the command line
	$(PY) -m rag_core ingest examples/kb

bench: $(STAMP)  ## benchmarks with baselines side by side (not part of `make test`)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
