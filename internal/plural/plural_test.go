package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 messages"}, {1, "1 message"}, {2, "2 messages"}, {-1, "-1 messages"}} {
		if got := Count(c.n, "message", "messages"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Count(uint8(1), "process serves", "processes serve"); got != "1 process serves" {
		t.Errorf("Count(uint8 1) = %q", got)
	}
}
