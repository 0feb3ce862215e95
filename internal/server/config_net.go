package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Redis 7.0's network settings that bloomd implements beyond bind and port: tcp-keepalive, and
// the TLS settings that decide who may connect (tls-auth-clients with tls-ca-cert-file or
// tls-ca-cert-dir) and how (tls-protocols). TLS details that Go's crypto/tls decides itself
// (cipher suites, session caching, DH parameters) are listed in redisOnly.

// TLSSettings are the TLS settings beyond tls-port and the server's certificate, with
// redis.conf's names.
type TLSSettings struct {
	// AuthClients (tls-auth-clients) is "yes" (a client must present a certificate signed by
	// the CA), "optional" (a certificate, if presented, must be) or "no". "" is Redis's "yes"
	// when a CA is given, else "no": Redis refuses to start with yes and no CA, and bloomd
	// keeps serving TLS clients without certificates when no CA is set.
	AuthClients string
	CACertFile  string // tls-ca-cert-file: PEM file of the CA certificates clients' certificates are checked against
	CACertDir   string // tls-ca-cert-dir: a directory of PEM CA certificates
	// Protocols (tls-protocols) lists the versions offered, "TLSv1.2 TLSv1.3"; "" offers both.
	Protocols string
}

// authClients returns the effective tls-auth-clients.
func (t *TLSSettings) authClients() string {
	if t.AuthClients == "" {
		if t.CACertFile != "" || t.CACertDir != "" {
			return "yes"
		}
		return "no"
	}
	return t.AuthClients
}

func init() {
	tl := func(c *Config) *TLSSettings { return &c.TLS }
	params = append(params,
		param{"tcp-keepalive", true, func(c *Config) string { return strconv.Itoa(c.TCPKeepAlive) }, intParam(func(c *Config) *int { return &c.TCPKeepAlive }, 0, math.MaxInt32)},
		param{"tls-auth-clients", false, func(c *Config) string { return tl(c).authClients() }, func(c *Config, v string) error {
			switch v = strings.ToLower(v); v {
			case "yes", "no", "optional":
				tl(c).AuthClients = v
				return nil
			}
			return errors.New("argument must be 'yes', 'no' or 'optional'")
		}},
		param{"tls-ca-cert-file", false, func(c *Config) string { return tl(c).CACertFile }, func(c *Config, v string) error { tl(c).CACertFile = v; return nil }},
		param{"tls-ca-cert-dir", false, func(c *Config) string { return tl(c).CACertDir }, func(c *Config, v string) error { tl(c).CACertDir = v; return nil }},
		param{"tls-protocols", false, func(c *Config) string { return tl(c).Protocols }, func(c *Config, v string) error {
			if _, _, err := tlsVersions(v); err != nil {
				return err
			}
			tl(c).Protocols = strings.Join(strings.Fields(v), " ")
			return nil
		}},
	)
}

// tlsVersions returns the lowest and highest versions of a tls-protocols list.
func tlsVersions(list string) (lo, hi uint16, err error) {
	for _, p := range strings.Fields(list) {
		var v uint16
		switch strings.ToLower(p) {
		case "tlsv1.2":
			v = tls.VersionTLS12
		case "tlsv1.3":
			v = tls.VersionTLS13
		case "tlsv1", "tlsv1.1":
			return 0, 0, fmt.Errorf("bloomd offers TLS 1.2 and 1.3 only, not %s", p)
		default:
			return 0, 0, fmt.Errorf("%q is not a TLS version (TLSv1.2 or TLSv1.3)", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	return lo, hi, nil
}

// serverTLS returns the TLS configuration of the tls-port: the server's certificate, the
// versions of tls-protocols and, as tls-auth-clients says, the clients' certificates required or
// checked against the CAs of tls-ca-cert-file and tls-ca-cert-dir.
func serverTLS(cfg *Config) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("server: tls-cert-file/tls-key-file: %w", err)
	}
	lo, hi, err := tlsVersions(cfg.TLS.Protocols)
	if err != nil {
		return nil, fmt.Errorf("server: tls-protocols: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: lo, MaxVersion: hi}
	auth := cfg.TLS.authClients()
	if auth == "no" {
		return tc, nil
	}
	if cfg.TLS.CACertFile == "" && cfg.TLS.CACertDir == "" {
		return nil, errors.New("server: tls-auth-clients " + auth + " needs tls-ca-cert-file or tls-ca-cert-dir (or tls-auth-clients no)")
	}
	pool := x509.NewCertPool()
	if f := cfg.TLS.CACertFile; f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("server: tls-ca-cert-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: tls-ca-cert-file: %s holds no PEM certificate", f)
		}
	}
	if d := cfg.TLS.CACertDir; d != "" {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("server: tls-ca-cert-dir: %w", err)
		}
		found := false
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			// OpenSSL's hashed names (c_rehash) are links to PEM files: read what they point to.
			if pem, err := os.ReadFile(filepath.Join(d, e.Name())); err == nil {
				found = pool.AppendCertsFromPEM(pem) || found
			}
		}
		if !found {
			return nil, fmt.Errorf("server: tls-ca-cert-dir: %s holds no PEM certificate", d)
		}
	}
	tc.ClientCAs = pool
	tc.ClientAuth = tls.RequireAndVerifyClientCert
	if auth == "optional" {
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// keepAlive applies tcp-keepalive to a new client's connection (the TCP connection under a TLS
// one) as Redis does: the first probe after that many idle seconds, then one every third of it,
// three unanswered probes closing it; 0 sends none.
func (s *Server) keepAlive(nc net.Conn) {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	secs := s.keepalive.Load()
	if secs <= 0 {
		tc.SetKeepAlive(false)
		return
	}
	d := time.Duration(secs) * time.Second
	tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: d, Interval: max(d/3, time.Second), Count: 3})
}
