// Package predeval measures run-time predictors on a job history: it replays
// finished jobs through predict.Predictors under one of two protocols and
// scores the predictions. It is pure (no I/O, no logging), so the CLI
// (`fairway predict eval`), tests and benchmarks run the same code.
//
// Protocols:
//
//   - submit-order: jobs are taken in submit order; each is predicted, then
//     observed at once, so a prediction sees every earlier-submitted job even
//     if it was still running. This is the protocol of the published
//     per-user predictors (Tsafrir et al. 2007; Alea) and the one their
//     numbers are reproduced under.
//   - online: a job is predicted at its submit time from the jobs that had
//     finished strictly before then, observed in end order. This is what a
//     live system sees, and is stricter.
package predeval
