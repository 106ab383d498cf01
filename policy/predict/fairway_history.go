package predict

import "math"

// This file keeps the fairway predictor's per-user history and the
// summaries of it that the features need. A feature is computed from the
// user's kept jobs that pass a filter (submitted no later than the predicted
// job and, when reconstructing the past at Observe, ended before it): the
// job-independent aggregates over the fwRecent newest of them (fwStats), and
// for each of four kinds of key (limit, name, size, identical job) the
// newest jobs that match the predicted one (fwMatch).
//
// Predict sees jobs submitted after everything observed, so no kept job is
// filtered out. The summaries for that case are updated as each job is
// added (one pass over the fwRecent newest for the aggregates, a few map
// updates for the keys), and Predict reads them with a few lookups instead
// of scanning up to History jobs. When the filter does drop a kept job,
// features scans the ring instead (scanStats, scanMatches). Both paths do
// the same float operations in the same order, so they agree to the bit
// (TestFairway_SummariesMatchScan).

// fwItem is one finished job in a user's history.
type fwItem struct {
	submit, end int64 // Unix seconds
	run, lrun   float32
	limit       float32 // seconds, 0 when none
	ratio       float32 // run/limit, 0 when no limit
	name        int32   // interned job name
	cpus, gpus  int32
	failed      bool // FAILED, CANCELLED, NODE_FAIL, OOM...
	// match are the indexes of the item's entries in fwMatches.slab, one
	// per kind, while it is kept.
	match [fwKinds]int32
}

// fwUser is one user's history and its summary. The fields Predict reads
// come first, so that they share as few cache lines as possible.
type fwUser struct {
	id    int32 // users in the order first observed, for match keys
	total int   // jobs ever added
	// logTotal is log1pInt(total), the ftUserJobs feature.
	logTotal float32
	// errs is the running mean absolute error (seconds) of each expert on
	// the user's jobs, over scored jobs.
	errs   [fwExperts]float32
	scored int

	// The summary of all kept items (their matches are in fwMatches). It
	// holds for a job submitted at or after maxSubmit and, with an end
	// filter, after maxEnd; both are over every item ever added, so they
	// may be above the kept items' maxima, which only sends a job to the
	// scan.
	maxSubmit, maxEnd int64
	stats             fwStats

	items []fwItem // ring, capacity History
	next  int
}

// fwStats are the job-independent aggregates of the fwRecent newest items
// that pass the filter. The float32 fields hold feature values, -1 when
// missing, as features stores them.
type fwStats struct {
	n int // items aggregated; none of the fields below is set when 0
	last1, lastFailed, last2, lastMean2,
	median5, mean, std, decayed, lastRatio, hitLimit, failed float32
	// ratioMax and ratioMed are the largest and the median run/limit of the
	// newest five items with a limit, when nRatio > 0.
	nRatio             int
	ratioMax, ratioMed float32
	lastSub, lastEnd   int64 // newest submit and end, -1 when none is >= 0
}

// The kinds of match (indexes of [fwKinds]fwMatch): which of the predicted
// job's attributes a kept job of its user must share.
const (
	fwByLimit = iota // the time limit
	fwByName         // the name
	fwBySize         // CPUs and GPUs
	fwByJob          // all of them: the identical job
	fwKinds
)

// fwKeys are a user's keys of every kind for one job. The limit is in
// fwLimitBits form.
type fwKeys struct {
	limit fwLimitKey
	name  fwNameKey
	size  fwSizeKey
	job   fwJobKey
}

type (
	fwLimitKey struct{ user, limit int32 }
	fwNameKey  struct{ user, name int32 }
	fwSizeKey  struct{ user, cpus, gpus int32 }
	fwJobKey   struct{ user, name, cpus, gpus, limit int32 }
)

func fwKeysOf(user, name, cpus, gpus int32, limit float32) fwKeys {
	l := fwLimitBits(limit)
	return fwKeys{
		limit: fwLimitKey{user, l}, name: fwNameKey{user, name},
		size: fwSizeKey{user, cpus, gpus}, job: fwJobKey{user, name, cpus, gpus, l},
	}
}

