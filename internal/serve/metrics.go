package serve

import (
	"net/http"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are serve's Prometheus metrics, on their own registry (no
// globals). Names follow Prometheus conventions: base units, _total for
// counters.
type Metrics struct {
	reg *prometheus.Registry

	cycleDuration   *prometheus.HistogramVec
	cycles          *prometheus.CounterVec
	jobsPending     prometheus.Gauge
	jobsRunning     prometheus.Gauge
	writes          prometheus.Counter
	writeErrors     prometheus.Counter
	readBackBad     prometheus.Counter
	writerStopped   prometheus.Gauge
	skippedRecords  prometheus.Counter
	planned         prometheus.Counter
	leader          prometheus.Gauge
	slurmUp         prometheus.Gauge
	dbUp            prometheus.Gauge
	buffered        prometheus.Gauge
	spilled         prometheus.Gauge
	spillErrors     prometheus.Counter
	accountUse      *prometheus.GaugeVec
	accountShare    *prometheus.GaugeVec
	accountWait     *prometheus.GaugeVec
	accountWaitMax  *prometheus.GaugeVec
	predictionError prometheus.Histogram
	forecastError   *prometheus.HistogramVec
	power           *powerMetrics
	policyFile      *policyFileMetrics // nil without a policy file
}

// NewMetrics registers serve's metrics on a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.power = newPowerMetrics(m.reg)
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.cycleDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fairway_cycle_duration_seconds", Help: "Duration of serve cycles by step (observe, rank, decide, apply, record) and in total (up to recording).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
	}, []string{"phase"})
	m.cycles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairway_cycles_total", Help: "Serve cycles by result (ok, read_error, rank_error)."}, []string{"result"})
	m.jobsPending = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_jobs_ranked", Help: "Pending jobs ranked in the last cycle."})
	m.jobsRunning = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_jobs_running", Help: "Running jobs seen in the last cycle."})
	m.writes = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_writes_total", Help: "Values written to Slurm and confirmed."})
	m.writeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_write_errors_total", Help: "Writes Slurm refused or whose outcome is unknown."})
	m.readBackBad = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_write_readback_mismatches_total", Help: "Written jobs whose priority, read back from Slurm, contradicts the value written (REST writer modes)."})
	m.writerStopped = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_writer_stopped", Help: "1 when a read-back mismatch stopped the writer: nothing is written until serve restarts."})
	m.skippedRecords = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_slurm_records_skipped_total", Help: "Job records slurmrestd sent that could not be translated and were left out of the cycle (each logged)."})
	m.planned = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_values_changed_total", Help: "Values decided that differ from the previous cycle (written, or in dry run would be)."})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_leader", Help: "1 when this process holds the leader lease and may write to Slurm."})
	m.slurmUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_slurm_up", Help: "1 when the last read of slurmrestd succeeded."})
	m.dbUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_database_up", Help: "1 when the last write to PostgreSQL succeeded."})
	m.buffered = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_buffered_records", Help: "Records waiting for PostgreSQL, in memory and spilled to disk."})
	m.spilled = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_buffer_spilled_records", Help: "Records waiting for PostgreSQL in spill files on the local disk."})
	m.spillErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_buffer_spill_errors_total", Help: "Spills to disk that failed (the records stayed in memory)."})
	m.accountUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_account_usage_ratio", Help: "Account's share of the cluster's decayed GPU usage (0..1)."}, []string{"account"})
	m.accountShare = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_account_share_ratio", Help: "Account's normalized share among the accounts with usage or pending work (0..1)."}, []string{"account"})
	m.accountWait = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_queue_wait_seconds", Help: "Mean time the account's pending jobs have waited so far."}, []string{"account"})
	m.accountWaitMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_queue_wait_max_seconds", Help: "Longest time one of the account's pending jobs has waited so far."}, []string{"account"})
	m.predictionError = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fairway_prediction_abs_error_seconds", Help: "Absolute error of the run-time prediction of jobs that finished.",
		Buckets: prometheus.ExponentialBuckets(10, 3, 10),
	})
	m.forecastError = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fairway_forecast_abs_error_seconds", Help: "Absolute error of the start-time forecast of jobs that started, by method (predicted run times, time limits) and forecast (first made for the job, last before it started).",
		Buckets: prometheus.ExponentialBuckets(30, 3, 10),
	}, []string{"method", "made"})
	for _, c := range []prometheus.Collector{m.forecastError, m.cycleDuration, m.cycles, m.jobsPending, m.jobsRunning, m.writes, m.writeErrors,
		m.readBackBad, m.writerStopped, m.skippedRecords,
		m.planned, m.leader, m.slurmUp, m.dbUp, m.buffered, m.spilled, m.spillErrors, m.accountUse, m.accountShare, m.accountWait, m.accountWaitMax,
		m.predictionError, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

func (m *Metrics) cycle(c accounting.Cycle, st *Steps, result string) {
	m.cycles.WithLabelValues(result).Inc()
	for phase, d := range map[string]time.Duration{"observe": st.Observe, "rank": st.Rank, "decide": st.Decide, "apply": st.Apply,
		"record": st.Record, "total": c.Total} {
		m.cycleDuration.WithLabelValues(phase).Observe(d.Seconds())
	}
}

// ranked updates the per-cycle gauges from the snapshot just ranked.
func (m *Metrics) ranked(s *policy.Snapshot, scores []policy.Score, rep slurmctl.Report, c accounting.Cycle) {
	m.jobsPending.Set(float64(len(scores)))
	m.jobsRunning.Set(float64(len(s.Running)))
	m.writes.Add(float64(c.Written)) // as its sink stamped it: a planned cycle writes nothing
	m.writeErrors.Add(float64(len(rep.Failed)))
	m.readBackBad.Add(float64(len(rep.ReadBack.Mismatches)))
	m.planned.Add(float64(len(rep.Planned)))

	type agg struct {
		n        int
		sum, max float64
	}
	waits := map[string]*agg{}
	for i := range s.Pending {
		j := &s.Pending[i]
		a := waits[j.Account]
		if a == nil {
			a = &agg{}
			waits[j.Account] = a
		}
		w := s.Now.Sub(j.Submit).Seconds()
		a.n++
		a.sum += w
		a.max = max(a.max, w)
	}
	m.accountWait.Reset()
	m.accountWaitMax.Reset()
	for acct, a := range waits {
		m.accountWait.WithLabelValues(acct).Set(a.sum / float64(a.n))
		m.accountWaitMax.WithLabelValues(acct).Set(a.max)
	}

	// Usage vs share, over the accounts the ledger knows or that wait.
	accounts := map[string]bool{}
	for acct := range waits {
		accounts[acct] = true
	}
	if s.Ledger != nil {
		for _, a := range s.Ledger.Assocs() {
			accounts[a.Account] = true
		}
	}
	var total, shareSum float64
	if s.Ledger != nil {
		total = s.Ledger.TotalUsage(s.Now)
	}
	for acct := range accounts {
		shareSum += s.Shares.Account(acct)
	}
	m.accountUse.Reset()
	m.accountShare.Reset()
	for acct := range accounts {
		if total > 0 && s.Ledger != nil {
			m.accountUse.WithLabelValues(acct).Set(s.Ledger.AccountUsage(acct, s.Now) / total)
		}
		if shareSum > 0 {
			m.accountShare.WithLabelValues(acct).Set(s.Shares.Account(acct) / shareSum)
		}
	}
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
