package accounting_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
)

func TestShareTree_RowsAndText(t *testing.T) {
	tree := &accounting.ShareTree{
		Nodes: []accounting.ShareNode{{Account: "chem", Shares: 40}, {Account: "ml", Parent: "physics", Shares: 2},
			{Account: "chem", User: "carol", Shares: 1}},
		Source: []string{"slurmdbd", "config", "slurmdbd"},
	}
	b, err := json.Marshal(tree.Rows())
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"account":"chem","shares":40,"source":"slurmdbd"},{"account":"ml","parent":"physics","shares":2,"source":"config"},` +
		`{"account":"chem","user":"carol","shares":1,"source":"slurmdbd"}]`; string(b) != want {
		t.Errorf("rows as JSON:\n%s\nwant\n%s", b, want)
	}
	var s strings.Builder
	if err := tree.WriteText(&s); err != nil {
		t.Fatal(err)
	}
	want := "ACCOUNT  USER   PARENT   SHARES  SOURCE\n" +
		"chem            root     40      slurmdbd\n" +
		"ml              physics  2       config\n" +
		"chem     carol           1       slurmdbd\n"
	if s.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", s.String(), want)
	}
}
