// Package plural counts things in English for the CLI's text: "1 job",
// "2 jobs", "0 jobs".
package plural

import "strconv"

// N is n followed by one when n is 1, else by many: N(1, "job", "jobs") is
// "1 job", N(0, "job", "jobs") is "0 jobs". Both forms are given because
// English plurals are not regular enough to derive ("policy", "policies").
func N(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
