package accounting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
)

// Share sources: where a row of the share tree came from.
const (
	SharesFromSlurmdbd = "slurmdbd"
	SharesFromConfig   = "config"
)

// ShareNode is one node of the share tree: an account (User "") under its
// Parent account ("" directly under root), or a user's association with an
// account. Shares is the raw share (sacctmgr Fairshare=N).
type ShareNode struct {
	Account string
	User    string
	Parent  string
	Shares  float64
}

// ParseAssociations reads `sacctmgr -nP show associations
// format=cluster,account,user,parentname,fairshare` output and returns the
// share tree of cluster. The root account itself is left out (it has no
// share); accounts whose parent is root get Parent "". A share of "parent"
// (Slurm's FairShare=parent: the user competes as part of its account) is
// stored as 1, the default share, since Fairway's two-level fair-share has
// no notion of it. Partition-specific associations repeat a user; the first
// line wins. A user's line naming a parent is an error: sacctmgr prints
// none there, so one means other columns than those asked for. name is
// used in error locations.
func ParseAssociations(name string, data []byte, cluster string) ([]ShareNode, error) {
	var out []ShareNode
	seen := map[[2]string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, "|")
		if len(f) < 5 {
			return nil, &RecordError{Where: fmt.Sprintf("%s:%d", name, line), Err: fmt.Errorf("want 5 '|'-separated fields (cluster|account|user|parent|share), got %d", len(f))}
		}
		if f[0] != cluster {
			continue
		}
		acct, user, parent, share := f[1], f[2], f[3], f[4]
		if acct == "" {
			return nil, &RecordError{Where: fmt.Sprintf("%s:%d", name, line), Err: errors.New("empty account")}
		}
		if user != "" && parent != "" {
			// sacctmgr names a parent for an account's association only:
			// one here means other columns than those asked for
			return nil, &RecordError{Where: fmt.Sprintf("%s:%d", name, line), Err: fmt.Errorf("user %s of account %s has parent %q: want none (columns cluster|account|user|parent|share)", user, acct, parent)}
		}
		if acct == "root" && user == "" {
			continue
		}
		if parent == "root" {
			parent = ""
		}
		v := 1.0
		if share != "parent" && share != "" {
			x, err := strconv.ParseFloat(share, 64)
			if err != nil || !validShare(x) {
				return nil, &RecordError{Where: fmt.Sprintf("%s:%d", name, line), Err: fmt.Errorf("share %q is not a non-negative number", share)}
			}
			v = x
		}
		k := [2]string{acct, user}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ShareNode{Account: acct, User: user, Parent: parent, Shares: v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// AssociationsRunner runs `sacctmgr -nP show associations
// format=cluster,account,user,parentname,fairshare`
// (slurmctl.SacctmgrAssocArgs) and returns what it printed;
// slurmctl.Commands implements it. A path "" means sacctmgr on PATH.
type AssociationsRunner interface {
	SacctmgrAssociations(ctx context.Context, path string) ([]byte, error)
}

// SacctmgrAssociations runs sacctmgr at path through slurm and returns the
// share tree of cluster from slurmdbd's associations.
func SacctmgrAssociations(ctx context.Context, slurm AssociationsRunner, path, cluster string) ([]ShareNode, error) {
	out, err := slurm.SacctmgrAssociations(ctx, path)
	if err != nil {
		return nil, err
	}
	nodes, err := ParseAssociations("sacctmgr", out, cluster)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("sacctmgr lists no associations for cluster %q", cluster)
	}
	return nodes, nil
}

// ParseSharesConfig reads shares set in Fairway's configuration, one node a
// line:
//
//	# comment
//	physics 60              # account physics under root, 60 shares
//	physics/hep 10          # sub-account hep of physics ("parent/account")
//	physics:alice 2         # user alice's association with physics
//
// An account path "a/b" makes b a sub-account of a; "a/b:user" is a user
// of b. name is used in error locations.
func ParseSharesConfig(name string, r io.Reader) ([]ShareNode, error) {
	var out []ShareNode
	seen := map[[2]string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		if len(f) != 2 {
			return nil, &RecordError{Where: where, Err: errors.New("want \"ACCOUNT[:USER] SHARES\"")}
		}
		path, user, isUser := strings.Cut(f[0], ":")
		if isUser && (user == "" || strings.ContainsAny(user, ":/")) {
			// "physics:" would be the account physics, "a:b:c" a user "b:c"
			return nil, &RecordError{Where: where, Err: fmt.Errorf("user name %q in %q: want ACCOUNT:USER", user, f[0])}
		}
		parts := strings.Split(path, "/")
		for _, p := range parts {
			if p == "" {
				return nil, &RecordError{Where: where, Err: fmt.Errorf("empty account name in %q", f[0])}
			}
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil || !validShare(v) {
			return nil, &RecordError{Where: where, Err: fmt.Errorf("shares %q is not a non-negative number", f[1])}
		}
		acct := parts[len(parts)-1]
		parent := ""
		if len(parts) > 1 {
			parent = parts[len(parts)-2]
		}
		if user != "" {
			parent = ""
		}
		k := [2]string{acct, user}
		if prev, dup := seen[k]; dup {
			return nil, &RecordError{Where: where, Err: fmt.Errorf("%s repeats line %d", f[0], prev)}
		}
		seen[k] = line
		out = append(out, ShareNode{Account: acct, User: user, Parent: parent, Shares: v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// validShare reports whether x is a share: a finite number, 0 or more
// (strconv reads "NaN" and "Inf", which PostgreSQL's shares >= 0 check
// takes and every fair-share sum then carries).
func validShare(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// SyncShares replaces the share tree of cluster from one source (slurmdbd
// or config) with nodes, in one transaction. The other source's rows are
// untouched. It returns how many rows the source had before and has now.
// A node twice, a share that is not a finite non-negative number, or an
// account that becomes its own ancestor in the tree both sources make
// (config overriding slurmdbd, as LoadShares reads it) is refused with an
// error naming it, and the stored tree is kept.
func (s *Store) SyncShares(ctx context.Context, cluster, source string, nodes []ShareNode) (before, after int, err error) {
	if source != SharesFromSlurmdbd && source != SharesFromConfig {
		return 0, 0, fmt.Errorf("share source %q: want %s or %s", source, SharesFromSlurmdbd, SharesFromConfig)
	}
	if cluster == "" {
		return 0, 0, errors.New("sync shares: no cluster name")
	}
	if err := checkShareNodes(nodes); err != nil {
		return 0, 0, fmt.Errorf("sync shares of %s: %w", cluster, err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := ensureClusters(ctx, tx, []string{cluster}); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM share WHERE cluster = $1 AND source = $2`, cluster, source)
		if err != nil {
			return fmt.Errorf("clear %s shares: %w", source, err)
		}
		before = int(tag.RowsAffected())
		rows := make([][]any, len(nodes))
		for i, n := range nodes {
			rows[i] = []any{cluster, source, n.Account, n.User, n.Parent, n.Shares}
		}
		c, err := tx.CopyFrom(ctx, pgx.Identifier{"share"}, []string{"cluster", "source", "account", "user_name", "parent", "shares"}, pgx.CopyFromRows(rows))
		if err != nil {
			return fmt.Errorf("store %s shares: %w", source, err)
		}
		after = int(c)
		return checkShareCycles(ctx, tx, cluster)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("sync shares of %s: %w", cluster, err)
	}
	return before, after, nil
}

// checkShareNodes refuses a node twice and a share that is not one.
func checkShareNodes(nodes []ShareNode) error {
	seen := map[[2]string]bool{}
	for _, n := range nodes {
		name := "account " + n.Account
		if n.User != "" {
			name = n.Account + ":" + n.User
		}
		if !validShare(n.Shares) {
			return fmt.Errorf("%s: share %g is not a non-negative number", name, n.Shares)
		}
		k := [2]string{n.Account, n.User}
		if seen[k] {
			return fmt.Errorf("%s is listed twice", name)
		}
		seen[k] = true
	}
	return nil
}

// checkShareCycles refuses a stored tree of cluster (both sources, config
// overriding slurmdbd) in which an account is its own ancestor: Top would
// then take some account of the loop as top-level, and its users' usage
// would be charged to it without a word.
func checkShareCycles(ctx context.Context, tx pgx.Tx, cluster string) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (account) account, parent FROM share
		WHERE cluster = $1 AND user_name = '' ORDER BY account, source = 'config' DESC`, cluster)
	if err != nil {
		return fmt.Errorf("check share tree: %w", err)
	}
	parent := map[string]string{}
	var accounts []string
	for rows.Next() {
		var a, p string
		if err := rows.Scan(&a, &p); err != nil {
			return fmt.Errorf("check share tree: %w", err)
		}
		parent[a] = p
		accounts = append(accounts, a)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check share tree: %w", err)
	}
	rooted := map[string]bool{} // accounts whose ancestors end at root
	for _, a := range accounts {
		path := []string{a}
		on := map[string]bool{a: true}
		reaches := true
		for cur := a; !rooted[cur]; {
			p, ok := parent[cur]
			if !ok || p == "" {
				break
			}
			path = append(path, p)
			if p == a {
				return fmt.Errorf("account %s is its own ancestor (%s)", a, strings.Join(path, " → "))
			}
			if on[p] {
				reaches = false // a loop further up, reported from its own account
				break
			}
			on[p] = true
			cur = p
		}
		if reaches {
			for _, x := range path {
				rooted[x] = true
			}
		}
	}
	return nil
}

// ShareTree is a cluster's share tree with config rows overriding slurmdbd
// rows of the same account or association.
type ShareTree struct {
	Nodes []ShareNode // accounts first (by name), then associations
	// Source says where each node's share came from, parallel to Nodes.
	Source []string
	parent map[string]string
}

// LoadShares reads the share tree of cluster.
func (s *Store) LoadShares(ctx context.Context, cluster string) (*ShareTree, error) {
	rows, err := s.pool.Query(ctx, `
SELECT account, user_name, parent, shares, source FROM (
	SELECT DISTINCT ON (account, user_name) account, user_name, parent, shares, source
	FROM share WHERE cluster = $1
	ORDER BY account, user_name, source = 'config' DESC
) s ORDER BY user_name <> '', account, user_name`, cluster)
	if err != nil {
		return nil, fmt.Errorf("load shares: %w", err)
	}
	defer rows.Close()
	var nodes []ShareNode
	var srcs []string
	for rows.Next() {
		var n ShareNode
		var src string
		if err := rows.Scan(&n.Account, &n.User, &n.Parent, &n.Shares, &src); err != nil {
			return nil, fmt.Errorf("load shares: %w", err)
		}
		nodes = append(nodes, n)
		srcs = append(srcs, src)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load shares: %w", err)
	}
	t := NewShareTree(nodes)
	t.Source = srcs
	return t, nil
}

// NewShareTree returns the tree of nodes (accounts first, then
// associations, as LoadShares orders them). Source is left empty.
func NewShareTree(nodes []ShareNode) *ShareTree {
	t := &ShareTree{Nodes: nodes, parent: map[string]string{}}
	for _, n := range nodes {
		if n.User == "" {
			t.parent[n.Account] = n.Parent
		}
	}
	return t
}

// Top returns the top-level account (directly under root) that account
// belongs to: itself when it is top-level or unknown.
func (t *ShareTree) Top(account string) string {
	seen := map[string]bool{}
	for {
		p, ok := t.parent[account]
		if !ok || p == "" || seen[account] {
			return account
		}
		seen[account] = true
		account = p
	}
}

// Policy flattens the tree onto policy.Shares' two levels: top-level
// accounts keep their shares, and a user of a sub-account becomes a user of
// the top-level account (several associations of one user under one
// top-level account add up). Jobs must then be charged to Top(job.Account).
func (t *ShareTree) Policy() *policy.Shares {
	s := &policy.Shares{Accounts: map[string]float64{}, Users: map[policy.Assoc]float64{}}
	for _, n := range t.Nodes {
		top := t.Top(n.Account)
		switch {
		case n.User == "" && top == n.Account:
			s.Accounts[n.Account] = n.Shares
		case n.User != "":
			s.Users[policy.Assoc{Account: top, User: n.User}] += n.Shares
		}
	}
	return s
}
