// Package prolog is the code behind `fairway prolog` and `fairway epilog`,
// the slurmd hooks on GPU nodes: through NVML they enforce the GPU sharing
// and exclusivity Fairway's policies decide, check GPU health before a job
// starts, and record per-job GPU usage after it ends. Hooks must be fast and
// fail-safe: only a real hardware fault may fail a prolog (and drain a node).
//
//	prolog (slurmd, PrologFlags=Alloc)          epilog
//	  Job from env ── note start in state dir     Job from env + the prolog's note
//	  ┌ NVML, within the time budget ┐           ┌ NVML, half the budget at most ┐
//	  │ health: ECC, remap, retired, │           │ accounting stats, energy,     │
//	  │ lost GPU, XIDs (kernel log)  │           │ mode back to the node default,│
//	  │ whole GPU: EXCLUSIVE_PROCESS,│           │ last sharer stops MPS         │
//	  │  accounting on, strays       │           └───────────────┬───────────────┘
//	  │ shards: DEFAULT, MPS daemon, │             one Usage per GPU (always, even
//	  │  job's MPS limits file       │             without NVML: GPUs from env)
//	  └──────────────────────────────┘                           │
//	  fault ─► drain reason, exit 1               spool: tmp file, fsync, rename
//	  anything else ─► log, exit 0                                │
//	                                              UsageStore.PutUsage(new + backlog)
//	                                              ok ─► remove from spool
//	                                              `fairway spool flush` (timer)
//
// Library/Device is the small interface over NVML (go-nvml behind NewNVML);
// tests drive it with go-nvml's mock DGX H100 (package nvmltest). NVML calls
// are cgo and cannot be cancelled, so each hook runs them in a goroutine it
// abandons when the budget ends; the process then exits.
//
// Which GPUs. slurmd puts the job's device numbers (the N of /dev/nvidiaN,
// which is the NVML minor number, not the NVML index) in SLURM_JOB_GPUS and
// CUDA_VISIBLE_DEVICES. Slurm 22.05 gives a shard job the same variables as
// a one-GPU job and no shard count, so on nodes with shards (Config
// ShardsPerGPU > 0) the prolog asks squeue for the one job's tres-per-node,
// tres-alloc and node count (ShardLookup, about 30 ms on the lab, within
// half the remaining budget), never for user text (comment, mail user,
// paths). When it cannot tell, it does not fail open: alone on the GPU the
// job gets it as a whole GPU would (strays hunted, EXCLUSIVE_PROCESS) until
// a known sharer's prolog returns it to DEFAULT; beside other jobs it
// holds shards too, and the GPU stays shared.
//
// Shards and MPS. The first shard job on a GPU switches it to compute mode
// DEFAULT and starts an MPS control daemon for that GPU alone (pipe
// directory MPSDir/N/pipe); the last one's epilog stops it and returns the
// GPU to the node's default mode. Each shard job gets limits in proportion
// to its shards: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = ceil(100*shards/per
// GPU) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = memory*shards/per GPU. A
// prolog cannot change a job's environment, so it writes them, with
// CUDA_MPS_PIPE_DIRECTORY and CUDA_VISIBLE_DEVICES=<GPU UUID> (MPS renumbers
// devices, UUIDs stay valid), to StateDir/jobs/ID.mps; slurm.conf's
// TaskProlog (contrib/slurm/fairway-task-prolog) prints that file, and
// slurmstepd exports each "export NAME=value" line into every task.
//
// Strays. A process on a GPU the prolog is handing out is reported, and
// with KillStray killed, only when it is provably nobody's live work: it is
// pinned with a pidfd before it is judged (so the number cannot be reused
// under the kill; only pinned processes NVML still lists afterwards are
// judged), and pid 1, root's processes, processes of a job that holds
// this GPU (its root-owned task/cgroup directory or root slurmstepd
// ancestor names the job) and the MPS server of root's control daemon
// (root's binary, also once deleted by an upgrade) are left alone. GPU
// state is saved right after each change, so a prolog abandoned at its
// budget leaves its sharers recorded; a job whose shard lookup failed is
// recorded as Unknown on its GPUs for the same reason.
//
// Usage records. One per job, node and GPU, keyed by cluster, job, node,
// GPU minor and the instant the epilog closed it (Usage.Key), which is also
// the spool file's name and the database's primary key: a record shipped
// twice (a crash after the commit, before the spool file was removed) is
// stored once. A whole-GPU job's record carries NVML's per-process
// accounting for the processes that started after its prolog and the
// device energy between prolog and epilog. On a shared GPU several jobs'
// processes cannot be told apart (under MPS the accounting charges all
// utilisation to the MPS server, and the device energy is every sharer's),
// so a shard job's record carries its shards and times but no utilisation
// or energy. The prolog does not touch
// the database (it would delay every job start when the database is slow);
// every epilog ships the spool's backlog with its own records.
package prolog
