package parseguard

import (
	"bytes"
	"fmt"
)

// PanicError is a decoder's panic, recovered. Line is the first line of
// the input at which the decoder panics when given the input up to that
// line (0 when not known: a stream, or no prefix panics on its own).
type PanicError struct {
	File  string // what was being read: a path, or "message" and its kind
	Line  int
	Value any // what the decoder panicked with
}

func (e *PanicError) Error() string {
	// File may be empty where the caller names the file itself.
	where := e.File
	switch {
	case e.Line > 0 && e.File == "":
		where = fmt.Sprintf("line %d", e.Line)
	case e.Line > 0:
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	case e.File == "":
		where = "input"
	}
	return fmt.Sprintf("%s: the parser crashed on this input (%v); the file is malformed near here", where, e.Value)
}

// Run calls decode and turns a panic in it into a *PanicError naming
// file (line unknown).
func Run(file string, decode func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{File: file, Value: v}
		}
	}()
	return decode()
}

// Bytes calls decode(src); on a panic it finds the line by decoding
// ever longer prefixes of src (line by line) until one panics too, so the
// error names the line the parser could not get past. The input is a
// file an operator wrote, small enough to decode once per line.
func Bytes(file string, src []byte, decode func([]byte) error) error {
	err := Run(file, func() error { return decode(src) })
	pe, ok := err.(*PanicError)
	if !ok {
		return err
	}
	const maxLines = 10000
	end := 0
	for line := 1; line <= maxLines && end < len(src); line++ {
		i := bytes.IndexByte(src[end:], '\n')
		if i < 0 {
			end = len(src)
		} else {
			end += i + 1
		}
		prefix := append([]byte(nil), src[:end]...)
		if _, crashed := Run(file, func() error { return decode(prefix) }).(*PanicError); crashed {
			pe.Line = line
			break
		}
	}
	return pe
}
