// Package web serves bloomd's metrics port: Prometheus's /metrics (client_golang, with the Go
// runtime and process collectors) and a read-only page of the server's numbers, its filters,
// Bloom and cuckoo (search and paging), each filter's facts (BF.INFO's or CF.INFO's) and, for a
// Bloom filter, its false-positive rate as items grow, throughput and latency over the last ten
// minutes, and a sizing calculator with `bloom calc`'s formulas.
//
// Everything the page needs is embedded in the binary (embed.FS); it fetches nothing from
// elsewhere and works offline. The filter and calculator plots are SVG drawn by internal/plot on
// the server; the throughput chart is drawn by the page, which measures its labels before it
// sets its margins. Only GET and HEAD are served: nothing on the page changes the server.
//
// Each filter has an address, /#/filter/KEY, where KEY is the name's bytes percent-encoded by
// the server (escapeKey): key names are any bytes, and the address names them exactly. Names
// are shown as text (never parsed as HTML), quoted when they are not printable UTF-8.
//
// Who may read: when the default user needs no password, a request without credentials reads
// as the default user; otherwise, and whenever a request sends HTTP basic auth, it reads as the
// user those credentials authenticate, which must be allowed to run INFO (what Prometheus's
// basic_auth scrape setting sends). The page and its API list, count and open only the filters
// that user may read by its ACL key patterns (~ or %R~); a filter it may not read answers as one
// that does not exist (TestFiltersACL). The server's numbers are INFO's, which that user may run
// anyway: the count of keys includes the keys it may not read. /metrics is the same for every
// user: its per-filter series cover the filters the operator selects with
// metrics-filter-pattern.
//
// Tests: TestPage and TestPageNumbers load the page in headless Chromium (skipped without it
// unless BLOOM_REQUIRE_CHROMIUM=1); TestPageNumbers puts a real load on bloomd and checks that
// the numbers shown agree, and with BLOOM_SCREENSHOT set makes the README's screenshot
// (docs/screenshot.sh).
package web
