package predeval

// FieldError is a bad setting, named by the Go field it fills ("Predictors"
// for ParsePredictors): the command that reads the settings knows what its users
// call them (its flags) and names them so.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }
