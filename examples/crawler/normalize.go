package main

import (
	"errors"
	"net/url"
	"path"
	"strings"
)

// Normalize returns the canonical spelling of ref, resolved against base (nil: ref must be
// absolute), so that two spellings of one page hash alike:
//
//   - scheme and host in lower case, and the default port (80 for http, 443 for https) dropped;
//   - the fragment dropped (it never reaches the server);
//   - percent-encoding made canonical: escapes of unreserved characters (letters, digits,
//     "-._~") decoded, other escapes in upper-case hex (RFC 3986 section 6.2.2);
//   - dot segments removed, an empty path made "/", and a trailing slash dropped (except the
//     root's): this crawler treats "/a/" and "/a" as one page, as most sites serve them;
//   - an empty query ("?" alone) dropped.
//
// Only http and https URLs are accepted. net/url does the parsing and resolution; the rules
// above are the few lines of RFC 3986's syntax-based normalisation, written here because none of
// the reachable libraries is both maintained and exactly this.
func Normalize(base *url.URL, ref string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", err
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("crawler: not an http or https URL: " + ref)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", errors.New("crawler: no host in " + ref)
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	if port != "" {
		host += ":" + port
	}
	p := canonicalEscapes(u.EscapedPath())
	if p == "" {
		p = "/"
	}
	p = path.Clean(p) // also drops the trailing slash: see the doc comment
	q := canonicalEscapes(u.RawQuery)
	s := u.Scheme + "://" + host + p
	if q != "" {
		s += "?" + q
	}
	return s, nil
}

// canonicalEscapes decodes escapes of unreserved characters and upper-cases the hex of the rest.
func canonicalEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c := unhex(s[i+1])<<4 | unhex(s[i+2])
			if unreserved(c) {
				b.WriteByte(c)
			} else {
				b.WriteString("%" + strings.ToUpper(s[i+1:i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
