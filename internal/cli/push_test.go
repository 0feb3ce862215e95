package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
)

// startBloomd runs a real bloomd in this process on a free loopback port (servertest.Start) and
// returns its address. With a TLS certificate it serves TLS on that port.
func startBloomd(t *testing.T, password string, cert *tls.Certificate) (string, *server.Server) {
	t.Helper()
	opt := &servertest.Options{Config: func(cfg *server.Config) { cfg.Requirepass = password }}
	if cert != nil {
		opt.Listener = func(ln net.Listener) net.Listener {
			return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
		}
	}
	s, addr := servertest.Start(t, opt)
	return addr, s
}

// exec runs one command on s and returns its raw RESP reply.
func exec(s *server.Server, args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return string(s.Exec(b...))
}

// A RedisBloom dump pushed to bloomd and pulled back is the same file, byte for byte; the
// server answers for every item.
func TestPushPullRoundTrip(t *testing.T) {
	addr, s := startBloomd(t, "", nil)
	dump := tempPath(t, "seen.bfdump")
	run(t, numbers(1, 5000), "build", "--type", "scalable", "--format", "redisbloom", "-n", "1000", "-o", dump).ok(t)

	url := "redis://" + addr + "/crawler:seen"
	out := run(t, "", "push", dump, url).ok(t)
	if !strings.Contains(out, "pushed "+dump+" to "+url) || !strings.Contains(out, "in 3 chunks") {
		t.Errorf("push said %q", out)
	}
	if got := exec(s, "BF.EXISTS", "crawler:seen", "4321"); got != ":1\r\n" {
		t.Errorf("BF.EXISTS of a pushed item: %q", got)
	}
	if got := exec(s, "BF.EXISTS", "crawler:seen", "no such item"); got != ":0\r\n" {
		t.Errorf("BF.EXISTS of an absent item: %q", got)
	}
	if got := exec(s, "KEYS", "*"); strings.Contains(got, "bloom-push") {
		t.Errorf("the temporary key was left behind: %q", got)
	}

	back := tempPath(t, "back.bfdump")
	out = run(t, "", "pull", url, back).ok(t)
	if !strings.Contains(out, "pulled "+url+" to "+back) {
		t.Errorf("pull said %q", out)
	}
	if !bytes.Equal(mustRead(t, back), mustRead(t, dump)) {
		t.Error("pushed and pulled dump differs from the original")
	}

	// --progress draws on stderr, never on stdout.
	r := run(t, "", "push", "--progress", "--force", dump, url)
	if r.ok(t); !strings.Contains(r.stderr, "pushing") || strings.Contains(r.stdout, "pushing") {
		t.Errorf("push --progress: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = run(t, "", "pull", "--progress", "--force", url, back)
	if r.ok(t); !strings.Contains(r.stderr, "pulling") {
		t.Errorf("pull --progress: stderr %q", r.stderr)
	}

	// The server's own additions come back too.
	exec(s, "BF.ADD", "crawler:seen", "added on the server")
	run(t, "", "pull", "--force", url, back).ok(t)
	if got := run(t, "", "test", back, "added on the server", "4999").ok(t); got != "maybe\nmaybe\n" {
		t.Errorf("pulled filter answers %q", got)
	}

	// A filter made on the server pulls into a native file while it has one sub-filter.
	exec(s, "BF.RESERVE", "small", "0.01", "1000")
	exec(s, "BF.ADD", "small", "x")
	native := tempPath(t, "small.bloom")
	run(t, "", "pull", "redis://"+addr+"/small", native, "--to", "native").ok(t)
	if got := run(t, "", "test", native, "x", "y").stdout; got != "maybe\nno\n" {
		t.Errorf("native pull answers %q", got)
	}
	// ... and a native redisbloom64 classic filter pushes as a one-link chain.
	run(t, "", "push", native, "redis://"+addr+"/small2").ok(t)
	if got := exec(s, "BF.EXISTS", "small2", "x"); got != ":1\r\n" {
		t.Errorf("BF.EXISTS after pushing a native filter: %q", got)
	}
}

func TestPushRefusals(t *testing.T) {
	addr, s := startBloomd(t, "", nil)
	dump := tempPath(t, "f.bfdump")
	run(t, numbers(1, 100), "build", "--format", "redisbloom", "-n", "1000", "-o", dump).ok(t)
	url := "redis://" + addr + "/k"
	run(t, "", "push", dump, url).ok(t)
	// An existing key is replaced only with --force.
	run(t, "", "push", dump, url).fails(t, "already exists", "--force")
	exec(s, "BF.ADD", "k", "only on the server")
	run(t, "", "push", "--force", dump, url).ok(t)
	if got := exec(s, "BF.EXISTS", "k", "only on the server"); got != ":0\r\n" {
		t.Errorf("--force did not replace the filter: %q", got)
	}
	// Filters RedisBloom cannot hold are refused before connecting.
	guavaFile := testdata("guava/longs.guava")
	run(t, "", "push", "--from", "guava", guavaFile, url).fails(t, "cannot be pushed", "guava64 cannot be held by RedisBloom")
	run(t, "", "push", dump, "http://"+addr+"/k").fails(t, "not a filter URL")
	run(t, "", "push", dump).fails(t, "missing arguments")
	// Nothing listens on a closed port.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	run(t, "", "push", dump, "redis://"+closed+"/k").fails(t, "cannot connect to "+closed, "is the server running")
}

func TestPushPullPassword(t *testing.T) {
	addr, _ := startBloomd(t, "s3cret", nil)
	dump := tempPath(t, "f.bfdump")
	run(t, numbers(1, 100), "build", "--format", "redisbloom", "-n", "1000", "-o", dump).ok(t)
	r := run(t, "", "push", dump, "redis://"+addr+"/k")
	r.fails(t, "refused us", "REDISCLI_AUTH")
	r = run(t, "", "push", dump, "redis://:wrong@"+addr+"/k")
	r.fails(t, "refused us")
	if strings.Contains(r.stderr, "wrong") && !strings.Contains(r.stderr, "WRONGPASS") {
		t.Errorf("the password shows in %q", r.stderr)
	}
	run(t, "", "push", dump, "redis://:s3cret@"+addr+"/k").ok(t)
	t.Setenv("REDISCLI_AUTH", "s3cret")
	run(t, "", "pull", "redis://"+addr+"/k", tempPath(t, "back")).ok(t)
}

// rediss:// speaks TLS to a bloomd serving TLS, trusting the CA given with --cacert.
func TestPushPullTLS(t *testing.T) {
	cert, caFile := selfSigned(t)
	addr, _ := startBloomd(t, "", &cert)
	dump := tempPath(t, "f.bfdump")
	run(t, numbers(1, 100), "build", "--format", "redisbloom", "-n", "1000", "-o", dump).ok(t)
	url := "rediss://" + addr + "/k"
	run(t, "", "push", dump, url).fails(t, "TLS with "+addr+" failed", "--cacert")
	run(t, "", "push", "--cacert", caFile, dump, url).ok(t)
	back := tempPath(t, "back")
	run(t, "", "pull", "--insecure", url, back).ok(t)
	if !bytes.Equal(mustRead(t, back), mustRead(t, dump)) {
		t.Error("TLS round trip changed the dump")
	}
	run(t, "", "push", "--cacert", caFile, dump, "redis://"+addr+"/k").fails(t, "use a rediss:// URL")
}

// selfSigned returns a certificate for 127.0.0.1 and the path of a PEM file that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bloomd test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile
}