// fwLimitBits is a limit as part of a map key: equal for equal limits, -0 as
// +0 (a limit is never NaN).
func fwLimitBits(l float32) int32 {
	if l == 0 {
		return 0
	}
	return int32(math.Float32bits(l))
}

// fwMatch describes a user's kept items that pass the filter and match a
// key.
type fwMatch struct {
	last   [5]float32 // log runs of the newest five, newest first: last[:min(kept, 5)]
	med    float32    // their median, kept up to date by setMedian
	kept   int32      // how many match
	recent int32      // how many of them are among the fwRecent newest that pass
}

// setMedian recomputes med after a change of last or kept.
func (m *fwMatch) setMedian() {
	if m.kept > 0 {
		m.med = median5(m.last[:min(m.kept, 5)])
	}
}

// appendOlder records a match older than every recorded one.
func (m *fwMatch) appendOlder(lrun float32, recent bool) {
	if m.kept < 5 {
		m.last[m.kept] = lrun
	}
	m.kept++
	if recent {
		m.recent++
	}
}

// fwMatches are the matches of every user's kept items, with no filter:
// one map per kind, keyed by user and key, each entry present while kept >
// 0. Maps shared by all users, with small fixed-size keys, keep the cold
// memory a lookup touches to the probed group; with a map per user, its
// header and directory would be cold too. The maps give the index of the
// entry's fwMatch in slab, and each kept item holds the indexes of its own
// entries (fwItem.match), so that taking an item out of its matches, twice
// in its life, needs no lookup.
type fwMatches struct {
	byLimit map[fwLimitKey]int32
	byName  map[fwNameKey]int32
	bySize  map[fwSizeKey]int32
	byJob   map[fwJobKey]int32
	slab    []fwMatch
	free    []int32 // indexes of slab no key holds
	// links are, for an entry of byJob, the indexes of the entries of
	// every kind of the same keys (its own included): while a kept job
	// has the identical key it has the others, whose entries stay.
	links [][fwKinds]int32
}

func newFwMatches() fwMatches {
	return fwMatches{
		byLimit: map[fwLimitKey]int32{}, byName: map[fwNameKey]int32{},
		bySize: map[fwSizeKey]int32{}, byJob: map[fwJobKey]int32{},
	}
}

// lookup returns the matches of every kind of keys.
func (ms *fwMatches) lookup(k *fwKeys) [fwKinds]fwMatch {
	var m [fwKinds]fwMatch
	if i, ok := ms.byJob[k.job]; ok {
		// A kept job with the identical key has the other keys too.
		l := &ms.links[i]
		m[fwByLimit], m[fwByName], m[fwBySize], m[fwByJob] = ms.slab[l[fwByLimit]], ms.slab[l[fwByName]], ms.slab[l[fwBySize]], ms.slab[i]
		return m
	}
	if i, ok := ms.byLimit[k.limit]; ok {
		m[fwByLimit] = ms.slab[i]
	}
	if i, ok := ms.byName[k.name]; ok {
		m[fwByName] = ms.slab[i]
	}
	if i, ok := ms.bySize[k.size]; ok {
		m[fwBySize] = ms.slab[i]
	}
	return m
}

// push records a match on every kind of keys, newer than the recorded ones,
// and returns the indexes of their entries.
func (ms *fwMatches) push(k *fwKeys, lrun float32) [fwKinds]int32 {
	var idx [fwKinds]int32
	if i, ok := ms.byJob[k.job]; ok {
		idx = ms.links[i]
	} else {
		idx = [fwKinds]int32{
			fwByLimit: entry(ms, ms.byLimit, k.limit), fwByName: entry(ms, ms.byName, k.name),
			fwBySize: entry(ms, ms.bySize, k.size), fwByJob: entry(ms, ms.byJob, k.job),
		}
		ms.links[idx[fwByJob]] = idx
	}
	for _, i := range idx {
		m := &ms.slab[i]
		copy(m.last[1:], m.last[:4])
		m.last[0] = lrun
		m.kept++
		m.recent++
		m.setMedian()
	}
	return idx
}

