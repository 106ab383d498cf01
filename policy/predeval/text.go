package predeval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fairway-hpc/fairway/internal/trace"
)

// WriteText writes res for people: the replay, what was left out, one row
// of error figures per predictor (n/a with the reason for a predictor the
// trace cannot feed), and the predictors with the lowest errors.
func (res *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "trace %s, protocol %s: %d jobs replayed", res.Trace, res.Protocol, res.Jobs)
	if res.Skipped > 0 {
		fmt.Fprintf(w, " (%d without start or end left out)", res.Skipped)
	}
	fmt.Fprintln(w)
	if res.LeftOut != nil {
		fmt.Fprintf(w, "left out: %s\n", trace.FormatLeftOut(res.LeftOut))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "predictor\tMAE (s)\tMedAE (s)\tmean rel err\twithin ±10%\t±50%\t±100%\tunder\tn\t")
	for _, m := range res.Predictors {
		if m.NotApplicable != "" {
			fmt.Fprintf(tw, "%s\tn/a\tn/a\tn/a\tn/a\tn/a\tn/a\tn/a\t0\t\n", m.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%d\t\n", m.Name, m.MAE, m.MedAE,
			m.MeanRelErr, 100*m.Within10, 100*m.Within50, 100*m.Within100, 100*m.UnderRate, m.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range res.Predictors {
		if m.NotApplicable != "" {
			fmt.Fprintf(w, "n/a: %s %s\n", m.Name, m.NotApplicable)
		}
	}
	mae, medae := res.Lowest()
	fmt.Fprintf(w, "lowest MAE: %s; lowest MedAE: %s\n", strings.Join(mae, " = "), strings.Join(medae, " = "))
	return nil
}
