package policy

// The generators the external benchmarks (package policy_test) share with
// this package's own.
var (
	RandomSnapshot = rkRandomSnapshot
	CPUTime        = rkCPUTime
)
