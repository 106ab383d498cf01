package accounting

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fairway-hpc/fairway/internal/jsonfix"
)

// SharesFromSlurmrestd names the road, not the source: slurmrestd's
// /slurm/<v>/shares serves the same slurmdbd associations sacctmgr lists,
// so its tree is stored as SharesFromSlurmdbd and replaces that source
// whole.
const SharesFromSlurmrestd = "slurmrestd"

// restShareNum is a {"set","infinite","number"} number of the shares answer.
type restShareNum struct {
	Set      bool    `json:"set"`
	Infinite bool    `json:"infinite"`
	Number   float64 `json:"number"`
}

// ParseRESTShares reads a GET /slurm/<v>/shares answer (Slurm 23.11 on,
// data_parser v0.0.40-v0.0.45: the tree `sshare` prints) and returns the
// share tree of cluster, in ParseAssociations' terms: root left out,
// accounts under root with Parent "", a user's association as Account (its
// parent account) and User. An association without a set share (Slurm's
// FairShare=parent) gets 1, as ParseAssociations does. name is used in
// error locations.
func ParseRESTShares(name string, body []byte, cluster string) ([]ShareNode, error) {
	var r struct {
		Shares struct {
			Shares *[]struct {
				ID        int64        `json:"id"`
				Cluster   string       `json:"cluster"`
				Name      string       `json:"name"`
				Parent    string       `json:"parent"`
				Partition string       `json:"partition"`
				Type      []string     `json:"type"`
				Shares    restShareNum `json:"shares"`
			} `json:"shares"`
		} `json:"shares"`
		Errors []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(jsonfix.NonFinite(body), &r); err != nil {
		return nil, fmt.Errorf("%s: not a slurmrestd shares answer: %w", name, err)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("%s: slurmrestd reported errors: %s", name, r.Errors[0])
	}
	if r.Shares.Shares == nil {
		return nil, fmt.Errorf("%s: no shares.shares list", name)
	}
	var out []ShareNode
	seen := map[[2]string]bool{}
	for i, s := range *r.Shares.Shares {
		where := fmt.Sprintf("%s: shares[%d] (id %d)", name, i, s.ID)
		if s.Cluster != cluster {
			continue
		}
		if s.Name == "" {
			return nil, &RecordError{Where: where, Err: errors.New("empty name")}
		}
		user := false
		for _, t := range s.Type {
			switch t {
			case "USER":
				user = true
			case "ASSOCIATION":
			default:
				return nil, &RecordError{Where: where, Err: fmt.Errorf("type %q: want USER or ASSOCIATION", t)}
			}
		}
		n := ShareNode{Account: s.Name, Parent: s.Parent}
		if user {
			if s.Parent == "" {
				return nil, &RecordError{Where: where, Err: fmt.Errorf("user %s has no parent account", s.Name)}
			}
			n = ShareNode{Account: s.Parent, User: s.Name}
		} else {
			if s.Name == "root" && s.Parent == "" {
				continue // the root of the tree has no share
			}
			if n.Parent == "root" {
				n.Parent = ""
			}
		}
		n.Shares = 1
		if s.Shares.Set && !s.Shares.Infinite {
			if s.Shares.Number < 0 {
				return nil, &RecordError{Where: where, Err: fmt.Errorf("share %g is negative", s.Shares.Number)}
			}
			n.Shares = s.Shares.Number
		}
		k := [2]string{n.Account, n.User}
		if seen[k] { // partition-specific associations repeat a user: the first wins
			continue
		}
		seen[k] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no shares for cluster %q", name, cluster)
	}
	return out, nil
}
