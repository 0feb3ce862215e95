package server

// globMatch reports whether s matches the glob pattern as Redis's stringmatchlen does (KEYS,
// SCAN MATCH, CONFIG GET): '*' any run of bytes, '?' one byte, '[abc]', '[^a-z]' classes
// (reversed ranges allowed, an unclosed class runs to the end of the pattern), '\' escapes.
// Unlike a naive recursive matcher it backtracks only to the last '*', so its cost is
// O(len(pattern)·len(s)) for any pattern.
func globMatch(pattern, s []byte) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch p := pattern[px]; p {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			case '[':
				if sx < len(s) {
					if ok, next := matchClass(pattern, px, s[sx]); ok {
						px = next
						sx++
						continue
					}
				}
			case '\\':
				lit, next := byte('\\'), px+1
				if px+1 < len(pattern) {
					lit, next = pattern[px+1], px+2
				}
				if sx < len(s) && s[sx] == lit {
					px = next
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == p {
					px++
					sx++
					continue
				}
			}
		}
		if starPx >= 0 && starSx < len(s) {
			starSx++
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// matchClass matches c against the class that starts at pattern[px] == '[' and returns the
// index just past the class.
func matchClass(p []byte, px int, c byte) (bool, int) {
	i := px + 1
	not := i < len(p) && p[i] == '^'
	if not {
		i++
	}
	match := false
	for ; ; i++ {
		switch {
		case i >= len(p):
			return match != not, len(p) // unclosed: the class takes the rest of the pattern
		case p[i] == '\\' && len(p)-i >= 2:
			i++
			if p[i] == c {
				match = true
			}
		case p[i] == ']':
			return match != not, i + 1
		case len(p)-i >= 3 && p[i+1] == '-':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo <= c && c <= hi {
				match = true
			}
			i += 2
		case p[i] == c:
			match = true
		}
	}
}
