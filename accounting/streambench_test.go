package accounting_test

import (
	"bufio"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestWriteBigSacctFile writes a `sacct --json` file of
// $FAIRWAY_BIG_SACCT_JOBS jobs (slurmrestd 26.05.3's real answer repeated,
// see bigHistory) to $FAIRWAY_BIG_SACCT_OUT, for measuring `fairway ingest
// FILE` by hand:
//
//	FAIRWAY_BIG_SACCT_OUT=/tmp/big.json FAIRWAY_BIG_SACCT_JOBS=100000 go test ./accounting -run TestWriteBigSacctFile
//	/usr/bin/time -v fairway ingest --database-url ... /tmp/big.json
func TestWriteBigSacctFile(t *testing.T) {
	out := os.Getenv("FAIRWAY_BIG_SACCT_OUT")
	if out == "" {
		t.Skip("FAIRWAY_BIG_SACCT_OUT not set")
	}
	n, err := strconv.Atoi(os.Getenv("FAIRWAY_BIG_SACCT_JOBS"))
	if err != nil || n <= 0 {
		t.Fatalf("FAIRWAY_BIG_SACCT_JOBS=%q: want a job count", os.Getenv("FAIRWAY_BIG_SACCT_JOBS"))
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const perDay = 5000
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	until := day.Add(time.Duration(n) * 24 * time.Hour / perDay)
	got, err := newBigHistory(t, perDay).write(w, day, until)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d jobs", out, got)
}
