package configcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/posedge/posedge/internal/secret"
)

// Problem is one problem with one key of a config file.
type Problem struct {
	Key   string // e.g. "admin.listen"
	Value string // the value as written, quoted in the message; "" leaves it out
	Err   error
}

func (p *Problem) Error() string {
	if p.Value == "" {
		return p.Key + ": " + p.Err.Error()
	}
	return fmt.Sprintf("%s: %q: %v", p.Key, p.Value, p.Err)
}

func (p *Problem) Unwrap() error { return p.Err }

// Problems is every problem found in one file, reported at once.
type Problems []*Problem

func (ps Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s):", len(ps))
	for _, p := range ps {
		b.WriteString("\n  - " + p.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each problem.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// Add records a problem with key, showing the value as written.
func (ps *Problems) Add(key, value string, err error) {
	*ps = append(*ps, &Problem{Key: key, Value: value, Err: err})
}

// Addf records a problem with key, its wording from format.
func (ps *Problems) Addf(key, format string, args ...any) {
	*ps = append(*ps, &Problem{Key: key, Err: errors.New(fmt.Sprintf(format, args...))})
}

// Err is the problems as an error, nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Syntax is a YAML error as an operator reads it: "parse: line L, column C
// (key k): message" — never the source lines the YAML library prints
// around it, which would show a password next to a typo.
func Syntax(err error, src []byte) error {
	line, col, msg := secret.YAMLError(err, src)
	if strings.Contains(msg, "cannot unmarshal") {
		msg = "wrong type of value: " + msg
	}
	if line == 0 {
		return errors.New("parse: " + msg)
	}
	where := fmt.Sprintf("line %d, column %d", line, col)
	if k := secret.KeyAt(src, line); k != "" {
		where += " (key " + k + ")"
	}
	return fmt.Errorf("parse: %s: %s", where, msg)
}
