package prolog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFlushReport: what spool flush prints and whether it fails, for a
// clean flush, one that leaves a file that is not a record, and one the
// database refuses.
func TestFlushReport(t *testing.T) {
	r := newRig(t, nil)
	if err := r.h.spool.Put([]Usage{{Cluster: "lab", JobID: 5, Node: "gpu1", GPUMinor: 0, EndedAt: r.now}}); err != nil {
		t.Fatal(err)
	}
	rep := r.h.spool.FlushReport(budget(t, 5*time.Second), r.store, r.h.log)
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil || b.String() != "stored 1 usage records from "+r.cfg.SpoolDir+", 0 left\n" || rep.Err() != nil {
		t.Errorf("clean flush: %q, err %v", b.String(), rep.Err())
	}

	if err := os.WriteFile(filepath.Join(r.cfg.SpoolDir, "garbage.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = r.h.spool.FlushReport(budget(t, 5*time.Second), r.store, r.h.log)
	js, _ := json.Marshal(rep)
	if want := `{"spool":"` + r.cfg.SpoolDir + `","stored":0,"left":1}`; string(js) != want {
		t.Errorf("JSON %s, want %s", js, want)
	}
	if err := rep.Err(); err == nil || err.Error() != "1 spooled files are not usage records; see the log" {
		t.Errorf("a file left: err %v", err)
	}

	if err := r.h.spool.Put([]Usage{{Cluster: "lab", JobID: 6, Node: "gpu1", GPUMinor: 1, EndedAt: r.now}}); err != nil {
		t.Fatal(err)
	}
	r.store.fail = errors.New("database down")
	rep = r.h.spool.FlushReport(budget(t, 5*time.Second), r.store, r.h.log)
	if !errors.Is(rep.Err(), r.store.fail) || rep.Error == "" {
		t.Errorf("database down: err %v, error field %q", rep.Err(), rep.Error)
	}
}
