# Fairway — build, test and lab targets. See README.md and INSTALL.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED ?= 1

GO       ?= go
LAB      := contrib/lab/lab
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# urfave_cli_no_docs leaves out urfave/cli's man-page and Markdown writers (and the Markdown parser
# they pull in), which fairway never calls but every process would initialise at start-up: a hook
# runs one per job start (cmd/fairway's buildFairway builds the test binaries the same way).
TAGS     := urfave_cli_no_docs
PKGS     := ./...

.PHONY: all build install test unit lint bench lab-up lab-down lab-hooks lab-status clean forecast-doc glibc

all: build

## build: the fairway binary in ./fairway
build:
	$(GO) build -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o fairway ./cmd/fairway

## install: the binary, hook scripts, systemd units and timers, env files (never replacing an existing
## one), state, spool and log directories, with the owners and modes INSTALL.md lists ("Install the
## files"). DESTDIR=dir for a package; PREFIX (/usr/local), UNITDIR (/etc/systemd/system), SLURM_PREFIX
## (Slurm built from source, e.g. /opt/slurm), SLURM_USER (slurm), STATE_DIR (/run/fairway)
## (make exports command-line variables to the script)
install: build
	contrib/install

## glibc: the newest GLIBC symbol version ./fairway needs; a node with an older glibc cannot run it
## (INSTALL.md, "Building for older nodes")
glibc: build
	@v=$$(objdump -T fairway | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1); \
	echo "./fairway needs $${v/_/ } or newer (built with $$(ldd --version | head -1))"

