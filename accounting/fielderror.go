package accounting

// FieldError is a bad setting of IngestConfig (or of what fills it:
// Since for ParseSince), named by its Go field: the command that fills the
// settings knows what its users call them (its flags) and names them so.
type FieldError struct {
	Field string
	Value string // as the message shows it; "" where it shows none
	Err   error
}

func (e *FieldError) Error() string {
	if e.Value != "" {
		return e.Field + " " + e.Value + ": " + e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }
