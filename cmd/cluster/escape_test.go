package cluster

import (
	"reflect"
	"testing"
)

// TestEscapeCells: a cell from the cluster cannot clear the screen or break the table.
func TestEscapeCells(t *testing.T) {
	got := escapeCells([]any{"worker", "a\x1b[2J\tb", 3})
	if want := []any{"worker", `a\x1b[2J\tb`, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("escapeCells = %q, want %q", got, want)
	}
}
