package predict

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// HeliosParams configures the helios predictor.
type HeliosParams struct {
	// Matches is how many similar names are used; 0 means the artifact's 2.
	Matches int
	// Cutoff is the least similarity ratio of a similar name; 0 means the
	// artifact's 0.6.
	Cutoff float64
	// ArtifactRounding rounds as the artifact does: an estimate from the
	// user's own jobs (check_history_job) is truncated to whole
	// GPU-seconds, int(mean × gpu_num), and the others are not rounded.
	// false rounds every estimate to the second. The artifact ranks by
	// these GPU-seconds, so a truncation can tie (or untie) two jobs:
	// side-by-side replays need its arithmetic to make the same choices.
	ArtifactRounding bool
}

// heliosPredictor is the history estimator of Hu et al., "Characterization
// and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters",
// SC'21, §5.1 (QSSF), as its artifact implements it (NaiveEstimator,
// agg_method "mean"):
//
//  1. find up to 2 known job names (of any user) whose difflib similarity to
//     the job's name is ≥ 0.6, best first;
//  2. if the best is the name itself: the user's jobs with that name, or,
//     when the user has none, everyone's jobs with that name;
//  3. otherwise: the user's jobs with the matched names, or everyone's;
//  4. with no match: the user's jobs, or, for a new user, all jobs;
//  5. where the user's jobs are used, keep those of the same size if any.
//
// The estimate is the mean run time of the chosen jobs. The artifact
// multiplies by gpu_num to rank by GPU time; here Run is the run time (GPU
// time = Run × GPUs). "Same size" is the same GPU count, and, for jobs with
// no GPUs (CPU traces such as SWF), the same CPU count. Predictions are
// capped at the time limit; with no history at all the prediction is the
// limit (0 without one).
type heliosPredictor struct {
	matches  int
	cutoff   float64
	truncate bool // HeliosParams.ArtifactRounding

	all    meanAcc
	byName map[string]*meanAcc
	users  map[string]*heliosUser

	// names are the distinct known names in first-seen order; close caches
	// the best matches of each known name among the known names, kept
	// current by Observe so that Predict of a known name is a lookup.
	names []heliosName
	close map[string][]closeMatch
}

type heliosName struct {
	s      string
	runes  []rune
	sorted []rune
	m      *nameMatcher // for the name as the word searched for; used by Observe only
}

type heliosUser struct {
	all    meanAcc
	byName map[string]*heliosUserName
}

type heliosUserName struct {
	all    meanAcc
	bySize map[int]*meanAcc
}

// meanAcc accumulates a mean.
type meanAcc struct {
	sum float64
	n   int
}

func (m *meanAcc) add(x float64)    { m.sum += x; m.n++ }
func (m *meanAcc) merge(o *meanAcc) { m.sum += o.sum; m.n += o.n }
func (m *meanAcc) mean() float64    { return m.sum / float64(m.n) }
func (m *meanAcc) empty() bool      { return m == nil || m.n == 0 }

// NewHeliosPredictor returns the "helios" baseline.
func NewHeliosPredictor(p HeliosParams) (policy.Predictor, error) {
	if p.Matches < 0 {
		return nil, fmt.Errorf("helios: matches %d: want >= 0", p.Matches)
	}
	if p.Cutoff < 0 || p.Cutoff > 1 {
		return nil, fmt.Errorf("helios: cutoff %g: want within [0, 1]", p.Cutoff)
	}
	if p.Matches == 0 {
		p.Matches = 2
	}
	if p.Cutoff == 0 {
		p.Cutoff = 0.6
	}
	return &heliosPredictor{
		matches: p.Matches, cutoff: p.Cutoff, truncate: p.ArtifactRounding,
		byName: map[string]*meanAcc{}, users: map[string]*heliosUser{},
		close: map[string][]closeMatch{},
	}, nil
}

func (h *heliosPredictor) Name() string { return "helios" }

// jobSize is the "gpu_num" Helios restricts to: GPUs, or CPUs for a
// CPU-only job.
func jobSize(j *policy.Job) int {
	if j.GPUs > 0 {
		return j.GPUs
	}
	return -j.CPUs // negative keeps CPU counts apart from GPU counts
}

func (h *heliosPredictor) Observe(j *policy.Job) {
	run := j.RunTime().Seconds()
	h.all.add(run)
	if h.byName[j.Name] == nil {
		h.addName(j.Name)
		h.byName[j.Name] = &meanAcc{}
	}
	h.byName[j.Name].add(run)
	u := h.users[j.User]
	if u == nil {
		u = &heliosUser{byName: map[string]*heliosUserName{}}
		h.users[j.User] = u
	}
	u.all.add(run)
	un := u.byName[j.Name]
	if un == nil {
		un = &heliosUserName{bySize: map[int]*meanAcc{}}
		u.byName[j.Name] = un
	}
	un.all.add(run)
	s := un.bySize[jobSize(j)]
	if s == nil {
		s = &meanAcc{}
		un.bySize[jobSize(j)] = s
	}
	s.add(run)
}

