# Fairway — build, test and lab targets. See README.md and INSTALL.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED ?= 1

GO       ?= go
LAB      := contrib/lab/lab
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
PKGS     := ./...

.PHONY: all build test unit lint bench lab-up lab-down lab-hooks lab-status clean

all: build

## build: the fairway binary in ./fairway
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o fairway ./cmd/fairway

## test: lint, then unit + integration tests against the lab (brought up if it is not running)
test: lint lab-up chromium
	$(GO) test -count=1 -run '^$$' $(PKGS) >/dev/null   # compile all test binaries in parallel
	eval "$$($(LAB) env)" && $(GO) test -p 1 -count=1 -timeout 20m $(PKGS)

## unit: tests that need no lab (integration tests skip, or fail under CI=true)
unit:
	$(GO) test -count=1 $(PKGS)

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: every Go benchmark (needs the lab for the database/Slurm ones)
bench: lab-up
	eval "$$($(LAB) env)" && $(GO) test -p 1 -run '^$$' -bench . -benchmem -timeout 60m $(PKGS)

## policy-doc: rerun the policy suite (every policy × CTC, KTH, SDSC-BLUE, Philly-MIX1, 3 synthetic seeds ×
## loads 0.8/1.0/1.2) and rewrite the evidence section of docs/POLICY.md; TRACES=dir, SUITE_FLAGS=--max-jobs N
TRACES      ?= ../shared/data/traces
SUITE_FLAGS ?= --max-jobs 10000
.PHONY: policy-doc
policy-doc:
	$(GO) build -o fairway.suite ./cmd/fairway
	{ echo "$$ fairway simulate --suite --traces-dir $(TRACES) $(SUITE_FLAGS)"; echo; \
	  nice ./fairway.suite simulate --suite --parallel 2 --traces-dir $(TRACES) $(SUITE_FLAGS); } > docs/.suite.txt
	rm -f fairway.suite
	awk 'BEGIN{skip=0} /<!-- suite:begin -->/{print; print "```text"; while ((getline l < "docs/.suite.txt") > 0) print l; print "```"; skip=1; next} /<!-- suite:end -->/{skip=0} !skip' docs/POLICY.md > docs/.POLICY.md
	mv docs/.POLICY.md docs/POLICY.md && rm -f docs/.suite.txt

## chromium: Debian's headless Chromium, for the report's browser test; installed when missing
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

lab-up:
	$(LAB) up

lab-down:
	$(LAB) down

## lab-hooks: install ./fairway as the lab's slurmd Prolog/Epilog (the lab's wrapper never fails a job)
lab-hooks: build
	install -D -m 0755 fairway "$${FAIRWAY_LAB_DIR:-.lab}/bin/fairway.new"
	mv -f "$${FAIRWAY_LAB_DIR:-.lab}/bin/fairway.new" "$${FAIRWAY_LAB_DIR:-.lab}/bin/fairway"

lab-status:
	$(LAB) status

## record: capture real slurmrestd responses from the lab into slurmctl/testdata/<api version>/ (the
## slurmctl and accounting unit tests replay them); submits and cancels its own jobs only
.PHONY: record
record: lab-up
	eval "$$($(LAB) env)" && $(GO) test -count=1 -run '^TestRecord(DBJobs)?$$' -v ./slurmctl -record

## record-accounting: run a set of jobs on the lab and capture `sacct --json` and `sacctmgr -nP show
## associations` into accounting/testdata/ (the accounting parser tests read them)
.PHONY: record-accounting
record-accounting: lab-up
	eval "$$($(LAB) env)" && $(GO) test -count=1 -run '^TestCapture_LabFixtures$$' -v ./accounting -capture

clean:
	rm -f fairway

## demo: the newcomer's first command — lab up, then a small workload under Slurm alone and under fairway serve
demo:
	contrib/demo/demo