// entry is the index of k's entry, made (empty) when k has none.
func entry[K comparable](ms *fwMatches, keys map[K]int32, k K) int32 {
	if i, ok := keys[k]; ok {
		return i
	}
	var i int32
	if n := len(ms.free); n > 0 {
		i, ms.free = ms.free[n-1], ms.free[:n-1]
	} else {
		i = int32(len(ms.slab))
		ms.slab = append(ms.slab, fwMatch{})
		ms.links = append(ms.links, [fwKinds]int32{})
	}
	keys[k] = i
	return i
}

// drop takes a match (a kept item of the user, with keys k and entries idx)
// out of the kept and/or recent counts of every kind.
func (ms *fwMatches) drop(k *fwKeys, idx *[fwKinds]int32, kept, recent bool) {
	for kind, i := range idx {
		m := &ms.slab[i]
		if recent {
			m.recent--
		}
		if !kept {
			continue
		}
		m.kept--
		if m.kept >= 5 {
			continue // the newest five, and so their median, stay
		}
		m.setMedian()
		if m.kept > 0 {
			continue
		}
		*m = fwMatch{}
		ms.free = append(ms.free, i)
		switch kind {
		case fwByLimit:
			delete(ms.byLimit, k.limit)
		case fwByName:
			delete(ms.byName, k.name)
		case fwBySize:
			delete(ms.bySize, k.size)
		case fwByJob:
			delete(ms.byJob, k.job)
		}
	}
}

// keys returns the keys of u's item it.
func (u *fwUser) keys(it *fwItem) fwKeys { return fwKeysOf(u.id, it.name, it.cpus, it.gpus, it.limit) }

// older is the index in u.items of the item just older than the one at i;
// older(u.next) is the newest item's. Walking the ring so spares at's two
// divisions per item.
func (u *fwUser) older(i int) int {
	if i == 0 {
		return len(u.items) - 1
	}
	return i - 1
}

// at returns the k-th most recent item (0 = newest).
func (u *fwUser) at(k int) *fwItem {
	n := len(u.items)
	return &u.items[((u.next-1-k)%n+n)%n]
}

// add appends it as the newest item, dropping the oldest beyond capacity,
// and updates the summaries: u's and u's matches in ms.
func (u *fwUser) add(it fwItem, capacity int, ms *fwMatches) {
	if len(u.items) >= fwRecent {
		// The fwRecent-th newest leaves the recent window.
		old := u.at(fwRecent - 1)
		k := u.keys(old)
		ms.drop(&k, &old.match, false, true)
	}
	if len(u.items) == capacity {
		// The oldest leaves the ring; it was in the recent window only if
		// the ring is shorter than the window.
		old := u.at(capacity - 1)
		k := u.keys(old)
		ms.drop(&k, &old.match, true, capacity < fwRecent)
	}
	k := u.keys(&it)
	it.match = ms.push(&k, it.lrun)
	if len(u.items) < capacity {
		u.items = append(u.items, it)
		u.next = len(u.items) % capacity
	} else {
		u.items[u.next] = it
		u.next = (u.next + 1) % capacity
	}
	if u.total == 0 {
		u.maxSubmit, u.maxEnd = it.submit, it.end
	}
	u.maxSubmit = max(u.maxSubmit, it.submit)
	u.maxEnd = max(u.maxEnd, it.end)
	u.total++
	u.logTotal = log1pInt(u.total)
	u.stats = u.scanStats(math.MaxInt64, math.MaxInt64)
}

// summarized reports whether the summaries hold for a job submitted at sub
// whose history is restricted to jobs ended before endBefore.
func (u *fwUser) summarized(sub, endBefore int64) bool {
	return u.maxSubmit <= sub && u.maxEnd < endBefore
}

// passes reports whether it was known when a job submitted at sub was: it
// was submitted no later and ended before endBefore.
func (it *fwItem) passes(sub, endBefore int64) bool {
	return it.submit <= sub && it.end < endBefore
}

