package accounting

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PowerAction is one power-saving decision of serve: a node powered down
// or up (Action "power-down", "power-up"), or a cycle in which jobs
// waiting for nodes found too few powered (Action "lack", Node "").
type PowerAction struct {
	Cluster string
	At      time.Time // the cycle's start
	Cycle   int64
	Node    string
	Action  string
	Reason  string
	Parts   map[string]float64
	// LackNodes and Span: on a lack row, the nodes missing and the time
	// since the previous cycle, which the row stands for.
	LackNodes int
	Span      time.Duration
	Planned   bool   `json:"DryRun"`
	Error     string // Slurm refused the action: it did not happen
}

// RecordPowerActions appends actions; recording the same (cluster, At,
// Cycle, Node, Action) again is a no-op, so a retried batch is safe. It
// returns how many rows were new. Reason and Error are stored as
// validText, as RecordCycle stores its error.
func (s *Store) RecordPowerActions(ctx context.Context, as []PowerAction) (int, error) {
	if len(as) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	for _, a := range as {
		switch {
		case a.Cluster == "" || a.At.IsZero():
			return 0, fmt.Errorf("power action on node %q: cluster and time are required", a.Node)
		case a.Action != "power-down" && a.Action != "power-up" && a.Action != "lack":
			return 0, fmt.Errorf("power action %q on node %q: want power-down, power-up or lack", a.Action, a.Node)
		}
		parts, err := json.Marshal(finiteParts(a.Parts))
		if err != nil {
			return 0, fmt.Errorf("power action on node %q: encode parts: %w", a.Node, err)
		}
		b.Queue(`INSERT INTO power_action (cluster, decided_at, cycle, node, action, reason, parts, lack_nodes, span_s, dry_run, error)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
			a.Cluster, a.At, a.Cycle, a.Node, a.Action, validText(a.Reason), json.RawMessage(parts), int32(a.LackNodes), a.Span.Seconds(),
			a.Planned, validText(a.Error))
	}
	added := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res := tx.SendBatch(ctx, b)
		defer res.Close()
		for range as {
			tag, err := res.Exec()
			if err != nil {
				return err
			}
			added += int(tag.RowsAffected())
		}
		return res.Close()
	})
	if err != nil {
		return 0, fmt.Errorf("record power actions: %w", err)
	}
	return added, nil
}

// PowerActions returns the cluster's power actions with from <= At < to
// (a zero from: since the first), oldest first; node "" returns every
// node's and the lack rows, a name only that node's.
func (s *Store) PowerActions(ctx context.Context, cluster, node string, from, to time.Time) ([]PowerAction, error) {
	rows, err := s.pool.Query(ctx, `SELECT decided_at, cycle, node, action, reason, parts, lack_nodes, span_s, dry_run, error
		FROM power_action WHERE cluster = $1 AND ($2 = '' OR node = $2) AND decided_at >= $3 AND decided_at < $4
		ORDER BY decided_at, cycle, node, action`, cluster, node, from, to)
	if err != nil {
		return nil, fmt.Errorf("read power actions: %w", err)
	}
	defer rows.Close()
	var out []PowerAction
	for rows.Next() {
		a := PowerAction{Cluster: cluster}
		var parts []byte
		var lack int32
		var span float64
		if err := rows.Scan(&a.At, &a.Cycle, &a.Node, &a.Action, &a.Reason, &parts, &lack, &span, &a.Planned, &a.Error); err != nil {
			return nil, fmt.Errorf("read power actions: %w", err)
		}
		if err := json.Unmarshal(parts, &a.Parts); err != nil {
			return nil, fmt.Errorf("read power actions: parts of node %q: %w", a.Node, err)
		}
		a.LackNodes, a.Span = int(lack), time.Duration(span*float64(time.Second))
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read power actions: %w", err)
	}
	return out, nil
}

// PowerSummary is what the power actions of a period add up to.
type PowerSummary struct {
	Planned bool `json:"DryRun"` // summarises the dry-run actions (what would have happened)
	// NodeHoursOff: hours nodes spent powered down by Fairway within the
	// period (from each power-down that Slurm took to the next power-up,
	// or the period's end).
	NodeHoursOff float64
	// EnergyKWh estimates the energy saved: NodeHoursOff × IdleWatts.
	EnergyKWh                     float64
	IdleWatts                     float64
	PowerDowns, PowerUps, Refused int
	// LackNodeHours: nodes that jobs waiting for nodes lacked, times how
	// long (the lack rows' spans); LackCycles counts those cycles.
	LackNodeHours float64
	LackCycles    int
}

// SummarisePower adds up actions (every one up to `to`, oldest first: a
// node powered down before from counts from from) over [from, to) for one
// kind (dry run or live), with idleWatts per powered-down node.
func SummarisePower(actions []PowerAction, from, to time.Time, idleWatts float64, dryRun bool) PowerSummary {
	s := PowerSummary{Planned: dryRun, IdleWatts: idleWatts}
	offSince := map[string]time.Time{}
	clip := func(a, b time.Time) float64 {
		a, b = later(a, from), earlier(b, to)
		if !b.After(a) {
			return 0
		}
		return b.Sub(a).Hours()
	}
	for _, a := range actions {
		if a.Planned != dryRun || !a.At.Before(to) {
			continue
		}
		in := !a.At.Before(from)
		if a.Error != "" {
			if in {
				s.Refused++
			}
			continue
		}
		switch a.Action {
		case "power-down":
			if _, off := offSince[a.Node]; !off {
				offSince[a.Node] = a.At
			}
			if in {
				s.PowerDowns++
			}
		case "power-up":
			if since, off := offSince[a.Node]; off {
				s.NodeHoursOff += clip(since, a.At)
				delete(offSince, a.Node)
			}
			if in {
				s.PowerUps++
			}
		case "lack":
			if in {
				s.LackNodeHours += float64(a.LackNodes) * a.Span.Hours()
				s.LackCycles++
			}
		}
	}
	for _, since := range offSince {
		s.NodeHoursOff += clip(since, to)
	}
	s.EnergyKWh = s.NodeHoursOff * idleWatts / 1000
	return s
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
