package policy

import (
	"math"
	"time"
)

// Assoc is a Slurm association: one user charging one account. Fair-share
// usage, VTC counters and shares are kept per association, as Slurm does,
// so a user in two accounts is two associations.
type Assoc struct {
	Account string
	User    string
}

// AssocOf returns the association a job charges.
func AssocOf(j *Job) Assoc { return Assoc{Account: j.Account, User: j.User} }

// Shares is the share tree: raw shares (sacctmgr's Fairshare=N) of the
// accounts under root and of the users within each account. Two levels
// only; an adapter flattens sub-accounts onto their top-level account.
//
// An account or association not listed has one share, Slurm's default for
// a new association. A listed share of 0 is a scavenger: its jobs run only
// after everyone else's (fairshare gives them factor 0, vtc and fair-qssf
// rank them last).
type Shares struct {
	Accounts map[string]float64
	Users    map[Assoc]float64
}

// Account returns the raw shares of an account.
func (s *Shares) Account(name string) float64 {
	if s == nil {
		return 1
	}
	if v, ok := s.Accounts[name]; ok {
		return v
	}
	return 1
}

// User returns the raw shares of an association within its account.
func (s *Shares) User(a Assoc) float64 {
	if s == nil {
		return 1
	}
	if v, ok := s.Users[a]; ok {
		return v
	}
	return 1
}

// whole reports whether every listed share is a whole number below 2^32
// (sacctmgr's Fairshare is a 32-bit count), so that sums of shares are
// exact whatever the order of addition. A nil tree is whole.
func (s *Shares) whole() bool {
	if s == nil {
		return true
	}
	ok := func(v float64) bool { return v == math.Trunc(v) && math.Abs(v) < 1<<32 }
	for _, v := range s.Accounts {
		if !ok(v) {
			return false
		}
	}
	for _, v := range s.Users {
		if !ok(v) {
			return false
		}
	}
	return true
}

// Service says how much service a job receives per second of running, in
// GPU-equivalents: the unit of fair-share usage, VTC counters, Tiresias
// attained service and every "predicted service". The zero value counts
// whole GPUs, a shard-only job as one GPU, and CPU-only jobs as nothing.
type Service struct {
	// TypeWeight weighs a GPU by its type (Job.GPUType), e.g. {"h100": 2,
	// "a100": 1}. Types not listed, and untyped GPUs, weigh 1.
	TypeWeight map[string]float64
	// ShardsPerGPU converts a shard-only job into a fraction of a GPU (see
	// Job.GPUCount). 0 counts such a job as one GPU.
	ShardsPerGPU int
	// CPUsPerGPU, when positive, counts a job with no GPU and no shard as
	// CPUs/CPUsPerGPU GPU-equivalents. Set it to 1 to replay CPU traces
	// (SWF), where every processor is one unit of service.
	CPUsPerGPU float64
	// BillCPUs charges every job its CPUs, whatever GPUs it holds:
	// Slurm's fair-share usage when TRESBillingWeights is unset (billing
	// is the CPU count). The other fields are then ignored.
	BillCPUs bool
}

// Rate is the job's service per second of running, in GPU-equivalents.
func (s Service) Rate(j *Job) float64 {
	if s.BillCPUs {
		return float64(j.CPUs)
	}
	if j.GPUs == 0 && j.Shards == 0 {
		if s.CPUsPerGPU > 0 {
			return float64(j.CPUs) / s.CPUsPerGPU
		}
		return 0
	}
	r := j.GPUCount(s.ShardsPerGPU)
	if j.GPUType != "" && len(s.TypeWeight) > 0 {
		if w, ok := s.TypeWeight[j.GPUType]; ok {
			r *= w
		}
	}
	return r
}

// Units is the service a job receives by running for d.
func (s Service) Units(j *Job, d time.Duration) float64 {
	return s.Rate(j) * d.Seconds()
}
