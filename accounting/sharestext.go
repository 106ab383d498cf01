package accounting

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// ShareRow is one node of a share tree as `fairway shares show` prints it,
// with the source its share came from.
type ShareRow struct {
	Account string  `json:"account"`
	User    string  `json:"user,omitempty"`
	Parent  string  `json:"parent,omitempty"`
	Shares  float64 `json:"shares"`
	Source  string  `json:"source"`
}

// Rows is t's nodes in order, each with its source.
func (t *ShareTree) Rows() []ShareRow {
	rows := make([]ShareRow, len(t.Nodes))
	for i, n := range t.Nodes {
		rows[i] = ShareRow{n.Account, n.User, n.Parent, n.Shares, t.Source[i]}
	}
	return rows
}

// WriteText writes t as a table for people; an account directly under
// the root names root as its parent.
func (t *ShareTree) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tUSER\tPARENT\tSHARES\tSOURCE")
	for _, r := range t.Rows() {
		parent := r.Parent
		if parent == "" && r.User == "" {
			parent = "root"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%s\n", r.Account, r.User, parent, r.Shares, r.Source)
	}
	return tw.Flush()
}
