# tierflow: two commands for a newcomer.
#   make demo   first use creates .venv and installs; then runs the copy DAG on embedded defaults
#   make test   installs the dev tools too, then runs the whole suite
# and, while working on the library, a quick one:
#   make check  lint, then the unit tests (tests/unit: no server, Spark or Airflow; about 90 s)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed
PIP_QUIET := --quiet --disable-pip-version-check

.PHONY: demo test check fuzz chaos lint format java test-servers airflow kafka install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): requirements.txt pyproject.toml | $(PY)
	@echo "Installing runtime dependencies into $(VENV) (first run takes a few minutes)..."
	$(PY) -m pip install $(PIP_QUIET) -r requirements.txt
	$(PY) -m pip install $(PIP_QUIET) --no-deps -e .
	@# An editable install leaves tierflow's bytecode to its first import, which never writes it
	@# where PYTHONDONTWRITEBYTECODE is set (this project's test machines, many images): compiled
	@# now, as pip compiles a wheel's, every process reads it (0.1-0.2 s of each command's start).
	$(PY) -m compileall -q -j 0 include
	@touch $@

$(DEV_STAMP): requirements-dev.txt $(RUNTIME_STAMP)
	$(PY) -m pip install $(PIP_QUIET) -r requirements-dev.txt
	@touch $@

install: $(RUNTIME_STAMP)

# Spark 4 needs Java 17 or newer. As root we install Debian's JRE; otherwise we say what to do.
java:
	@if java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Java 17 not found: installing Debian's openjdk-17-jre-headless..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	else \
		echo "Spark needs Java 17 or newer, and 'java -version' does not show it." >&2; \
		echo "Install it, e.g.: sudo apt-get install openjdk-17-jre-headless" >&2; \
		exit 1; \
	fi

# The servers the test suite starts on loopback: PostgreSQL (the metadata suite runs on it too)
# and Chromium (the Airflow end-to-end test takes a screenshot of the UI), Debian's packages
# installed as root when missing; Azurite (Azure Blob Storage) from the npm registry, with
# Debian's Node.js when there is none. moto_server (S3), the GCS emulator and Spark come with
# the Python packages.
AZURITE_VERSION := 3.37.0
AZURITE := .test-servers/azurite/node_modules/.bin/azurite-blob
# Apache Kafka (the broker of dev/kafka/pom.xml) and its runtime jars, from Maven Central.
KAFKA_STAMP := .test-servers/kafka/.installed
# Apache Iceberg's REST catalog test server (dev/iceberg-rest/pom.xml), from Maven Central.
ICEBERG_REST_STAMP := .test-servers/iceberg-rest/.installed

test-servers: $(AZURITE) $(KAFKA_STAMP) $(ICEBERG_REST_STAMP)
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	$(call debian_install,$$missing)

$(AZURITE):
	@missing=""; command -v npm >/dev/null || missing="nodejs npm"; \
	$(call debian_install,$$missing)
	npm install --prefix .test-servers/azurite --no-audit --no-fund --silent azurite@$(AZURITE_VERSION)

$(KAFKA_STAMP): dev/kafka/pom.xml
	@missing=""; command -v mvn >/dev/null || missing="maven"; \
	$(call debian_install,$$missing)
	rm -rf .test-servers/kafka/libs
	mvn --batch-mode --quiet --file dev/kafka/pom.xml dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.test-servers/kafka/libs
	@touch $@

$(ICEBERG_REST_STAMP): dev/iceberg-rest/pom.xml
	@missing=""; command -v mvn >/dev/null || missing="maven"; \
	$(call debian_install,$$missing)
	rm -rf .test-servers/iceberg-rest/libs
	mvn --batch-mode --quiet --file dev/iceberg-rest/pom.xml dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.test-servers/iceberg-rest/libs
	@touch $@

# One Apache Kafka broker (KRaft, broker and controller in one JVM) on loopback, for trying
# tierflow by hand; it prints the TIERFLOW_* settings that point tierflow at it. Ctrl-C stops it.
kafka: $(RUNTIME_STAMP) java $(KAFKA_STAMP)
	$(PY) -m dev.kafka_broker

# Install Debian packages (the list in $(1), which may be empty) as root, or say what to do.
define debian_install
	if [ -z "$(1)" ]; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian packages for the test servers:$(1)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; \
	else \
		echo "The tests need:$(1) (e.g. sudo apt-get install$(1))" >&2; \
		exit 1; \
	fi
endef

demo: $(RUNTIME_STAMP) java
	$(PY) -m tierflow.cli demo
	$(PY) -m tierflow.cli diskless demo

# Two workers (pytest-xdist), each running whole test files: most tests wait on a subprocess
# or a server, so two at once take about half the time on two cores. Each worker starts the
# servers it needs. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2
# CI stops a run at 90 minutes, installs included: after 65 (about twice a whole run on two
# workers) no further test starts, so a slow run still ends with its summary. One process takes
# about twice as long as two, so TEST_WORKERS=0 runs without that limit.
TEST_SESSION_LIMIT := $(if $(filter 0,$(TEST_WORKERS)),,--session-timeout 3900)

test: $(DEV_STAMP) java test-servers
	$(PY) -m pytest --numprocesses $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		$(TEST_SESSION_LIMIT)

# Lint, then the unit tests: those of tests/unit need no PostgreSQL, S3, Spark or Airflow (SQLite
# and a local bucket at most), so they run on a fresh checkout without the servers. make test
# runs them too, with the rest.
check: $(DEV_STAMP) lint
	$(PY) -m pytest -q tests/unit -p no:cacheprovider

# The property-based tests at full strength: at least 10,000 generated cases per property
# (make test runs the same properties with a few hundred cases each).
# A property at 10,000 cases runs for minutes by design: no per-test time limit here.
fuzz: $(DEV_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/fuzz -q --timeout 0

# The crash-injection harness: every lifecycle operation SIGKILLed at each crash point it
# reaches, on both storage layouts, Spark's rewrite included; rerun, reconciled and checked
# (make test runs every operation but Spark's at three kill points each).
chaos: $(DEV_STAMP) java
	$(PY) -m tests.chaos

# A local Airflow 3 (api-server, scheduler, dag-processor) with dags/ and plugins/ and the
# settings in airflow_settings.yaml; prints the UI address and login. Ctrl-C stops it.
airflow: $(RUNTIME_STAMP) java
	$(PY) -m tierflow.cli airflow serve

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(DEV_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf data .pytest_cache .ruff_cache