## test: lint, then unit + integration tests against the lab (brought up if it is not running); ends
## with one line on the tests skipped and why (traces not found, ...), and leaves the lab running
# The packages whose tests use the lab (those importing contrib/lab) run one at a time: they share its
# daemons, jobs and databases. The others need no lab and run beside them under nice, on the CPU the
# lab tests leave idle while Slurm runs their jobs; their output follows the lab packages'.
LABPKG := github.com/fairway-hpc/fairway/contrib/lab
test: lint lab-up chromium
	$(GO) test -count=1 -run '^$$' $(PKGS) >/dev/null   # compile all test binaries in parallel
	@echo "go test -p 1 the packages that use the lab, beside nice go test -p 1 the others (go test -json | testsummary)"
	@pkgs=$$($(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' $(PKGS)); \
	lab=$$(awk -v l=$(LABPKG) '{for (i = 1; i <= NF; i++) if ($$i == l) {print $$1; next}}' <<<"$$pkgs"); \
	free=$$(awk -v l=$(LABPKG) '{for (i = 1; i <= NF; i++) if ($$i == l) next; print $$1}' <<<"$$pkgs"); \
	out=$$(mktemp); trap 'rm -f "$$out"' EXIT; rc=0; eval "$$($(LAB) env)" && \
	{ nice -n 10 $(GO) test -json -p 1 -count=1 -timeout 40m $$free >"$$out" & free_pid=$$!; free_rc=0; \
	  $(GO) test -json -p 1 -count=1 -timeout 40m $$lab || lab_rc=$$?; wait $$free_pid || free_rc=$$?; \
	  cat "$$out"; exit $$(( $${lab_rc:-0} | free_rc )); } | $(GO) run ./internal/testsummary || rc=$$?; \
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

## helios-compare: the Helios artifact's simulator (SC'21, S-Lab-System-Group/HeliosArtifact, never shipped
## here) beside fairway simulate on Philly-MIX1, each of its 11 virtual clusters through FIFO, SJF and QSSF:
## both average JCTs and both run times per row (docs/SIMULATOR.md, "Against the Helios artifact").
## HELIOS_ARTIFACT=checkout (required), HELIOS_PYTHON=/usr/bin/python3 (with pandas and numpy),
## HELIOS_FLAGS (e.g. --vcs 103959 --policies qssf --nodes 10), TRACES_DIR
HELIOS_PYTHON ?= /usr/bin/python3
HELIOS_FLAGS ?=
.PHONY: helios-compare
helios-compare: build
	@if [ -z "$${HELIOS_ARTIFACT:-}" ]; then echo "helios-compare: set HELIOS_ARTIFACT to a checkout of https://github.com/S-Lab-System-Group/HeliosArtifact (not shipped with Fairway)" >&2; exit 2; fi
	contrib/helios/compare --artifact "$$HELIOS_ARTIFACT" --python $(HELIOS_PYTHON) --fairway ./fairway \
	  --trace $(TRACES_DIR)/Philly-MIX1.csv.gz $(HELIOS_FLAGS)

## forecast-doc: docs/FORECAST.md's tables, start-time forecast accuracy on the shared traces (minutes)
TRACES_DIR ?= $(or $(FAIRWAY_TRACES_DIR),../shared/data/traces)
FORECAST_TRACES := CTC-SP2-1996-3.1-cln.swf.gz:swf KTH-SP2-filtered.swf.gz:swf SDSC-BLUE-2000-4.2-cln.swf.gz:swf Philly-MIX1.csv.gz:philly-mix
forecast-doc: build
	{ sed '/^<!-- generated by make forecast-doc -->$$/q' docs/FORECAST.md; echo; \
	  for t in $(FORECAST_TRACES); do \
	    nice ./fairway simulate --forecast --forecast-oracle --trace $(TRACES_DIR)/$${t%%:*} --format $${t##*:}; \
	  done; } > docs/FORECAST.md.new
	mv docs/FORECAST.md.new docs/FORECAST.md

## tune-default: tune the learned family (fairway tune, objective fair) on each of CTC, KTH, SDSC-BLUE,
## Philly-MIX1 and the 30,000-job synthetic workload of seed 1, TUNE_BUDGET each, into policy/defaults/NAME.json
## (with NAME.txt, tune's summary), then replay the suite with every file beside the registered policies and
## judge each as the default is judged (policy/defaults/suite.txt). The default (policy.Default) changes only
## when a file does better than it there; docs/POLICY.md records the decision.
## TRACES_DIR=dir, TUNE_BUDGET=10m, TUNE_FLAGS=--max-jobs 30000, SUITE_FLAGS=--max-jobs 30000
TUNE_BUDGET ?= 10m
# the policies the suite's criteria compare the default with (sim.Criteria), and the default
VERDICT_POLICIES := fifo,fairshare,vtc,qssf,sjf-oracle,fair-sjf
TUNE_FLAGS ?= --max-jobs 30000
TUNE_TRACES := ctc:CTC-SP2-1996-3.1-cln.swf.gz:swf kth:KTH-SP2-filtered.swf.gz:swf sdsc-blue:SDSC-BLUE-2000-4.2-cln.swf.gz:swf \
	philly-mix1:Philly-MIX1.csv.gz:philly-mix
.PHONY: tune-default
tune-default:
	$(GO) build -tags '$(TAGS)' -o fairway.tune ./cmd/fairway
	mkdir -p policy/defaults
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	./fairway.tune trace synth --jobs 30000 --seed 1 --out $$tmp/synth-30k.csv; \
	files=; \
	for t in $(TUNE_TRACES) synth-30k:$$tmp/synth-30k.csv:helios; do \
	  IFS=: read -r name file format <<< "$$t"; \
	  case $$file in /*) ;; *) file=$(TRACES_DIR)/$$file;; esac; \
	  extra=; [ "$$format" = helios ] && extra="--nodes 8 --per-node 8"; \
	  echo "tuning on $$name ($(TUNE_BUDGET))"; \
	  { echo "$$ fairway tune --trace $$(basename $$file) --format $$format $$extra --budget $(TUNE_BUDGET) $(TUNE_FLAGS) --out policy/defaults/$$name.json"; echo; \
	    nice ./fairway.tune tune --trace $$file --format $$format $$extra --budget $(TUNE_BUDGET) $(TUNE_FLAGS) --progress never \
	      --out policy/defaults/$$name.json; } > policy/defaults/$$name.txt; \
	  files="$$files --policy-file policy/defaults/$$name.json"; \
	done; \
	echo "replaying the suite"; \
	{ echo "$$ fairway simulate --suite --no-predictors --policies $(VERDICT_POLICIES) --traces-dir $(TRACES_DIR)$(if $(SUITE_FLAGS), $(SUITE_FLAGS))$$files"; echo; \
	  nice ./fairway.tune simulate --suite --no-predictors --policies $(VERDICT_POLICIES) --parallel 2 --progress never \
	    --traces-dir $(TRACES_DIR) $(SUITE_FLAGS) $$files; } > policy/defaults/suite.txt
	rm -f fairway.tune
	tail -n $$(( $$(ls policy/defaults/*.json | wc -l) + 2 )) policy/defaults/suite.txt

## tune-split: issue 31's time split. For each of SPLIT_ROWS (CTC, KTH, SDSC-BLUE, Philly-MIX1 and the 30,000-job
## synthetic workload of seed 1 on 8 × 8 GPUs), tune on the first 70% of submits (fairway tune, objective fair,
## SPLIT_BUDGET), then replay the last 30% with EASY beside every registered policy (simulate --split 0.7
## --policy-file) into SPLIT_DIR/NAME-tune.txt and SPLIT_DIR/NAME-split.txt, whose last line is the
## criterion's verdict; SPLIT_DIR/verdicts.txt collects them. docs/POLICY.md's time-split tables come from these.
## TRACES_DIR=dir, SPLIT_BUDGET=10m, SPLIT_FLAGS= (more tune flags), SPLIT_DIR=docs/split,
## SPLIT_ROWS="ctc kth sdsc-blue philly-mix1 synth-30k"
SPLIT_BUDGET ?= 10m
SPLIT_FLAGS ?=
SPLIT_DIR ?= docs/split
SPLIT_ROWS ?= ctc kth sdsc-blue philly-mix1 synth-30k
.PHONY: tune-split
tune-split:
	$(GO) build -tags '$(TAGS)' -o fairway.tune ./cmd/fairway
	mkdir -p $(SPLIT_DIR)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for t in $(TUNE_TRACES) synth-30k:$$tmp/synth-30k.csv:helios; do \
	  IFS=: read -r name file format <<< "$$t"; \
	  case " $(SPLIT_ROWS) " in *" $$name "*) ;; *) continue;; esac; \
	  case $$file in /*) ;; *) file=$(TRACES_DIR)/$$file;; esac; \
	  extra=; [ "$$format" = helios ] && extra="--nodes 8 --per-node 8"; \
	  [ "$$name" = synth-30k ] && ./fairway.tune trace synth --jobs 30000 --seed 1 --out $$file; \
	  echo "time split on $$name: tuning ($(SPLIT_BUDGET)), then replaying the held-out 30%"; \
	  { echo "$$ fairway tune --trace $$(basename $$file) --format $$format $$extra --budget $(SPLIT_BUDGET)$(if $(SPLIT_FLAGS), $(SPLIT_FLAGS)) --out $$name-tuned.json"; echo; \
	    nice ./fairway.tune tune --trace $$file --format $$format $$extra --budget $(SPLIT_BUDGET) $(SPLIT_FLAGS) --parallel 2 --progress never \
	      --out $$tmp/$$name-tuned.json; } > $(SPLIT_DIR)/$$name-tune.txt; \
	  { echo "$$ fairway simulate --trace $$(basename $$file) --format $$format $$extra --split 0.7 --policy-file $$name-tuned.json"; echo; \
	    nice ./fairway.tune simulate --trace $$file --format $$format $$extra --split 0.7 --policy-file $$tmp/$$name-tuned.json \
	      --parallel 2 --progress never; } > $(SPLIT_DIR)/$$name-split.txt; \
	done
	rm -f fairway.tune
	for n in $(SPLIT_ROWS); do echo "$$n: $$(tail -n 1 $(SPLIT_DIR)/$$n-split.txt)"; done | tee $(SPLIT_DIR)/verdicts.txt

## tune-rls: issue 31's RLScheduler protocol. For each of RLS_ROWS (CTC, KTH, SDSC-BLUE), tune with
## --objective bsld on sequences from the first 70% of submits (RLS_BUDGET), then replay 10 sequences of 1024
## jobs (seed 1) from the last 30% with F1, SJF by limit, QSSF, fairshare, fair-sjf, the tuned file and SJF on
## predictions (contrib/policies/sjf-pred.json) into RLS_DIR/NAME-rls-tune.txt and RLS_DIR/NAME-rls.txt, whose
## last lines are RLScheduler's criterion for each file; RLS_DIR/rls-verdicts.txt collects them.
## TRACES_DIR=dir, RLS_BUDGET=20m, RLS_FLAGS= (more tune flags), RLS_DIR=docs/split, RLS_ROWS="ctc kth sdsc-blue"
RLS_BUDGET ?= 20m
RLS_FLAGS ?=
RLS_DIR ?= docs/split
RLS_ROWS ?= ctc kth sdsc-blue
.PHONY: tune-rls
tune-rls:
	$(GO) build -tags '$(TAGS)' -o fairway.tune ./cmd/fairway
	mkdir -p $(RLS_DIR)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for t in $(TUNE_TRACES); do \
	  IFS=: read -r name file format <<< "$$t"; \
	  case " $(RLS_ROWS) " in *" $$name "*) ;; *) continue;; esac; \
	  file=$(TRACES_DIR)/$$file; \
	  echo "RLScheduler's protocol on $$name: tuning ($(RLS_BUDGET)), then replaying 10 sequences from the held-out 30%"; \
	  { echo "$$ fairway tune --trace $$(basename $$file) --format $$format --objective bsld --budget $(RLS_BUDGET)$(if $(RLS_FLAGS), $(RLS_FLAGS)) --out $$name-bsld.json"; echo; \
	    nice ./fairway.tune tune --trace $$file --format $$format --objective bsld --budget $(RLS_BUDGET) $(RLS_FLAGS) --parallel 2 --progress never \
	      --out $$tmp/$$name-bsld.json; } > $(RLS_DIR)/$$name-rls-tune.txt; \
	  { echo "$$ fairway simulate --trace $$(basename $$file) --format $$format --sequences 10 --length 1024 --seed 1 --window-from 0.7 --policies f1,sjf-limit,qssf,fairshare,fair-sjf --policy-file $$name-bsld.json --policy-file contrib/policies/sjf-pred.json"; echo; \
	    nice ./fairway.tune simulate --trace $$file --format $$format --sequences 10 --length 1024 --seed 1 --window-from 0.7 \
	      --policies f1,sjf-limit,qssf,fairshare,fair-sjf --policy-file $$tmp/$$name-bsld.json --policy-file contrib/policies/sjf-pred.json \
	      --parallel 2 --progress never; } > $(RLS_DIR)/$$name-rls.txt; \
	done
	rm -f fairway.tune
	for n in $(RLS_ROWS); do tail -n 2 $(RLS_DIR)/$$n-rls.txt | sed "s/^/$$n: /"; done | tee $(RLS_DIR)/rls-verdicts.txt

## policy-doc: rerun the policy suite (every policy × CTC, KTH, SDSC-BLUE, Philly-MIX1, 3 synthetic seeds ×
## loads 0.8/1.0/1.2) on each trace's first 30,000 jobs and rewrite that evidence block of docs/POLICY.md;
## policy-doc-whole: the same on the whole traces (about 10 minutes on 2 cores), its own block
## TRACES_DIR=dir, SUITE_FLAGS=--max-jobs N
SUITE_FLAGS ?= --max-jobs 30000
SUITE_MARK ?= suite
.PHONY: policy-doc policy-doc-whole
policy-doc-whole:
	$(MAKE) policy-doc SUITE_FLAGS= SUITE_MARK=suite-whole
policy-doc:
	$(GO) build -tags '$(TAGS)' -o fairway.suite ./cmd/fairway
	{ echo "$$ fairway simulate --suite --traces-dir $(TRACES_DIR)$(if $(SUITE_FLAGS), $(SUITE_FLAGS))"; echo; \
	  nice ./fairway.suite simulate --suite --parallel 2 --traces-dir $(TRACES_DIR) $(SUITE_FLAGS); } > docs/.suite.txt
	rm -f fairway.suite
	awk -v b='<!-- $(SUITE_MARK):begin -->' -v e='<!-- $(SUITE_MARK):end -->' 'BEGIN{skip=0} $$0==b{print; print "```text"; while ((getline l < "docs/.suite.txt") > 0) print l; print "```"; skip=1; next} $$0==e{skip=0} !skip' docs/POLICY.md > docs/.POLICY.md
	mv docs/.POLICY.md docs/POLICY.md && rm -f docs/.suite.txt

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
