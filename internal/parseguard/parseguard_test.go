package parseguard

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestBytesNamesFileAndLine(t *testing.T) {
	crashOnBang := func(b []byte) error {
		if bytes.Contains(b, []byte("!")) {
			var m map[string]int
			m["x"] = 1 // a nil-map write: a runtime panic, as a dependency's
		}
		return nil
	}
	tests := []struct {
		name, in string
		line     int
		crash    bool
	}{
		{"no crash", "a\nb\n", 0, false},
		{"third line", "a\nb\n !\n", 3, true},
		{"last line without newline", "a\n!", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Bytes("posedge.yaml", []byte(tt.in), crashOnBang)
			var pe *PanicError
			if errors.As(err, &pe) != tt.crash {
				t.Fatalf("err = %v, crash want %v", err, tt.crash)
			}
			if !tt.crash {
				return
			}
			if pe.Line != tt.line || pe.File != "posedge.yaml" {
				t.Fatalf("at %s:%d, want posedge.yaml:%d", pe.File, pe.Line, tt.line)
			}
			if !strings.HasPrefix(err.Error(), "posedge.yaml:") {
				t.Fatalf("error does not start with the file: %v", err)
			}
		})
	}
}

func TestRunPassesErrorsThrough(t *testing.T) {
	want := errors.New("bad")
	if err := Run("m", func() error { return want }); err != want {
		t.Fatalf("err = %v", err)
	}
}
