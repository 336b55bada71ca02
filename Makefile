# arklore: `make demo` runs the main job on the real data, `make test` runs the suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED := $(abspath ../shared/arknights)

# Default the data locations to the workplace copy when it exists.
ifneq ($(wildcard $(SHARED)/gamedata),)
export ARKLORE_GAMEDATA ?= $(SHARED)/gamedata
endif
ifneq ($(wildcard $(SHARED)/astr),)
export ARKLORE_ASTR ?= $(SHARED)/astr
endif
export ARKLORE_HOME ?= $(abspath var)

.PHONY: venv web browser-deps demo test test-fast lint bench docs docs-measure data clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python tools/install_venv.py
	touch $(STAMP)

venv: $(STAMP) web

# The web pages' JavaScript (cytoscape.js and its fcose layout for the graph, Swagger UI for
# /docs) from the npm registry, pinned by web/package-lock.json, copied into the package's
# static folder (not committed): the pages and /docs need no network.
WEB_VENDOR := src/arklore/service/static/vendor
SWAGGER := web/node_modules/swagger-ui-dist
$(WEB_VENDOR)/.installed: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --ignore-scripts
	mkdir -p $(WEB_VENDOR)
	cp web/node_modules/cytoscape/dist/cytoscape.min.js $(WEB_VENDOR)/
	cp web/node_modules/layout-base/layout-base.js web/node_modules/cose-base/cose-base.js \
	  web/node_modules/cytoscape-fcose/cytoscape-fcose.js $(WEB_VENDOR)/
	cp $(SWAGGER)/swagger-ui-bundle.js $(SWAGGER)/swagger-ui.css $(SWAGGER)/favicon-32x32.png $(WEB_VENDOR)/
	touch $@

web: $(WEB_VENDOR)/.installed

# The browser tests drive Debian's chromium, with a CJK font for the pages' Chinese text:
# installed here when we can (root and apt); otherwise say what is missing. With CI set, a
# test run without them fails (tests/test_service_browser.py) instead of skipping.
BROWSER_PKGS := chromium fonts-noto-cjk
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && fc-list :lang=zh family 2>/dev/null | grep -q .; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing $(BROWSER_PKGS) for the browser tests"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BROWSER_PKGS); \
	else \
	  echo "note: the browser tests need Debian's $(BROWSER_PKGS) (sudo apt-get install $(BROWSER_PKGS)); without them they skip (fail with CI set)"; \
	fi

# pytest-xdist processes for `make test` and `make test-fast` (the tests share no state but
# their fixtures' folders)
TEST_WORKERS ?= 2
# Byte-code caching on even where the environment turns it off (PYTHONDONTWRITEBYTECODE):
# the venv is installed without compiled modules (tools/install_venv.py), so each process
# would compile what it imports again (an `arklore` start 1.5 -> 3 s; rewriting the test
# modules' asserts and compiling the package costs each test worker ~7 s of `make test-fast`)
CACHED = env -u PYTHONDONTWRITEBYTECODE
PYTEST = $(CACHED) $(BIN)/python -m pytest

demo: $(STAMP) web
	$(CACHED) $(BIN)/arklore demo

# on TEST_WORKERS processes; the tests sharing one ingest of the real corpus are one group
# (tests/conftest.py): one worker runs them in order, the other the rest meanwhile
test: $(STAMP) web browser-deps
	$(PYTEST) -q -n $(TEST_WORKERS) --dist loadgroup --durations=15

# everything except the real-data and the slow (> ~20 s) tests: the loop while editing
test-fast: $(STAMP) web
	$(PYTEST) -q -m 'not realdata and not slow' -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: $(STAMP) web
	$(CACHED) $(BIN)/python -m bench

# The figures README.md and docs/ quote, rewritten from the code (setting defaults, packaged
# data) and from the measured record docs/figures.json; tests/test_docs_figures.py fails when
# a page differs (python -m arklore.docfigs check lists where).
docs: $(STAMP)
	$(BIN)/python -m arklore.docfigs write

# Measures the record on the real data: the LLM jobs' cost estimates over $(ARKLORE_HOME)
# (dry runs: nothing sent; needs a built home, `make demo`) and the figures the lorebook and
# card real-data tests print; then rewrites the pages (`make docs`). About 10 minutes on a quiet 2-core machine (25 and more on a busy one).
DOCS_MEASURED := tests/test_lorebook_heldout_realdata.py tests/test_sillytavern_cards_realdata.py
docs-measure: $(STAMP)
	$(BIN)/python -m arklore.docfigs measure
	ARKLORE_FIGURES_OUT=$(abspath docs/figures.json) $(PYTEST) -q -p no:cacheprovider --timeout=3600 $(DOCS_MEASURED)
	$(BIN)/python -m arklore.docfigs write

# For users with network: shallow, sparse clones of the two data repositories.
data:
	mkdir -p data-src
	test -d data-src/ArknightsGameData || git clone --depth 1 --filter=blob:none --sparse -b zh_CN \
	  https://github.com/Kengxxiao/ArknightsGameData data-src/ArknightsGameData
	cd data-src/ArknightsGameData && git sparse-checkout set zh_CN/gamedata/excel zh_CN/gamedata/story
	test -d data-src/ArknightsStoryJson || git clone --depth 1 --filter=blob:none --sparse \
	  https://github.com/050644zf/ArknightsStoryJson data-src/ArknightsStoryJson
	cd data-src/ArknightsStoryJson && git sparse-checkout set zh_CN
	@echo "export ARKLORE_GAMEDATA=$(abspath data-src/ArknightsGameData)"
	@echo "export ARKLORE_ASTR=$(abspath data-src/ArknightsStoryJson)"

clean:
	rm -rf $(VENV) var .pytest_cache web/node_modules $(WEB_VENDOR) test-artifacts
