package predict

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/policy"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fin is a finished job of user u that ran run seconds under limit seconds.
func fin(id int64, u, name string, gpus int, limit, run int) policy.Job {
	j := policy.Job{ID: id, User: u, Name: name, GPUs: gpus, ArrayTask: -1, State: policy.StateCompleted,
		TimeLimit: time.Duration(limit) * time.Second}
	j.Submit = t0.Add(time.Duration(id) * time.Minute)
	j.Start = j.Submit
	j.End = j.Start.Add(time.Duration(run) * time.Second)
	return j
}

// replay observes history in order, then predicts next.
func replay(t *testing.T, p policy.Predictor, history []policy.Job, next policy.Job) policy.Prediction {
	t.Helper()
	for i := range history {
		p.Observe(&history[i])
	}
	next.Start, next.End, next.State = time.Time{}, time.Time{}, policy.StatePending
	return p.Predict(&next)
}

func TestBaselines_Predict(t *testing.T) {
	tests := []struct {
		name    string
		pred    string
		history []policy.Job
		next    policy.Job
		want    policy.Prediction
	}{
		{"limit", "limit", nil, fin(1, "a", "", 0, 3600, 0), policy.Prediction{Run: time.Hour, Source: "limit"}},
		{"limit without one", "limit", nil, fin(1, "a", "", 0, 0, 0), policy.Prediction{Source: "none"}},
		{"tsafrir first job is its limit", "tsafrir", []policy.Job{fin(1, "b", "", 0, 100, 50)}, fin(2, "a", "", 0, 900, 0),
			policy.Prediction{Run: 900 * time.Second, Source: "limit"}},
		{"tsafrir one job is not enough", "tsafrir", []policy.Job{fin(1, "a", "", 0, 100, 50)}, fin(2, "a", "", 0, 900, 0),
			policy.Prediction{Run: 900 * time.Second, Source: "limit"}},
		{"tsafrir mean of last two", "tsafrir", []policy.Job{fin(1, "a", "", 0, 1000, 999), fin(2, "a", "", 0, 1000, 100), fin(3, "a", "", 0, 1000, 300)},
			fin(4, "a", "", 0, 900, 0), policy.Prediction{Run: 200 * time.Second, Source: "user-last-mean"}},
		{"tsafrir capped at the limit", "tsafrir", []policy.Job{fin(1, "a", "", 0, 1000, 500), fin(2, "a", "", 0, 1000, 700)},
			fin(3, "a", "", 0, 60, 0), policy.Prediction{Run: 60 * time.Second, Source: "user-last-mean"}},
		{"tsafrir no limits: global mean", "tsafrir", []policy.Job{fin(1, "b", "", 0, 0, 100), fin(2, "b", "", 0, 0, 300)},
			fin(3, "a", "", 0, 0, 0), policy.Prediction{Run: 200 * time.Second, Source: "global-mean"}},
		{"alea first job is its request", "alea", nil, fin(1, "a", "", 0, 500, 0), policy.Prediction{Run: 500 * time.Second, Source: "limit"}},
		{"alea max ratio of last five", "alea", []policy.Job{
			fin(1, "a", "", 0, 100, 90), // 0.9, pushed out by the five after it
			fin(2, "a", "", 0, 100, 10), fin(3, "a", "", 0, 100, 50), fin(4, "a", "", 0, 200, 20),
			fin(5, "a", "", 0, 100, 30), fin(6, "a", "", 0, 100, 40),
		}, fin(7, "a", "", 0, 1000, 0), policy.Prediction{Run: 500 * time.Second, Source: "user-max-ratio"}},
		{"alea as published may exceed the request", "alea", []policy.Job{fin(1, "a", "", 0, 100, 150)},
			fin(2, "a", "", 0, 100, 0), policy.Prediction{Run: 150 * time.Second, Source: "user-max-ratio"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.pred, Params{})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, tt.history, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelios_Chain(t *testing.T) {
	history := []policy.Job{
		fin(1, "a", "train_bert_large", 8, 0, 1000),
		fin(2, "a", "train_bert_large", 8, 0, 2000),
		fin(3, "a", "train_bert_large", 4, 0, 600),
		fin(4, "b", "resnet50", 1, 0, 90),
		fin(5, "b", "resnet50", 1, 0, 110),
		fin(6, "c", "eval_model", 1, 0, 40),
	}
	tests := []struct {
		name string
		next policy.Job
		want policy.Prediction
	}{
		{"exact name, same GPU count", fin(10, "a", "train_bert_large", 8, 0, 0), policy.Prediction{Run: 1500 * time.Second, Source: "user-name-exact"}},
		{"exact name, no job of that GPU count", fin(10, "a", "train_bert_large", 2, 0, 0), policy.Prediction{Run: 1200 * time.Second, Source: "user-name-exact"}},
		{"exact name of another user", fin(10, "d", "resnet50", 1, 0, 0), policy.Prediction{Run: 100 * time.Second, Source: "name-exact"}},
		{"similar name of the user", fin(10, "a", "train_bert_base", 8, 0, 0), policy.Prediction{Run: 1500 * time.Second, Source: "user-name-similar"}},
		{"similar name of others", fin(10, "c", "resnet101", 1, 0, 0), policy.Prediction{Run: 100 * time.Second, Source: "name-similar"}},
		{"no similar name: user mean", fin(10, "b", "zzz", 1, 0, 0), policy.Prediction{Run: 100 * time.Second, Source: "user-mean"}},
		{"new user, no similar name: global mean", fin(10, "e", "zzz", 1, 0, 0), policy.Prediction{Run: 640 * time.Second, Source: "global-mean"}},
		{"capped at the limit", fin(10, "a", "train_bert_large", 8, 60, 0), policy.Prediction{Run: 60 * time.Second, Source: "user-name-exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewHeliosPredictor(HeliosParams{})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, history, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHelios_ArtifactRounding checks the artifact's arithmetic: an estimate
// from the user's own jobs is int(mean × gpu_num) GPU-seconds, the others
// are not rounded; the default rounds every estimate to the second.
func TestHelios_ArtifactRounding(t *testing.T) {
	history := []policy.Job{
		fin(1, "a", "alexnet", 1, 0, 85), fin(2, "a", "alexnet", 1, 0, 23), fin(3, "a", "alexnet", 1, 0, 56), // mean 54.67
		fin(4, "a", "alexnet", 2, 0, 10), fin(5, "a", "alexnet", 2, 0, 11), fin(8, "a", "alexnet", 2, 0, 11),
		fin(9, "a", "alexnet", 2, 0, 11), fin(11, "a", "alexnet", 2, 0, 11), // mean 10.8
		fin(6, "b", "vgg16", 1, 0, 60), fin(7, "b", "vgg16", 1, 0, 61), // mean 60.5
	}
	tests := []struct {
		name     string
		artifact bool
		next     policy.Job
		want     policy.Prediction
	}{
		{"user's jobs: int(54.67 × 1)", true, fin(10, "a", "alexnet", 1, 0, 0), policy.Prediction{Run: 54 * time.Second, Source: "user-name-exact"}},
		{"user's jobs: int(10.8 × 2) / 2", true, fin(10, "a", "alexnet", 2, 0, 0), policy.Prediction{Run: 10500 * time.Millisecond, Source: "user-name-exact"}},
		{"others' jobs: not rounded", true, fin(10, "c", "vgg16", 1, 0, 0), policy.Prediction{Run: 60500 * time.Millisecond, Source: "name-exact"}},
		{"default: rounded to the second", false, fin(10, "a", "alexnet", 1, 0, 0), policy.Prediction{Run: 55 * time.Second, Source: "user-name-exact"}},
		{"default: user's jobs of 2 GPUs rounded", false, fin(10, "a", "alexnet", 2, 0, 0), policy.Prediction{Run: 11 * time.Second, Source: "user-name-exact"}},
		{"default: others' jobs rounded", false, fin(10, "c", "vgg16", 1, 0, 0), policy.Prediction{Run: 61 * time.Second, Source: "name-exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewHeliosPredictor(HeliosParams{ArtifactRounding: tt.artifact})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, history, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNameMatcher_Ratio checks the similarity against values printed by
// CPython's difflib.SequenceMatcher(None, a, b).ratio().
func TestNameMatcher_Ratio(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"apple", "appel", 0.8},
		{"abcd", "bcde", 0.75},
		{"307", "3070", 0.8571428571428571},
		{"resnet101", "resnet50", 0.8235294117647058},
		{"train_bert_large", "train_bert_base", 0.8387096774193549},
		{"", "", 1.0},
		{"abc", "", 0.0},
		{"vgg16", "vgg19", 0.8},
		{"aaaabbb", "ababab", 0.6153846153846154},
	}
	for _, tt := range tests {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			got := newNameMatcher(tt.b).ratio([]rune(tt.a))
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("ratio(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestHelios_CloseMatches checks the choice and order of similar names
// against CPython's difflib.get_close_matches("307", [...], n=2, cutoff=0.6),
// which gives ['3070', '1307']: equal scores, greater name first.
func TestHelios_CloseMatches(t *testing.T) {
	p, err := NewHeliosPredictor(HeliosParams{})
	if err != nil {
		t.Fatal(err)
	}
	h := p.(*heliosPredictor)
	for i, n := range []string{"3070", "370", "30", "703", "1307", "x"} {
		j := fin(int64(i), "u", n, 1, 0, 10)
		h.Observe(&j)
	}
	var got []string
	for _, m := range h.closeMatches("307") {
		got = append(got, m.name)
	}
	if diff := cmp.Diff([]string{"3070", "1307"}, got); diff != "" {
		t.Errorf("closeMatches (-want +got):\n%s", diff)
	}
	// The cached lists kept by Observe agree with a fresh search.
	for _, n := range h.names {
		if diff := cmp.Diff(h.closeMatches(n.s), h.close[n.s], cmp.AllowUnexported(closeMatch{})); diff != "" {
			t.Errorf("cached matches of %q (-fresh +cached):\n%s", n.s, diff)
		}
	}
}

func TestNewPredictor_BadParams(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		pred string
	}{
		{"unknown", Params{}, "oracle"},
		{"tsafrir window", Params{Tsafrir: TsafrirParams{Window: -1}}, "tsafrir"},
		{"alea window", Params{Alea: AleaParams{Window: -2}}, "alea"},
		{"helios cutoff", Params{Helios: HeliosParams{Cutoff: 1.5}}, "helios"},
		{"fairway rate", Params{Fairway: FairwayParams{Rate: 2}}, "fairway"},
		{"fairway depth", Params{Fairway: FairwayParams{Depth: 40}}, "fairway"},
		{"fairway window", Params{Fairway: FairwayParams{Window: -1}}, "fairway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.pred, tt.p); err == nil {
				t.Errorf("New(%q, %+v): want error, got nil", tt.pred, tt.p)
			}
		})
	}
}

func TestPredictorNames(t *testing.T) {
	want := []string{"limit", "tsafrir", "alea", "helios", "fairway"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	for _, n := range want {
		p, err := New(n, Params{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, p.Name())
		}
	}
}

func TestMedian5(t *testing.T) {
	tests := []struct {
		in   []float32
		want float32
	}{{[]float32{3}, 3}, {[]float32{5, 1}, 1}, {[]float32{5, 1, 3}, 3}, {[]float32{9, 2, 7, 4, 1}, 4}}
	for _, tt := range tests {
		if got := median5(tt.in); got != tt.want {
			t.Errorf("median5(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestHourWeekday_MatchesTime(t *testing.T) {
	for _, sec := range []int64{0, -1, -86400, -86401, 1, 3599, 3600, 86399, 86400, 820454400, 1735689599, 1798761600, -2208988800} {
		tm := time.Unix(sec, 0).UTC()
		h, wd := hourWeekday(sec)
		if h != float32(tm.Hour()) || wd != float32(tm.Weekday()) {
			t.Errorf("hourWeekday(%d) = %v, %v; time says %d, %d", sec, h, wd, tm.Hour(), tm.Weekday())
		}
	}
}

// TestFairway_Effective checks the runs the effective run time weighs
// beside the prediction: the user's identical job where two or more are
// kept, else the same name where three or more, cut at the limit, the
// newest ten.
func TestFairway_Effective(t *testing.T) {
	eff := func(runs ...float64) time.Duration { return policy.EffectiveRun(runs) }
	job := func(id int64, name string, gpus, limit, run int) policy.Job {
		return fin(id, "a", name, gpus, limit, run)
	}
	tests := []struct {
		name    string
		history []policy.Job
		next    policy.Job
		// want is the effective run time given the prediction.
		want func(pred float64) time.Duration
	}{
		{"no history", nil, job(9, "train", 1, 3600, 0), func(float64) time.Duration { return 0 }},
		{"another user's runs", []policy.Job{fin(1, "b", "train", 1, 3600, 10), fin(2, "b", "train", 1, 3600, 10)},
			job(9, "train", 1, 3600, 0), func(float64) time.Duration { return 0 }},
		{"two identical runs", []policy.Job{job(1, "train", 1, 3600, 3000), job(2, "train", 1, 3600, 12)},
			job(9, "train", 1, 3600, 0), func(p float64) time.Duration { return eff(p, 12, 3000) }},
		{"one identical run, two of the name: nothing", []policy.Job{job(1, "train", 1, 3600, 3000), job(2, "train", 2, 3600, 12)},
			job(9, "train", 1, 3600, 0), func(float64) time.Duration { return 0 }},
		{"three of the name, one identical", []policy.Job{job(1, "train", 2, 3600, 3000), job(2, "train", 4, 7200, 12), job(3, "train", 1, 3600, 600)},
			job(9, "train", 1, 3600, 0), func(p float64) time.Duration { return eff(p, 600, 12, 3000) }},
		{"identical runs first, the others left out", []policy.Job{job(1, "train", 2, 3600, 3000), job(2, "train", 1, 3600, 12), job(3, "train", 1, 3600, 600)},
			job(9, "train", 1, 3600, 0), func(p float64) time.Duration { return eff(p, 600, 12) }},
		{"other names left out", []policy.Job{job(1, "eval", 1, 3600, 5), job(2, "eval", 1, 3600, 5), job(3, "train", 1, 3600, 3000)},
			job(9, "train", 1, 3600, 0), func(float64) time.Duration { return 0 }},
		{"runs cut at a shorter limit", []policy.Job{job(1, "train", 2, 7200, 7000), job(2, "train", 4, 7200, 12), job(3, "train", 8, 7200, 5000)},
			job(9, "train", 1, 3600, 0), func(p float64) time.Duration { return eff(p, 3600, 12, 3600) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewFairwayPredictor(FairwayParams{})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, tt.history, tt.next)
			next := tt.next
			next.Start, next.End, next.State = time.Time{}, time.Time{}, policy.StatePending
			eff := p.(policy.EffectivePredictor).Effective(&next, got.Run)
			if want := tt.want(got.Run.Seconds()); eff != want {
				t.Errorf("Effective = %v, want %v (prediction %v from %s)", eff, want, got.Run, got.Source)
			}
		})
	}
	t.Run("the newest ten", func(t *testing.T) {
		p, err := NewFairwayPredictor(FairwayParams{})
		if err != nil {
			t.Fatal(err)
		}
		var h []policy.Job
		runs := []float64{0} // the prediction's place
		for i := range 14 {
			run := 60 * (i + 1)
			h = append(h, job(int64(i+1), "train", 1, 3600, run))
			if i >= 4 {
				runs = append(runs, float64(run))
			}
		}
		next := job(99, "train", 1, 3600, 0)
		got := replay(t, p, h, next)
		runs[0] = got.Run.Seconds()
		next.Start, next.End, next.State = time.Time{}, time.Time{}, policy.StatePending
		if eff, want := p.(policy.EffectivePredictor).Effective(&next, got.Run), policy.EffectiveRun(runs); eff != want {
			t.Errorf("Effective = %v, want %v over the prediction and the ten newest runs", eff, want)
		}
	})
}