// addName adds a new distinct name, updating every cached match list and
// computing its own. The cheap bounds are symmetric, so one pass serves both.
func (h *heliosPredictor) addName(name string) {
	r := []rune(name)
	n := heliosName{s: name, runes: r, sorted: sortedRunes(r), m: newNameMatcher(name)}
	var own []closeMatch
	for _, other := range h.names {
		c, ok := h.score(other.sorted, n)
		if !ok {
			continue
		}
		if c.score = other.m.ratio(n.runes); c.score >= h.cutoff {
			h.close[other.s] = offer(h.close[other.s], h.matches, c)
		}
		if s := n.m.ratio(other.runes); s >= h.cutoff {
			own = offer(own, h.matches, closeMatch{score: s, name: other.s})
		}
	}
	h.names = append(h.names, n)
	// The name matches itself with ratio 1.
	h.close[name] = offer(own, h.matches, closeMatch{score: 1, name: name})
}

// score applies difflib's cheap upper bounds (real_quick_ratio, quick_ratio)
// to candidate n for word; ok=false when n cannot reach the cutoff.
// word's runes must be sorted.
func (h *heliosPredictor) score(word []rune, n heliosName) (closeMatch, bool) {
	la, lb := len(n.runes), len(word)
	if la+lb > 0 && 2*float64(min(la, lb))/float64(la+lb) < h.cutoff {
		return closeMatch{}, false
	}
	if quickRatio(n.sorted, word) < h.cutoff {
		return closeMatch{}, false
	}
	return closeMatch{name: n.s}, true
}

// closeMatches is difflib.get_close_matches(word, names, n, cutoff).
func (h *heliosPredictor) closeMatches(word string) []closeMatch {
	w := sortedRunes([]rune(word))
	var m *nameMatcher
	var top []closeMatch
	for _, n := range h.names {
		c, ok := h.score(w, n)
		if !ok {
			continue
		}
		if m == nil {
			m = newNameMatcher(word)
		}
		c.score = m.ratio(n.runes)
		if c.score >= h.cutoff {
			top = offer(top, h.matches, c)
		}
	}
	return top
}

func (h *heliosPredictor) Predict(j *policy.Job) policy.Prediction {
	if h.all.n == 0 {
		if j.TimeLimit > 0 {
			return policy.Prediction{Run: j.TimeLimit, Source: "limit"}
		}
		return policy.Prediction{Source: "none"}
	}
	matches, ok := h.close[j.Name]
	if !ok {
		matches = h.closeMatches(j.Name)
	}
	u := h.users[j.User]
	var acc meanAcc
	var src string
	switch {
	case len(matches) > 0:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.name
		}
		if matches[0].name == j.Name {
			names, src = names[:1], "user-name-exact"
		} else {
			src = "user-name-similar"
		}
		acc = h.userNames(u, names, jobSize(j))
		if acc.empty() {
			for _, n := range names {
				acc.merge(h.byName[n])
			}
			src = "name-" + src[len("user-name-"):]
		}
	case u != nil:
		acc, src = u.all, "user-mean"
	default:
		acc, src = h.all, "global-mean"
	}
	run := time.Duration(acc.mean() * float64(time.Second)).Round(time.Second)
	if h.truncate {
		run = h.artifactRun(acc.mean(), j, src)
	}
	return policy.Prediction{Run: clampRun(j, run), Source: src}
}

// userNames is the artifact's check_history_job: the user's jobs with one of
// names, narrowed to the same size when there are such.
func (h *heliosPredictor) userNames(u *heliosUser, names []string, size int) meanAcc {
	var all, same meanAcc
	if u == nil {
		return all
	}
	for _, n := range names {
		un := u.byName[n]
		if un == nil {
			continue
		}
		all.merge(&un.all)
		if s := un.bySize[size]; s != nil {
			same.merge(s)
		}
	}
	if same.n > 0 {
		return same
	}
	return all
}

// artifactRun is the run time whose GPU time is the artifact's estimate
// from mean run time mean: truncated to whole GPU-seconds when it comes
// from the user's own jobs (src user-name-*), as is otherwise.
func (h *heliosPredictor) artifactRun(mean float64, j *policy.Job, src string) time.Duration {
	if g := j.GPUs; g > 0 && strings.HasPrefix(src, "user-name-") {
		return time.Duration(math.Round(math.Floor(mean*float64(g)) * float64(time.Second) / float64(g)))
	}
	return time.Duration(mean * float64(time.Second))
}
