package sim

import "github.com/fairway-hpc/fairway/policy"

// userCount keeps N, the number of users with a job pending or running,
// as themis counts it at every cycle (its Snapshot's pending users and
// the running ones): each user's count of such jobs, changed as a job is
// queued (enqueue) and taken off the cluster (stop), so a cycle reads N
// rather than passing over the queue and the running jobs.
type userCount struct {
	of   []int32 // by job index: its user's number
	jobs []int32 // by user number: the user's jobs pending or running
	n    int     // users of a positive count
}

// init numbers the users of jobs, in the simulator's job order.
func (c *userCount) init(in []policy.Job, jobs []sjob) {
	num := map[string]int32{}
	c.of = make([]int32, len(jobs))
	for k := range jobs {
		u := in[jobs[k].src].User
		x, ok := num[u]
		if !ok {
			x = int32(len(num))
			num[u] = x
		}
		c.of[k] = x
	}
	c.jobs, c.n = make([]int32, len(num)), 0
}

// add counts job k as pending or running.
func (c *userCount) add(k int32) {
	u := c.of[k]
	if c.jobs[u] == 0 {
		c.n++
	}
	c.jobs[u]++
}

// remove counts job k no longer.
func (c *userCount) remove(k int32) {
	u := c.of[k]
	c.jobs[u]--
	if c.jobs[u] == 0 {
		c.n--
	}
}
