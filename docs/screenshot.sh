#!/bin/sh
# Makes docs/bloomd-page.png, the README's picture of bloomd's page, from a real run:
# TestPageNumbers (internal/web/page_test.go) starts bloomd on free loopback ports with its
# metrics port, loads it for about 40 seconds from four go-redis clients (Bloom and cuckoo
# adds and checks in pipelines, a bounded number of each, some failed and some refused
# calls), opens the page in headless Chromium at one filter's address, checks that the numbers
# shown agree with each other, and writes the screenshot (about 60 KB).
#
# Run from anywhere in the repository; needs Go and chromium.
set -eu
cd "$(dirname "$0")/.."
BLOOM_REQUIRE_CHROMIUM=1 BLOOM_SCREENSHOT="$PWD/docs/bloomd-page.png" \
	go test -count=1 -run '^TestPageNumbers$' -v ./internal/web/
