package replay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/internal/testenv"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, PEM files in a temp dir.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "posedge test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	var p pki
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.serverCert, KeyFile: p.serverKey,
		CaFile: p.ca, Verify: true, Timeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, TLSConfig: tc, TLSVerify: true, TLSTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("TLS server not ready")
	}
	url := fmt.Sprintf("tls://127.0.0.1:%d", port)

	// Without a client certificate the server refuses the store.
	j0 := openJournal(t)
	cfg := testConfig(url)
	cfg.CAFile = p.ca
	r0, _ := run(t, cfg, j0, nil)
	testenv.WaitFor(t, wait, "a refused connection reported", func() bool {
		st := r0.Status()
		return !st.Connected && strings.Contains(st.LastError, "connect to HQ")
	})

	// With it, sales go through.
	_, js := hqConn(t, url, nats.RootCAs(p.ca), nats.ClientCert(p.clientCert, p.clientKey))
	createStream(t, js)
	j := openJournal(t)
	cfg.CertFile, cfg.KeyFile = p.clientCert, p.clientKey
	run(t, cfg, j, nil)
	appendSales(t, j, 1, 10)
	testenv.WaitFor(t, wait, "sales sent over TLS", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 10)
}
