// Command crawler crawls a site with several workers that share one Bloom filter of the URLs
// already queued, and normalises every URL before it is hashed, so that two spellings of one
// page ("HTTP://Site.Example:80/a/%7Euser/#top" and "http://site.example/a/~user") are crawled
// once. It runs the crawl twice, with raw URLs and with normalised ones, against a local site
// whose pages link to each other under many spellings, and prints the fetches each made.
//
//	go run ./examples/crawler
//	go run ./examples/crawler -pages 20000 -workers 16
//	go run ./examples/crawler -redis 127.0.0.1:6379   # the filter in Redis, shared by crawler processes
//
// The site is served on a free loopback port; its host name is site.example, which the
// crawler's HTTP transport dials to that port. The server counts the fetches of each page, which
// is the ground truth the crawl is checked against. The counts printed are the same in every
// run and with any number of workers (crawl says how); only the times differ.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guard"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

func main() {
	if _, err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h or -help: the flag package has printed the usage; asking is no error
		}
		log.Fatal(err)
	}
}

// result is one crawl's measurement.
type result struct {
	normalised bool
	fetches    int64 // requests the site served
	distinct   int   // pages fetched at least once
	queued     int64 // URLs the filter took as new
	links      int64 // links seen
	elapsed    time.Duration
}

