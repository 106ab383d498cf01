# slurmctl/record.mk — included from the top-level Makefile.
#
# `make record` captures real slurmrestd responses from the running lab into
# slurmctl/testdata/<api version>/ for the unit tests to replay. It submits
# its own jobs (cancelled at the end) and never touches other jobs.
.PHONY: record
record:
	eval "$$(contrib/lab/lab env)" && go test ./slurmctl -run '^TestRecord$$' -count=1 -v -record
