package sim

import "strings"

// FieldError is a bad setting of RunConfig or of the choices ParseChoice
// and ParseLoads read, named by its Go field: the command that fills the
// settings knows what its users call them (its flags) and names them so.
type FieldError struct {
	Fields []Setting // the settings at fault, in the order the message gives them
	Err    error
}

// Setting is one setting as given: its field and, where the message shows
// it, its value.
type Setting struct {
	Field string
	Value string // "" where the message shows no value
}

func (e *FieldError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, s := range e.Fields {
		parts[i] = s.Field
		if s.Value != "" {
			parts[i] += " " + s.Value
		}
	}
	return strings.Join(parts, ", ") + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// fieldErr is the FieldError of one setting.
func fieldErr(field, value string, err error) *FieldError {
	return &FieldError{Fields: []Setting{{field, value}}, Err: err}
}
