package policy

import (
	"fmt"
	"strings"
)

// PolicyParams configures the registered policies; each constructor reads
// its own part. The zero value gives every policy its documented defaults.
type PolicyParams struct {
	FIFO      FIFOParams
	Fairshare FairshareParams
	VTC       VTCParams
	Tiresias  TiresiasParams
	Themis    ThemisParams
	QSSF      QSSFParams
	SJFOracle SJFOracleParams
	FairQSSF  FairQSSFParams
	FairSJF   FairSJFParams
}

// DefaultPolicy is the policy serve and simulate use when none is named.
const DefaultPolicy = "fair-sjf"

// Policies is the registry of ranking policies by name.
var Policies = map[string]func(PolicyParams) (Policy, error){
	"fifo":       func(p PolicyParams) (Policy, error) { return NewFIFO(p.FIFO) },
	"fairshare":  func(p PolicyParams) (Policy, error) { return NewFairshare(p.Fairshare) },
	"vtc":        func(p PolicyParams) (Policy, error) { return NewVTC(p.VTC) },
	"tiresias":   func(p PolicyParams) (Policy, error) { return NewTiresias(p.Tiresias) },
	"themis":     func(p PolicyParams) (Policy, error) { return NewThemis(p.Themis) },
	"qssf":       func(p PolicyParams) (Policy, error) { return NewQSSF(p.QSSF) },
	"sjf-oracle": func(p PolicyParams) (Policy, error) { return NewSJFOracle(p.SJFOracle) },
	"fair-qssf":  func(p PolicyParams) (Policy, error) { return NewFairQSSF(p.FairQSSF) },
	"fair-sjf":   func(p PolicyParams) (Policy, error) { return NewFairSJF(p.FairSJF) },
}

// PolicyNames lists the registered policies in a fixed order: the
// baselines, the oracle, fair-qssf, then Fairway's default.
func PolicyNames() []string {
	return []string{"fifo", "fairshare", "vtc", "tiresias", "themis", "qssf", "sjf-oracle", "fair-qssf", "fair-sjf"}
}

// NewPolicy builds the registered policy called name.
func NewPolicy(name string, p PolicyParams) (Policy, error) {
	mk, ok := Policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q: want one of %s", name, strings.Join(PolicyNames(), ", "))
	}
	return mk(p)
}