// scanStats aggregates the fwRecent newest items that pass the filter.
func (u *fwUser) scanStats(sub, endBefore int64) fwStats {
	s := fwStats{
		last1: -1, lastFailed: -1, last2: -1, lastMean2: -1, median5: -1, mean: -1, std: -1,
		decayed: -1, lastRatio: -1, hitLimit: -1, failed: -1, lastSub: -1, lastEnd: -1,
	}
	var (
		nLimited, hit, failed int
		sum, sum2, dsum, dw   float64
		w                     = 1.0
		last5, ratio5         [5]float32
		prevRun               float32
	)
	i := u.older(u.next) // the newest
	for k := 0; k < len(u.items) && s.n < fwRecent; k++ {
		it := &u.items[i]
		i = u.older(i)
		if !it.passes(sub, endBefore) {
			continue
		}
		if s.n < 5 {
			last5[s.n] = it.lrun
		}
		switch s.n {
		case 0:
			s.last1 = it.lrun
			s.lastFailed = 0
			if it.failed {
				s.lastFailed = 1
			}
		case 1:
			s.last2 = it.lrun
			s.lastMean2 = log1p32((it.run + prevRun) / 2)
		}
		prevRun = it.run
		s.n++
		sum += float64(it.lrun)
		sum2 += float64(it.lrun) * float64(it.lrun)
		dsum += w * float64(it.lrun)
		dw += w
		w *= 0.7
		s.lastSub = max(s.lastSub, it.submit)
		s.lastEnd = max(s.lastEnd, it.end)
		if it.failed {
			failed++
		}
		if it.limit > 0 {
			nLimited++
			r := it.ratio
			if r >= 0.98 {
				hit++
			}
			if s.nRatio < 5 {
				ratio5[s.nRatio] = r
			}
			if s.nRatio == 0 {
				s.lastRatio = r
			}
			s.nRatio++
		}
	}
	if s.n == 0 {
		return s
	}
	s.median5 = median5(last5[:min(s.n, 5)])
	mean := sum / float64(s.n)
	s.mean = float32(mean)
	if s.n > 1 {
		s.std = float32(math.Sqrt(max(sum2/float64(s.n)-mean*mean, 0)))
	}
	s.decayed = float32(dsum / dw)
	if s.nRatio > 0 {
		r := ratio5[:min(s.nRatio, 5)]
		s.ratioMax = r[0]
		for _, v := range r {
			s.ratioMax = max(s.ratioMax, v)
		}
		s.ratioMed = median5(r)
	}
	if nLimited > 0 {
		s.hitLimit = float32(hit) / float32(nLimited)
	}
	s.failed = float32(failed) / float32(s.n)
	return s
}

// scanMatches finds, for each kind of keys, the kept items that pass the
// filter and match it; keys are u's.
func (u *fwUser) scanMatches(keys *fwKeys, sub, endBefore int64) [fwKinds]fwMatch {
	var m [fwKinds]fwMatch
	n := 0               // items that passed so far
	i := u.older(u.next) // the newest
	for range u.items {
		it := &u.items[i]
		i = u.older(i)
		if !it.passes(sub, endBefore) {
			continue
		}
		recent := n < fwRecent
		n++
		// The item's keys (u.keys) are the user's, as keys are: only
		// the rest of each key is compared.
		limit := fwLimitBits(it.limit) == keys.limit.limit
		name := it.name == keys.name.name
		size := it.cpus == keys.size.cpus && it.gpus == keys.size.gpus
		if limit {
			m[fwByLimit].appendOlder(it.lrun, recent)
		}
		if name {
			m[fwByName].appendOlder(it.lrun, recent)
		}
		if size {
			m[fwBySize].appendOlder(it.lrun, recent)
		}
		if limit && name && size {
			m[fwByJob].appendOlder(it.lrun, recent)
		}
	}
	for kind := range m {
		m[kind].setMedian()
	}
	return m
}
