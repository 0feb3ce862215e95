// Package web serves bloomd's metrics port: Prometheus's /metrics (client_golang, with the Go
// runtime and process collectors) and a read-only page of the server's numbers, its filters
// (search and paging), each filter's false-positive rate as items grow, throughput and latency
// over the last ten minutes, and a sizing calculator with `bloom calc`'s formulas.
//
// Everything the page needs is embedded in the binary (embed.FS); it fetches nothing from
// elsewhere and works offline. Plots are SVG drawn by internal/plot on the server. Only GET
// and HEAD are served: nothing on the page changes the server. When the server has a password
// (requirepass), every path asks for HTTP basic auth with user "default" and that password, what
// Prometheus's basic_auth scrape setting sends.
package web
