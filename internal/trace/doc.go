// Package trace parses public workload traces into policy.Jobs: the Standard
// Workload Format of the Parallel Workloads Archive (SWF), the Helios
// cluster_log.csv of SenseTime's SC'21 release, and the Philly-MIX CSV of the
// Chronus artifact (SoCC'21). Accounting ingest, the simulator and
// `fairway predict eval` share these parsers.
//
// Input is read from an io.Reader, gzip-compressed or not (detected by the
// gzip magic bytes), one job at a time, so a large trace never has to fit in
// memory twice. The readers open no files: the caller does, and passes the
// file name in Options.Name so that errors read "file:line: reason";
// DetectFile and WriteHeliosFile are the two helpers that take a path.
package trace