func run(args []string, out io.Writer) ([]result, error) {
	fs := flag.NewFlagSet("crawler", flag.ContinueOnError)
	pages := fs.Int("pages", 2000, "pages of the site")
	links := fs.Int("links", 8, "links per page")
	workers := fs.Int("workers", 8, "crawler workers sharing the filter")
	p := fs.Float64("p", 0.0001, "false-positive rate of the filter")
	redisAddr := fs.String("redis", "", "keep the filter in this Redis (or bloomd) server instead of in process")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *pages <= 0 || *links <= 0 || *workers <= 0 || !(*p > 0 && *p < 1) {
		return nil, errors.New("crawler: -pages, -links and -workers must be positive, 0 < -p < 1")
	}
	fmt.Fprintf(out, "site of %d pages, %d links a page under random spellings; %d workers\n", *pages, *links, *workers)
	var results []result
	for _, norm := range []bool{false, true} {
		site := newSite(*pages, *links)
		var seen guard.Filter
		if *redisAddr != "" {
			c := redis.NewClient(&redis.Options{Addr: *redisAddr})
			defer c.Close()
			name := fmt.Sprintf("crawler.%d", time.Now().UnixNano())
			f, err := redisfilter.New(context.Background(), c, name, uint64(*pages**links), *p, nil)
			if err != nil {
				return nil, err
			}
			defer f.Delete(context.Background())
			seen = f
		} else {
			// Sized for every link, in case none were duplicates: the worst case of a crawl.
			f, err := bloom.New(uint64(*pages**links), *p)
			if err != nil {
				return nil, err
			}
			seen = guard.InProcess(f)
		}
		r, err := crawl(site, seen, *workers, norm)
		site.close()
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	fmt.Fprintf(out, "%-11s %8s %8s %8s %8s %10s\n", "URLs", "links", "queued", "fetches", "pages", "time")
	for _, r := range results {
		name := "raw"
		if r.normalised {
			name = "normalised"
		}
		fmt.Fprintf(out, "%-11s %8d %8d %8d %8d %10s\n", name, r.links, r.queued, r.fetches, r.distinct, r.elapsed.Round(time.Millisecond))
	}
	return results, nil
}

// site is the local web site: page i at /page/i links to random pages, each under a random
// spelling of its URL.
type site struct {
	pages, links int
	srv          *http.Server
	addr         string
	mu           sync.Mutex
	hits         []int // fetches per page
	fetches      atomic.Int64
}

var pagePath = regexp.MustCompile(`^/page/([0-9]+)$`)

func newSite(pages, links int) *site {
	s := &site{pages: pages, links: links, hits: make([]int, pages)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err) // a loopback listener always works where this example runs
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s
}

func (s *site) close() { s.srv.Close() }

// serve answers a page by its canonical path only, as a strict server would; anything the
// crawler failed to normalise is a 404 and still counts as a fetch.
func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.fetches.Add(1)
	p := strings.TrimSuffix(r.URL.Path, "/") // the server takes /page/1/ as /page/1
	m := pagePath.FindStringSubmatch(p)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= s.pages {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.hits[i]++
	s.mu.Unlock()
	rng := rand.New(rand.NewPCG(uint64(i), 7)) // a page's links are fixed
	var b strings.Builder
	b.WriteString("<html><body>\n")
	for range s.links {
		fmt.Fprintf(&b, "<a href=\"%s\">link</a>\n", spelling(rng, rng.IntN(s.pages)))
	}
	b.WriteString(`<a href="https://elsewhere.example/">another site</a>` + "\n</body></html>\n")
	io.WriteString(w, b.String())
}

// spelling returns one of many spellings of page i's URL.
func spelling(rng *rand.Rand, i int) string {
	host := "site.example"
	scheme := "http"
	path := "/page/" + strconv.Itoa(i)
	if rng.IntN(3) == 0 {
		host = "SITE.Example"
	}
	if rng.IntN(3) == 0 {
		scheme = "HTTP"
	}
	if rng.IntN(3) == 0 {
		host += ":80"
	}
	if rng.IntN(3) == 0 { // a percent-encoded digit
		d := strconv.Itoa(i)
		path = "/page/%3" + d[:1] + d[1:]
	}
	if rng.IntN(3) == 0 {
		path += "/"
	}
	if rng.IntN(4) == 0 {
		path = "/page/../page" + strings.TrimPrefix(path, "/page")
	}
	if rng.IntN(3) == 0 {
		path += "#section-" + strconv.Itoa(rng.IntN(3))
	}
	if rng.IntN(2) == 0 { // relative to the page that links
		return path
	}
	return scheme + "://" + host + path
}

var hrefs = regexp.MustCompile(`href="([^"]*)"`)

// crawl fetches the site from its first page with workers sharing the frontier and the filter.
//
// Workers fetch in parallel, but each queues the links it found only when every URL queued
// before its own has had its links queued: the filter sees the URLs in the same order in every
// run, whatever the timing, so its false positives (a new URL taken for one already queued)
// and the counts printed are the same from run to run. The turn also makes the in-process
// filter's Add a test-and-set: of two workers that find one URL, exactly one is told it is new
// (bloom.Filter's Add alone reads the bits and sets them without a lock, and could tell both).
func crawl(s *site, seen guard.Filter, workers int, normalise bool) (result, error) {
	ctx := context.Background()
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: workers,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, s.addr) // site.example is served here
			},
		},
	}
	var (
		links, queued atomic.Int64
		firstErr      error
		mu            sync.Mutex
		turn          = sync.NewCond(&mu)
		frontier      []string // every URL queued, in order
		taken         int      // frontier[:taken] have been handed to a worker
		done          int      // frontier[:done] have had their links queued
	)
	// enqueue adds the URLs found on a page, in the order found, to the filter and the
	// frontier's end; it runs only in the turn of the page's URL.
	enqueue := func(base *url.URL, refs []string) error {
		for _, ref := range refs {
			links.Add(1)
			key := ref
			if normalise {
				n, err := Normalize(base, ref)
				if err != nil {
					continue
				}
				key = n
			} else if base != nil {
				u, err := base.Parse(ref) // resolved, but spelled as found
				if err != nil {
					continue
				}
				key = u.String()
			}
			if !strings.Contains(strings.ToLower(key), "site.example") {
				continue // another site
			}
			isNew, err := seen.Add(ctx, []byte(key))
			if err != nil {
				return err
			}
			if isNew {
				queued.Add(1)
				mu.Lock()
				frontier = append(frontier, key)
				mu.Unlock()
			}
		}
		return nil
	}
	start := time.Now()
	if err := enqueue(nil, []string{"http://site.example/page/0"}); err != nil {
		return result{}, err
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				for taken == len(frontier) && done < len(frontier) && firstErr == nil {
					turn.Wait() // nothing to take until a page in flight queues its links
				}
				if taken == len(frontier) || firstErr != nil {
					mu.Unlock()
					return // every page crawled, or an error stopped the crawl
				}
				i, raw := taken, frontier[taken]
				taken++
				mu.Unlock()

				var refs []string // a page that cannot be fetched queues nothing
				body, base, err := fetch(client, raw)
				if err == nil {
					for _, m := range hrefs.FindAllStringSubmatch(body, -1) {
						refs = append(refs, m[1])
					}
				}

				mu.Lock()
				for done != i && firstErr == nil {
					turn.Wait() // the pages queued before this one queue their links first
				}
				stopped := firstErr != nil
				mu.Unlock()
				var qerr error
				if !stopped {
					qerr = enqueue(base, refs)
				}
				mu.Lock()
				if qerr != nil && firstErr == nil {
					firstErr = qerr
				}
				done++
				turn.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return result{}, firstErr
	}
	r := result{normalised: normalise, fetches: s.fetches.Load(), queued: queued.Load(), links: links.Load(), elapsed: time.Since(start)}
	s.mu.Lock()
	for _, h := range s.hits {
		if h > 0 {
			r.distinct++
		}
	}
	s.mu.Unlock()
	return r, nil
}

func fetch(c *http.Client, raw string) (string, *url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	resp, err := c.Get(raw)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), u, err
}
