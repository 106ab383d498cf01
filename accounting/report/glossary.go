package report

import "strings"

// Term is one definition in the report's footnotes. Key is the anchor
// tables link their column headers to.
type Term struct {
	Key        string `json:"key"`
	Name       string `json:"name"`
	Definition string `json:"definition"`
}

// Glossary returns the definitions of every figure in r, in the order the
// report first uses them. "U" in a definition stands for r's unit (GPU or
// processor).
func Glossary(r *Report) []Term {
	u := r.Unit
	h := u + "-hours"
	terms := []Term{
		{"hours", h, "One " + u + " used for one hour. A job holding 4 " + u + "s for 2 hours uses 8 " + h + ". A job running across midnight, or across the month's end, is split between the days it ran, so only the hours inside the month count (as in Fairway's usage ledger)."},
		{"available", "Available " + h, "The cluster's " + u + "s × the hours in the month (up to the time the report was made, for a month not over yet)."},
		{"utilization", "Utilization", h + " delivered ÷ " + h + " available. 100% means every " + u + " was busy all the time."},
		{"jobs", "Jobs ended", "Jobs that ended this month, whatever their outcome; a job that waits or runs over the month's end counts in the month it ends. The report counts three sets of jobs and says which: jobs ended (this figure, and every \"Jobs ended\" column), jobs started (those of them that ran, so have a wait: the wait chart; a job cancelled while pending has none), and jobs replayed (the counterfactual: jobs submitted and started this month that have ended, so a job submitted last month, started only next month or still running is not replayed)."},
		{"jobsstarted", "Jobs started", "Jobs that ended this month and had started, so have a wait: the jobs behind the wait figures and the wait chart. The others were cancelled while pending."},
		{"jobsreplayed", "Jobs replayed", "Jobs the counterfactual replays: submitted and started this month, and ended with a run time (a job submitted last month, started only next month, still running or cancelled while pending is not replayed, and the simulator leaves out jobs larger than the cluster)."},
		{"jobsmeasured", "Jobs measured", "Whole-GPU jobs with epilog records closed this month."},
		{"state", "Final state", "How a job ended, as Slurm records it: COMPLETED (ran to the end with exit code 0), FAILED (non-zero exit), CANCELLED (by its user or an administrator, before or while running), TIMEOUT (killed at its time limit), NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, UNKNOWN (the source did not say)."},
		{"shares", "Shares", "The account's or user's raw share in Slurm's share tree (sacctmgr Fairshare=). An account or user not in the tree has 1 share, Slurm's default."},
		{"entitled", "Entitled share", "The fraction of the cluster an account's shares entitle it to: its shares ÷ the shares of all accounts in the share tree or with jobs this month. A user's entitled share is its account's, divided among the account's users by their shares. Sub-accounts are counted in their top-level account."},
		{"used", "Used share", "The fraction of the month's " + h + " that the account (or user) received."},
		{"jain", "Jain's index", "A fairness score between 1/n and 1 over the n accounts with jobs this month (Jain, Chiu and Hawe, DEC-TR-301, 1984): (Σx)² ÷ (n·Σx²) with x = used share ÷ entitled share. 1 means every account received the same proportion of its entitlement; 1/n means one account received everything. An account that asked for less than its share also lowers it, without being wronged: read it together with waits."},
		{"wait", "Wait", "Time from submission to start. Median: half of the jobs waited less. Counted for the jobs that ended this month and started; jobs cancelled before they started have no wait."},
		{"p95", "95th-percentile wait", "The wait that 95% of jobs did not exceed: the long waits a few jobs suffered."},
		{"rho", "Finish-time fairness ρ", "How much longer a job took, from submission to end, than it would have alone on its fair slice of the cluster (Themis, Mahajan et al., NSDI 2020, §3): ρ = (end − submit) ÷ T, with T = max(run time, 10 s) × max(1, " + u + "s asked × N ÷ cluster " + u + "s) and N the average number of users with jobs waiting or running during the job's life. ρ ≤ 1: no worse than a fair slice; ρ = 3: three times longer."},
		{"cancelled", "Cancelled " + h, h + " used by jobs that ended CANCELLED: work whose result was probably thrown away. The Helios study of four GPU clusters (Hu et al., SC 2021, §3.3) found about 40% of GPU time spent on cancelled or failed jobs."},
		{"failed", "Failed " + h, h + " used by jobs that ended any other way than COMPLETED or CANCELLED (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED)."},
		{"lost", "Cancelled or failed", "(Cancelled + failed " + h + ") ÷ " + h + " delivered."},
		{"predictor", "Predictor", "The method Fairway used to predict a pending job's run time, so that short jobs can go first without breaking fairness. \"time limit\" is the user's own request, shown for comparison: what Slurm would assume without Fairway."},
		{"medae", "MedAE", "Median absolute error: half of the predictions were closer to the real run time than this."},
		{"within50", "Within ±50%", "The fraction of predictions within half of the real run time either way (a 2-hour job predicted between 1 and 3 hours)."},
		{"medianrun", "Median run time", "Half of the jobs ran for less than this: the scale MedAE should be read against."},
		{"held", "GPU-hours held", "From the epilog's per-GPU measurements: the time each GPU was allocated to a job, summed over GPUs. Only whole-GPU jobs: a shared GPU's (shards, MPS) utilization belongs to several jobs at once and cannot be charged to one."},
		{"busy", "GPU-hours busy", "GPU-hours held × the GPU's average utilization over the job (NVML's fraction of time a kernel was running)."},
		{"unknownutil", "Utilization unknown", "GPU-hours held on GPUs whose utilization NVML could not report; left out of the efficiency."},
		{"efficiency", "Efficiency", "GPU-hours busy ÷ GPU-hours held (leaving out those with utilization unknown)."},
		{"idle", "Idle GPU-hours", "GPU-hours held − GPU-hours busy: GPU time a job kept from others without using it."},
		{"decided", "Jobs ranked", "Pending jobs whose place in the queue Fairway set this month: it wrote them a priority value (the site factor or priority it manages) that puts them in its order in Slurm's queue."},
		{"reranked", "Jobs re-ranked while waiting", "Jobs whose place Fairway changed again after first setting it, because other users' usage, new jobs or better run-time predictions changed the order while they waited. Fairway logs a job only when its value changes, so these are the jobs with two or more values written."},
		{"dryrun", "Ranked in dry run only", "Jobs for which Fairway, running with --dry-run, only logged the value it would have written: Slurm's order was not changed."},
		{"cycle", "Cycle", "One round of Fairway: read the queue from Slurm, predict, rank, write the changed values. Duration is the median over the month."},
		{"counterfactual", "Counterfactual", "The jobs submitted and started this month that have ended, replayed by Fairway's simulator with their real sizes and run times on a cluster of the same size: once ranked by Slurm's plain fair-share (multifactor priority with only the fair-share factor) and once by Fairway's policy, both with EASY backfilling as Slurm does. \"What happened\" measures the real month on the same jobs the same way. The simulations start from an idle cluster and no fair-share history, and know no outages or reservations, so compare the two simulated columns with each other first."},
		{"bsld", "Bounded slowdown", "(wait + run time) ÷ max(run time, 10 s), at least 1, averaged over jobs (Feitelson et al., JSSPP 1997): how many times longer than its run time a job took; the 10-s floor keeps very short jobs from dominating."},
		{"jainbacklog", "Jain's index while waiting", "Jain's index over the users who had jobs waiting throughout each hour of the month, of the " + h + " each received that hour ÷ its entitled share among them, averaged over those hours (the fairness notion of VTC, Sheng et al., OSDI 2024, §3). Unlike the monthly index it only compares users who all wanted more."},
		{"p95rho", "95th-percentile ρ", "The finish-time fairness ρ that 95% of jobs did not exceed."},
		{"capacity", "Capacity", "The number of " + u + "s the cluster has, as configured for the report (fairway report --nodes, --per-node); when not given, the most " + u + "s in use at once during the month or the month before (the report compares the two), which makes utilization look higher than it was."},
		{"median", "Median, percentile", "Percentiles interpolate linearly between the two nearest jobs. A figure that cannot be computed says why: \"none started\" (no job of the group had started), \"nothing ran\" (no unit-hours delivered), \"never two users waiting\" (Jain's index while waiting needs two users waiting at once), \"one account\" (Jain's index over accounts needs two accounts with jobs), \"not measured\" (no epilog utilization)."},
	}
	return terms
}

// anchor is the HTML id of a term.
func anchor(key string) string { return "def-" + strings.ToLower(key) }
