package web_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/server"
	"github.com/chromedp/chromedp"
)

type filtersReply struct {
	Total   int    `json:"total"`
	User    string `json:"user"`
	AllKeys bool   `json:"all_keys"`
	Filters []struct {
		Key, Name, Type string
	} `json:"filters"`
}

func (r filtersReply) names() []string {
	var out []string
	for _, f := range r.Filters {
		out = append(out, f.Name)
	}
	return out
}

// body returns the text the page's endpoint answers as user.
func body(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFiltersACL: the page and its API list, count and open only the filters the HTTP user
// may read, as its ACL key patterns say (a real ACL user of a real bloomd, over HTTP with basic
// auth). A user allowed ~allowed:* and +info sees allowed:*, and nothing of the others: not in
// the list, not in a count, not by search, not by address.
func TestFiltersACL(t *testing.T) {
	d := startBloomd(t, func(c *server.Config) {
		c.Users = []acl.Definition{
			{Name: "default", Rules: []string{"on", ">admin-pw", "~*", "&*", "+@all"}},
			{Name: "web", Rules: []string{"on", ">web-pw", "~allowed:*", "-@all", "+info"}},
			{Name: "reader", Rules: []string{"on", ">reader-pw", "%R~secret:*", "-@all", "+info"}},
			{Name: "writer", Rules: []string{"on", ">writer-pw", "%W~secret:*", "-@all", "+info"}},
			{Name: "noinfo", Rules: []string{"on", ">noinfo-pw", "~*", "-@all", "+bf.info"}},
		}
	}, "default", "admin-pw")
	d.do(t, "BF.ADD", "allowed:a", "x")
	d.do(t, "CF.ADD", "allowed:b", "x")
	d.do(t, "BF.ADD", "secret:x", "x")
	d.do(t, "CF.ADD", "secret:y", "x")
	d.do(t, "BF.ADD", "other", "x")

	list := func(user, pass, query string) filtersReply {
		t.Helper()
		var r filtersReply
		if code := getJSON(t, d.url+"api/filters?q="+query, user, pass, &r); code != 200 {
			t.Fatalf("api/filters?q=%s as %s: %d", query, user, code)
		}
		return r
	}
	if r := list("default", "admin-pw", ""); r.Total != 5 || !r.AllKeys || r.User != "default" {
		t.Errorf("as default: %d filters %v, all keys %v, user %q", r.Total, r.names(), r.AllKeys, r.User)
	}
	r := list("web", "web-pw", "")
	if r.Total != 2 || !slices.Equal(r.names(), []string{"allowed:a", "allowed:b"}) || r.AllKeys || r.User != "web" {
		t.Errorf("as web: %d filters %v, all keys %v, user %q; want allowed:a and allowed:b only", r.Total, r.names(), r.AllKeys, r.User)
	}
	// No query reveals the others, not even by a count.
	for _, q := range []string{"secret", "s", "*", "secret:*", "o", "*x*"} {
		if r := list("web", "web-pw", q); slices.ContainsFunc(r.names(), func(n string) bool { return !strings.HasPrefix(n, "allowed:") }) ||
			r.Total != len(r.names()) {
			t.Errorf("as web, q=%q: %d filters %v", q, r.Total, r.names())
		}
	}
	for _, path := range []string{"api/filters", "api/filters?q=*", "api/filters?q=secret"} {
		if _, text := body(t, d.url+path, "web", "web-pw"); strings.Contains(text, "secret") || strings.Contains(text, "other") {
			t.Errorf("%s as web names a key it may not read: %.300s", path, text)
		}
	}
	// By address: a key the user may not read answers as a key that does not exist.
	for _, path := range []string{"api/filter?key=secret:x", "api/filter?key=secret:y", "api/filter.svg?key=secret:x",
		"api/filter.svg?name=secret:x", "api/filter?key=other", "api/filter?key=nosuch"} {
		if code, text := body(t, d.url+path, "web", "web-pw"); code != 404 || strings.Contains(text, "secret") {
			t.Errorf("%s as web: %d %.200q; want 404 without the name", path, code, text)
		}
	}
	for _, path := range []string{"api/filter?key=allowed:a", "api/filter?key=allowed:b", "api/filter.svg?key=allowed:a"} {
		if code, _ := body(t, d.url+path, "web", "web-pw"); code != 200 {
			t.Errorf("%s as web: %d", path, code)
		}
	}
	// Read permission is what counts: %R~ lets a user see, %W~ does not.
	if r := list("reader", "reader-pw", ""); !slices.Equal(r.names(), []string{"secret:x", "secret:y"}) || r.Total != 2 {
		t.Errorf("as reader (%%R~secret:*): %d filters %v", r.Total, r.names())
	}
	if r := list("writer", "writer-pw", ""); len(r.names()) != 0 || r.Total != 0 {
		t.Errorf("as writer (%%W~secret:*): %d filters %v", r.Total, r.names())
	}
	// Without INFO, or with a wrong password, nothing.
	for _, up := range [][2]string{{"noinfo", "noinfo-pw"}, {"web", "wrong"}, {"nosuch", "x"}} {
		if code, _ := body(t, d.url+"api/filters", up[0], up[1]); code != 401 {
			t.Errorf("api/filters as %s/%s: %d, want 401", up[0], up[1], code)
		}
	}
	// The server's numbers are INFO's, which the user may run: the count of keys includes
	// those it may not read (as INFO keyspace shows it); their names appear nowhere.
	var srv struct {
		Info struct{ Keys int64 }
	}
	getJSON(t, d.url+"api/server", "web", "web-pw", &srv)
	if srv.Info.Keys != 5 {
		t.Errorf("api/server as web: %d keys, want 5 (INFO's count)", srv.Info.Keys)
	}
	// A change of the user's keys applies to its next request.
	d.do(t, "ACL", "SETUSER", "web", "~secret:*")
	if r := list("web", "web-pw", ""); r.Total != 4 {
		t.Errorf("after ACL SETUSER web ~secret:*: %d filters %v, want 4", r.Total, r.names())
	}
	d.do(t, "ACL", "SETUSER", "web", "resetkeys", "~allowed:*")

	t.Run("page", func(t *testing.T) {
		chromium := needChromium(t)
		b := newBrowser(t, chromium, "web", "web-pw")
		b.do(chromedp.Navigate(d.url))
		b.wait(`document.querySelectorAll('#filter-table tbody tr').length === 2`)
		if keys := b.rowKeys(); !slices.Equal(keys, []string{"allowed:a", "allowed:b"}) {
			t.Errorf("the page as web lists %v", keys)
		}
		if info, note, user := b.text(`#page-info`), b.text(`#filter-note`), b.text(`#user`); info != "1–2 of 2" ||
			!strings.Contains(note, "user web may read") || user != "user web" {
			t.Errorf("the page as web: %q, %q, %q", info, note, user)
		}
		if html := eval[string](b, `document.body.innerHTML`); strings.Contains(html, "secret") {
			t.Error("the page as web names a key it may not read")
		}
	})
}
