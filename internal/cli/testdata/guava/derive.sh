#!/bin/sh
# derive.sh CASE.txt items|probes|want: the items Guava put, in order; the items it probed;
# its answers as bloom test prints them (maybe/no). CASE.txt is a record of guava/testdata
# (format in guava/testdata/README.md). Numbers are exact up to 2^53, as these cases need.
awk -F'\t' -v what="$2" '
  function mark(list,   n, a, i) { delete hit; all = (list == "*"); n = split(list, a, ","); for (i = 1; i <= n; i++) hit[a[i]] = 1 }
  what == "items" && $1 == "put"  { print $2 }
  what == "items" && $1 == "puts" { for (v = $2; v <= $3; v += $4) printf "%.0f\n", v }
  what != "items" && $1 == "probe" { print (what == "probes" ? $2 : ($3 == "true" ? "maybe" : "no")) }
  what != "items" && $1 == "probes" { mark($5); for (v = $2; v <= $3; v += $4) { s = sprintf("%.0f", v); print (what == "probes" ? s : ((all || (s in hit)) ? "maybe" : "no")) } }
' "$1"
