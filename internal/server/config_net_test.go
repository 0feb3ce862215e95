package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test, which signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(10), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(dir, name+".pem")
	os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return &testCA{cert: cert, key: key, file: file}
}

// client returns a client certificate signed by the CA.
func (ca *testCA) client(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(11), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// startTLS runs a server with a TLS port and the TLS settings conf (redis.conf lines), and
// returns the TLS address and the pool that trusts the server's certificate.
func startTLS(t *testing.T, dir, conf string) (string, *x509.CertPool, error) {
	t.Helper()
	certFile, keyFile := selfSigned(t, dir)
	cfg := DefaultConfig()
	cfg.Logger = discardLogger()
	cfg.Port, cfg.TLSPort = 0, freePort(t)
	cfg.TLSCertFile, cfg.TLSKeyFile = certFile, keyFile
	if err := ParseConfig(strings.NewReader(conf), "tls.conf", &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		return "", nil, err
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	pool := x509.NewCertPool()
	p, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(p)
	return fmt.Sprintf("127.0.0.1:%d", cfg.TLSPort), pool, nil
}

// tlsPing sends PING over TLS with the client settings given and returns the reply or the
// error (a refused certificate shows at the first read under TLS 1.3).
func tlsPing(addr string, tc *tls.Config) (string, error) {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return strings.TrimSpace(line), err
}

// TestTLSClientCertificates: with tls-ca-cert-file (or tls-ca-cert-dir) a client must present
// a certificate the CA signed, as Redis's default tls-auth-clients yes asks; optional lets a
// client without one in but still refuses a certificate of another CA; no asks for none; yes
// without a CA stops the start, as in Redis.
func TestTLSClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	other := newTestCA(t, dir, "other")
	good, bad := ca.client(t), other.client(t)
	caDir := filepath.Join(dir, "cadir")
	os.Mkdir(caDir, 0o700)
	os.Symlink(ca.file, filepath.Join(caDir, "0a1b2c3d.0"))

	for _, tc := range []struct {
		conf             string
		none, good, bad  bool // whether a client with no, the CA's, another CA's certificate gets PONG
		authClientsValue string
	}{
		{"tls-ca-cert-file " + ca.file, false, true, false, "yes"},
		{"tls-ca-cert-dir " + caDir, false, true, false, "yes"},
		{"tls-ca-cert-file " + ca.file + "\ntls-auth-clients optional", true, true, false, "optional"},
		{"tls-ca-cert-file " + ca.file + "\ntls-auth-clients no", true, true, true, "no"},
		{"", true, true, true, "no"}, // no CA: bloomd asks for no certificate
	} {
		t.Run(strings.ReplaceAll(tc.conf, dir, ""), func(t *testing.T) {
			addr, pool, err := startTLS(t, t.TempDir(), tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name  string
				certs []tls.Certificate
				want  bool
			}{{"no certificate", nil, tc.none}, {"the CA's", []tls.Certificate{good}, tc.good}, {"another CA's", []tls.Certificate{bad}, tc.bad}} {
				client := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
				if c.certs != nil {
					// Sent whatever CAs the server names (Go's client would hold back a
					// certificate they did not sign).
					client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c.certs[0], nil }
				}
				reply, err := tlsPing(addr, client)
				if got := err == nil && reply == "+PONG"; got != c.want {
					t.Errorf("client with %s: %q %v, want served %v", c.name, reply, err, c.want)
				}
			}
		})
		c := DefaultConfig()
		ParseConfig(strings.NewReader(tc.conf), "tls.conf", &c)
		if got, _ := c.Get("tls-auth-clients"); got != tc.authClientsValue {
			t.Errorf("%q: CONFIG GET tls-auth-clients = %q, want %q", tc.conf, got, tc.authClientsValue)
		}
	}
	if _, _, err := startTLS(t, t.TempDir(), "tls-auth-clients yes"); err == nil || !strings.Contains(err.Error(), "tls-auth-clients yes needs tls-ca-cert-file or tls-ca-cert-dir") {
		t.Errorf("tls-auth-clients yes without a CA: %v", err)
	}
}

// TestTLSProtocols: tls-protocols TLSv1.3 refuses a client that offers only TLS 1.2.
func TestTLSProtocols(t *testing.T) {
	addr, pool, err := startTLS(t, t.TempDir(), "tls-protocols TLSv1.3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tlsPing(addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("a TLS 1.2 client was served with tls-protocols TLSv1.3")
	}
	if reply, err := tlsPing(addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}); reply != "+PONG" {
		t.Errorf("TLS 1.3 client: %q %v", reply, err)
	}
}

// keepIdle returns TCP_KEEPIDLE of the server's side of its only client connection, or -1 when
// keepalives are off.
func keepIdle(t *testing.T, s *Server) int {
	t.Helper()
	var fd int
	var sc syscall.RawConn
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.connsMu.Lock()
		for c := range s.conns {
			if c.lp != nil {
				fd = c.fd
			} else if tc, ok := c.nc.(*net.TCPConn); ok {
				sc, _ = tc.SyscallConn()
			}
		}
		s.connsMu.Unlock()
		if fd != 0 || sc != nil || time.Now().After(deadline) {
			break
		}
	}
	get := func(fd int) int {
		if on, _ := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); on == 0 {
			return -1
		}
		v, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	switch {
	case fd != 0:
		return get(fd)
	case sc != nil:
		v := 0
		sc.Control(func(fd uintptr) { v = get(int(fd)) })
		return v
	}
	t.Fatal("no client connection")
	return 0
}

// TestTCPKeepAlive: tcp-keepalive sets the idle time before the first keepalive probe on new
// connections (Redis's default 300 s), 0 turns keepalives off, and CONFIG SET changes it for
// the connections made afterwards.
func TestTCPKeepAlive(t *testing.T) {
	for _, loops := range []int{testLoops, -1} {
		t.Run(fmt.Sprintf("io-threads=%d", loops), func(t *testing.T) {
			s := startServer(t, func(c *Config) { c.EventLoops = loops; c.TCPKeepAlive = 120 })
			c := dial(t, s.addr())
			c.do("PING")
			if got := keepIdle(t, s); got != 120 {
				t.Fatalf("TCP_KEEPIDLE %d, want 120", got)
			}
			if v := c.do("CONFIG", "SET", "tcp-keepalive", "0"); v.Text() != "OK" {
				t.Fatal(v)
			}
			c.nc.Close()
			for deadline := time.Now().Add(5 * time.Second); s.clients.Load() != 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			c2 := dial(t, s.addr())
			c2.do("PING")
			if got := keepIdle(t, s); got != -1 {
				t.Fatalf("tcp-keepalive 0: TCP_KEEPIDLE %d, want keepalives off", got)
			}
		})
	}
}
