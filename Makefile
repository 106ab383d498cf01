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

## test: lint, then unit + integration tests against the lab (brought up if it is not running); ends
## with one line on the tests skipped and why (traces not found, ...), and leaves the lab running
test: lint lab-up chromium
	$(GO) test -count=1 -run '^$$' $(PKGS) >/dev/null   # compile all test binaries in parallel
	rc=0; eval "$$($(LAB) env)" && $(GO) test -json -p 1 -count=1 -timeout 20m $(PKGS) | $(GO) run ./internal/testsummary || rc=$$?; \
	echo "The lab's daemons are still running (make lab-status); make lab-down stops them."; exit $$rc

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

## chromium: Debian's headless Chromium, for the report's browser test; installed when missing
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null || { \
		echo "installing Debian's chromium (apt-get install chromium) for the report's browser test; log: /tmp/fairway-chromium-apt.log"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/tmp/fairway-chromium-apt.log 2>&1 || \
		{ echo "apt-get install chromium failed:"; tail -20 /tmp/fairway-chromium-apt.log; exit 1; }; }

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
