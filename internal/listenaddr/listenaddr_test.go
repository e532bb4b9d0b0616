package listenaddr

import "testing"

func TestLocal(t *testing.T) {
	cases := []struct{ listen, want string }{
		{"127.0.0.1:8081", "127.0.0.1:8081"},
		{"0.0.0.0:8081", "127.0.0.1:8081"},
		{":8081", "127.0.0.1:8081"},
		{"[::]:8081", "[::1]:8081"},
		{"[::1]:8081", "[::1]:8081"},
		{"[fe80::1]:8081", "[fe80::1]:8081"},
		{"10.0.0.7:8081", "10.0.0.7:8081"},
		{"store-pc:8081", "store-pc:8081"},
	}
	for _, c := range cases {
		if got, err := Local(c.listen); err != nil || got != c.want {
			t.Errorf("Local(%q) = %q, %v; want %q", c.listen, got, err, c.want)
		}
	}
	for _, bad := range []string{"8081", "", "host:1:2"} {
		if got, err := Local(bad); err == nil {
			t.Errorf("Local(%q) = %q, want an error", bad, got)
		}
	}
}
