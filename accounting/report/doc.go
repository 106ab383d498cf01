// Package report makes Fairway's monthly fairness report: who got how much
// GPU time against their share, who waited how long, how good the run-time
// predictions were, how busy the allocated GPUs really were, and what
// Fairway changed compared with Slurm's plain fair-share.
//
//	accounting DB ──Source.Load──► Data ──Build──► Report ──Write──► report.html (SVG inline)
//	 (job, decision,   (I/O, SQL)      (pure; runs      │              report.md + *.svg
//	  prediction_outcome,               policy/sim)     │              *.csv, report.json
//	  job_gpu_usage, cycle, share)                      └─Figures (gonum/plot)
//
// Why a sub-package of accounting, and why reading is split from computing:
// the report reads only what package accounting writes, so it lives beside it,
// but it brings plotting (gonum/plot and its fonts), HTML templates and the
// simulator, which serve and the slurmd hooks, the other importers of
// accounting, must not carry. Inside the package, Source (load.go) is the only
// code that talks to PostgreSQL, with queries of its own over the schema of
// sql/migrations/0002_accounting.sql; Build is a pure function of the loaded
// Data (no clock: the caller passes Now), so every figure is tested on data
// built in memory, and the renderings are pure functions of the Report. Every
// table is built once (tables.go) and rendered into HTML, Markdown and CSV, so
// the three carry the same numbers.
//
// The figures and where they come from (each defined for readers in
// Glossary, which all renderings print):
//
//   - GPU-hours split over the UTC days a job ran, as the usage ledger
//     (usage_daily) does; utilization against the configured capacity.
//   - Jain's index (Jain, Chiu and Hawe, DEC-TR-301, 1984) over the accounts'
//     used share divided by their entitled share from the share tree.
//   - Waits and Themis' finish-time fairness ρ (Mahajan et al., NSDI'20, §3),
//     with the same definition policy/sim's Measure uses.
//   - GPU time of cancelled and failed jobs, after the Helios study (Hu et
//     al., SC'21, §3.3).
//   - Prediction quality per partition from the prediction_outcome view:
//     median absolute error and the fraction within ±50%, beside users' time
//     limits.
//   - GPU efficiency from the epilog's NVML records (job_gpu_usage).
//   - What Fairway changed, from the decision and cycle logs, and the
//     counterfactual: the month's jobs replayed by policy/sim under Slurm's
//     plain fair-share and under Fairway's policy, measured with sim.Measure
//     beside what really happened to the same jobs.
package report
