package natsurl

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr []string // substrings; none = valid
	}{
		{"one server", "nats://hq.example:4222", nil},
		{"cluster", "nats://a:4222, nats://b:4222 ,tls://c:4222", nil},
		{"credentials", "nats://user:pw@hq:4222", nil},
		{"trailing comma", "nats://a:4222,", nil},
		{"empty", " , ", []string{"required"}},
		{"scheme", "http://a:1", []string{"unsupported scheme"}},
		{"no scheme is nats://, as the client reads it", "hq1:4222,hq2:4222", nil},
		{"second bad", "nats://a:1,b:99999", []string{"server 2 of 2", "b:99999"}},
		{"no host", "nats://:4222", []string{"no host"}},
		{"bad port", "nats://a:99999", []string{"bad port"}},
		{"path", "nats://a:4222/x", []string{"no path"}},
		{"secret not printed", "nats://a:1,http://u:hunter2@b:1", []string{"xxxxx@b:1"}},
		{"secret not printed when unparsable", "nats://a:1,nats://u:hun%zzter2@b:1", []string{"xxxxx@b:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.in)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check(%q) = nil, want an error", tt.in)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check(%q) = %q, want it to contain %q", tt.in, err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hun%zzter2") {
				t.Errorf("error prints the password: %q", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://a:4222", "nats://a:4222"},
		{"nats://u:p@a:4222,nats://b:4222", "nats://xxxxx@a:4222,nats://b:4222"},
		{"nats://token@a:4222, tls://u:p@b:1", "nats://xxxxx@a:4222, tls://xxxxx@b:1"},
		{"nats://a:4222/x@y", "nats://xxxxx@y"},
		{"u:p@a:4222,b:4222", "xxxxx@a:4222,b:4222"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
