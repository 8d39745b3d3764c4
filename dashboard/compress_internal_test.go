package dashboard

import "testing"

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]bool{
		"gzip": true, "gzip, deflate, br": true, "br;q=1.0, GZIP;q=0.5": true, "x-gzip": true, "*": true,
		"": false, "br": false, "identity": false, "gzip;q=0": false, "gzip; q=0.000": false,
		"*, gzip;q=0": false, "gzip;q=0, *": false, "*;q=0": false, "*;q=0, gzip": true,
	} {
		if got := acceptsGzip([]string{h}); got != want {
			t.Errorf("Accept-Encoding %q: accepts gzip %v, want %v", h, got, want)
		}
	}
}
