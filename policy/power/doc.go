// Package power decides how many nodes a cluster keeps powered from a
// forecast of node demand, after the Cluster Energy Saving service of
// Helios (Hu et al., "Characterization and Prediction of Deep Learning
// Workloads in Large-Scale GPU Datacenters", SC'21, §5.2), and replays
// that rule against Slurm's own idle-time rule (slurm.conf SuspendTime) on a
// node-demand sequence.
//
// The pieces, each pure (the package opens no files and keeps no clock):
//
//   - ReadSequence parses a `time,active,total` CSV (gzip or plain), or
//     the Helios artifact's nodes-by-GPUs-in-use columns, from an
//     io.Reader; Resample turns it into fixed steps holding each step's
//     maximum, the artifact's 10-minute maxima.
//   - Features and Forecaster: the artifact's demand features (calendar,
//     rolling statistics shifted by a day, the value three hours earlier and
//     a softened one) fitted with the project's GBT learner, plus the
//     seasonal-naive baselines it has to beat.
//   - Predictive and Envelope: power rules deciding every step from a
//     forecast; ReplayRule replays one against the demand of every minute.
//     ReplayIdleTime replays Slurm's SuspendTime on the same demand, each
//     node on its own idle clock. Both move nodes through the same fleet
//     (the same resume delay, the same lack), so that their node-hours off
//     and their lack compare like for like. IdleTime is SuspendTime as a
//     Rule on step maxima, for the simulator.
//   - Hybrid and ReplayHybrid: Slurm's per-node idle clock that powers
//     no node down below the forecast, and may resume ahead of a forecast
//     rise, deciding every minute from the latest 10-minute forecast.
//   - Setting and Envelope: the predictive family around the artifact's
//     rule (its conditions switchable, or a forecast envelope), one
//     setting chosen on the validation days.
//   - Evaluate: the whole offline protocol of `fairway power eval`, one
//     table and a dominance verdict.
package power
