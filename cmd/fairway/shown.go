package main

import (
	"strconv"
	"strings"
	"unicode"
)

// shown is a string a job's user controls (a job name, and on some sites
// an account) as the text outputs print it to an admin's terminal: as it
// is when every rune is printable, else quoted with Go's escapes. Printed
// raw, an escape sequence in a job name would run in the admin's terminal
// (retitle it, clear it, move the cursor), and a newline or tab would
// forge a row of a table for another user.
func shown(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
