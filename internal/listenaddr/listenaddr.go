package listenaddr

import (
	"fmt"
	"net"
)

// Local is where to reach a listener bound to listen from this machine: a
// host left unspecified ("", 0.0.0.0, ::) means every address of this
// machine, so the loopback one of the same family is asked. Any other host
// is kept as written, since the listener answers only there.
func Local(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", listen, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}
