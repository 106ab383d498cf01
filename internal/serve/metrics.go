package serve

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxAccountSeries bounds the accounts the per-account metrics label one
// by one (capAccounts); otherAccount sums the rest. Far above the
// accounts a cluster has, far below what a user who makes accounts up
// (no AccountingStorageEnforce=associations) could create.
const (
	maxAccountSeries = 200
	otherAccount     = "(other)"
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
	unreadable      prometheus.Gauge
	refused         *prometheus.CounterVec
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
	accountsHelp := fmt.Sprintf(" The %d accounts with the most usage (then the most pending jobs) each; the others together as account=%q.", maxAccountSeries, otherAccount)
	m.cycleDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fairway_cycle_duration_seconds", Help: "Duration of serve cycles by step (observe, rank, decide, apply, record) and in total (up to recording).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
	}, []string{"phase"})
	m.cycles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairway_cycles_total", Help: "Serve cycles by result (ok, read_error, rank_error, stopped)."}, []string{"result"})
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
	m.unreadable = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_buffer_unreadable_files", Help: "Spill files serve cannot read (cut short, corrupt), plus 1 when the spill directory cannot be listed: left in place for the admin, their records not shipped."})
	m.spillErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_buffer_spill_errors_total", Help: "Spills to disk, and files of refused records, that could not be written (the records stayed where they were)."})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairway_records_refused_total", Help: "Records PostgreSQL refused for what they hold (invalid, a value out of range), by kind (finished, prediction, decision, cycle): not stored, set aside in --buffer-dir (*" + refusedSuffix + ") or, without one, logged in full."}, []string{"kind"})
	for _, k := range recordKinds {
		m.refused.WithLabelValues(k) // every kind from the start, at 0
	}
	m.accountUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_account_usage_ratio", Help: "Account's share of the cluster's decayed GPU usage (0..1)." + accountsHelp}, []string{"account"})
	m.accountShare = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_account_share_ratio", Help: "Account's normalized share among the accounts with usage or pending work (0..1)." + accountsHelp}, []string{"account"})
	m.accountWait = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_queue_wait_seconds", Help: "Mean time the account's pending jobs have waited so far." + accountsHelp}, []string{"account"})
	m.accountWaitMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fairway_queue_wait_max_seconds", Help: "Longest time one of the account's pending jobs has waited so far." + accountsHelp}, []string{"account"})
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
		m.planned, m.leader, m.slurmUp, m.dbUp, m.buffered, m.spilled, m.spillErrors, m.unreadable, m.refused, m.accountUse, m.accountShare, m.accountWait, m.accountWaitMax,
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

	// Per account: its waiting jobs, and its usage vs share, over the
	// accounts the ledger knows or that wait.
	accounts := map[string]*accountFigures{}
	get := func(acct string) *accountFigures {
		a := accounts[acct]
		if a == nil {
			a = &accountFigures{}
			accounts[acct] = a
		}
		return a
	}
	for i := range s.Pending {
		j := &s.Pending[i]
		a := get(j.Account)
		// At least 0: a job Slurm stamps after serve's now (serve's
		// clock stepped back, or runs behind slurmctld's) has not waited.
		w := max(0, s.Now.Sub(j.Submit).Seconds())
		a.waiting++
		a.waitSum += w
		a.waitMax = max(a.waitMax, w)
	}
	var total, shareSum float64
	if s.Ledger != nil {
		for _, as := range s.Ledger.Assocs() {
			get(as.Account)
		}
		total = s.Ledger.TotalUsage(s.Now)
	}
	for acct, a := range accounts {
		a.share = s.Shares.Account(acct)
		shareSum += a.share
		if total > 0 {
			a.usage = s.Ledger.AccountUsage(acct, s.Now)
		}
	}
	accounts = capAccounts(accounts, maxAccountSeries)
	m.accountWait.Reset()
	m.accountWaitMax.Reset()
	m.accountUse.Reset()
	m.accountShare.Reset()
	for acct, a := range accounts {
		if a.waiting > 0 {
			m.accountWait.WithLabelValues(acct).Set(a.waitSum / float64(a.waiting))
			m.accountWaitMax.WithLabelValues(acct).Set(a.waitMax)
		}
		if total > 0 {
			m.accountUse.WithLabelValues(acct).Set(a.usage / total)
		}
		if shareSum > 0 {
			m.accountShare.WithLabelValues(acct).Set(a.share / shareSum)
		}
	}
}

// accountFigures is what the per-account metrics show of one account (or
// of the accounts folded into otherAccount).
type accountFigures struct {
	waiting          int // pending jobs
	waitSum, waitMax float64
	usage, share     float64 // decayed usage and raw shares
}

// capAccounts keeps the n accounts with the most usage (then the most
// pending jobs, then by name) and folds the others into otherAccount:
// sums of usage, shares and waits, the longest wait. An account named
// otherAccount is always folded. Account strings are the users' own on
// a cluster that does not enforce associations, and the ledger keeps
// every account it ever saw, so without the cap each made-up account
// would be one more series of each metric for as long as serve runs.
func capAccounts(accounts map[string]*accountFigures, n int) map[string]*accountFigures {
	if _, clash := accounts[otherAccount]; len(accounts) <= n && !clash {
		return accounts
	}
	names := make([]string, 0, len(accounts))
	for acct := range accounts {
		if acct != otherAccount {
			names = append(names, acct)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		a, b := accounts[x], accounts[y]
		if c := cmp.Compare(b.usage, a.usage); c != 0 {
			return c
		}
		if c := cmp.Compare(b.waiting, a.waiting); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	other := &accountFigures{}
	if a := accounts[otherAccount]; a != nil {
		*other = *a
	}
	kept := make(map[string]*accountFigures, n+1)
	for i, acct := range names {
		a := accounts[acct]
		if i < n {
			kept[acct] = a
			continue
		}
		other.waiting += a.waiting
		other.waitSum += a.waitSum
		other.waitMax = max(other.waitMax, a.waitMax)
		other.usage += a.usage
		other.share += a.share
	}
	kept[otherAccount] = other
	return kept
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
