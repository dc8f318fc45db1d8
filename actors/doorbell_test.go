package actors

import (
	"testing"

	"github.com/wraptool/wraptool/messages"
)

// ring never blocks, and a burst rung while nobody listens is one ring.
func TestRingCollapsesABurstAndNeverBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		d     messages.Doorbell
		rings int
		want  int
	}{
		{"one ring on an empty doorbell is kept", make(messages.Doorbell, 1), 1, 1},
		{"a burst of rings is one", make(messages.Doorbell, 1), 5, 1},
		{"a ring nobody can take is dropped, not waited on", make(messages.Doorbell), 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range tt.rings {
				ring(tt.d) // a blocking ring would hang the test here
			}
			if got := drain(tt.d); got != tt.want {
				t.Errorf("rings pending = %d, want %d", got, tt.want)
			}
		})
	}
}
