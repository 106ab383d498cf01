// Package prolog is the code behind `fairway prolog` and `fairway epilog`,
// the slurmd hooks on GPU nodes: through NVML they enforce the GPU sharing
// and exclusivity Fairway's policies decide, check GPU health before a job
// starts, and record per-job GPU usage after it ends. Hooks must be fast and
// fail-safe: only a real hardware fault may fail a prolog (and drain a node).
//
// Not built yet: this package holds no code until the prolog issue lands.
package prolog
