package trace

import (
	"compress/gzip"
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
	"github.com/fairway-hpc/fairway/policy"
)

// heliosTime is how Helios' cluster_log.csv spells instants.
const heliosTime = "2006-01-02 15:04:05"

// WriteHelios writes jobs in the Helios cluster_log.csv layout that the
// Helios reader takes back (with jobname and the time_limit extension), so
// that a synthetic workload is a trace file like any other. Fields are
// quoted as RFC 4180 says: a job name may hold a comma or a quote. Jobs
// must have Start and End (a run time).
func WriteHelios(w io.Writer, jobs []policy.Job) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state",
		"submit_time", "start_time", "end_time", "duration", "queue", "time_limit"}); err != nil {
		return err
	}
	rec := make([]string, 14)
	for i := range jobs {
		j := &jobs[i]
		limit := ""
		if j.TimeLimit > 0 {
			limit = strconv.FormatInt(int64(j.TimeLimit.Seconds()), 10)
		}
		rec = append(rec[:0], strconv.FormatInt(j.ID, 10), j.User, j.Partition, j.Name,
			strconv.Itoa(j.GPUs), strconv.Itoa(j.CPUs), strconv.Itoa(j.Nodes), j.State.String(),
			j.Submit.UTC().Format(heliosTime), j.Start.UTC().Format(heliosTime), j.End.UTC().Format(heliosTime),
			strconv.FormatInt(int64(j.RunTime().Seconds()), 10), strconv.FormatInt(int64(j.Start.Sub(j.Submit).Seconds()), 10), limit)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteHeliosFile writes jobs to path with WriteHelios, gzip-compressed
// when path ends in .gz, as the readers take it back. The file is replaced
// whole (atomicfile): a failed write leaves the old one.
func WriteHeliosFile(path string, jobs []policy.Job) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return WriteHelios(w, jobs)
		}
		zw := gzip.NewWriter(w)
		if err := WriteHelios(zw, jobs); err != nil {
			return err
		}
		return zw.Close()
	})
}
