package policy

// ledgerFree is a Policy whose ranking reads neither the Ledger nor the
// running jobs' committed service (the runningIndex's sums): of the
// running jobs, at most their users. An Engine whose caller reads neither
// (EngineParams.LedgerUnread) keeps no Ledger for such a policy.
type ledgerFree interface {
	Policy
	ledgerFree()
}

// isLedgerFree reports whether p declares it reads no Ledger (ledgerFree).
func isLedgerFree(p Policy) bool {
	_, ok := p.(ledgerFree)
	return ok
}

// themis reads predictions, the snapshot's capacity and the number of
// users with a pending or running job (activeMemo): no usage, no counter,
// no committed service.
func (*themis) ledgerFree() {}
