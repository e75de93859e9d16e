# tests/gpu/numcmp.awk: compares two outputs token by token: numbers
# within a relative tolerance `rel` (and absolute `abs` near zero), every
# other token exactly.  Usage: awk -v rel=1e-4 -v abs=1e-6 -f numcmp.awk
# EXPECTED GOT; prints the first difference and exits 1.
function tokens(file, t,    n, line, s) {
	n = 0
	while ((getline line < file) > 0) {
		gsub(/[][(),:=]/, " & ", line)
		s = split(line, parts, /[ \t]+/)
		for (i = 1; i <= s; i++)
			if (parts[i] != "")
				t[++n] = parts[i]
	}
	close(file)
	return n
}
function num(s) {
	return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/
}
BEGIN {
	if (rel == "") rel = 1e-4
	if (abs == "") abs = 1e-6
	na = tokens(ARGV[1], a)
	nb = tokens(ARGV[2], b)
	if (na != nb) {
		printf "    %d tokens expected, %d got\n", na, nb
		exit 1
	}
	for (k = 1; k <= na; k++) {
		if (a[k] == b[k])
			continue
		if (num(a[k]) && num(b[k])) {
			x = a[k] + 0; y = b[k] + 0
			d = x - y; if (d < 0) d = -d
			m = x < 0 ? -x : x; my = y < 0 ? -y : y
			if (my > m) m = my
			if (d <= abs || d <= rel * m)
				continue
		}
		printf "    token %d: expected '%s', got '%s'\n", k, a[k], b[k]
		exit 1
	}
	exit 0
}
