package rollout_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/rollout"
)

func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		value   *intstr.IntOrString
		pool    string
		nodes   int
		want    int
		wantErr string
	}{
		{name: "unset is 1", nodes: 10, want: 1},
		{name: "integer", value: ptr(intstr.FromInt32(3)), nodes: 10, want: 3},
		{name: "integer above the node count", value: ptr(intstr.FromInt32(30)), nodes: 10, want: 30},
		{name: "zero becomes 1", value: ptr(intstr.FromInt32(0)), nodes: 10, want: 1},
		{name: "percent rounds down", value: ptr(intstr.FromString("50%")), nodes: 5, want: 2},
		{name: "percent rounding to 0 becomes 1", value: ptr(intstr.FromString("10%")), nodes: 5, want: 1},
		{name: "100 percent", value: ptr(intstr.FromString("100%")), nodes: 7, want: 7},
		{name: "percent of no nodes", value: ptr(intstr.FromString("50%")), nodes: 0, want: 1},
		{name: "arbiter is always 1", value: ptr(intstr.FromString("100%")), pool: "arbiter", nodes: 3, want: 1},
		{name: "string that is not a percent", value: ptr(intstr.FromString("2")), nodes: 5, wantErr: `machineconfigpool worker: spec.maxUnavailable 2: invalid value for IntOrString: invalid type: string is not a percentage; set an integer`},
		{name: "fractional percent", value: ptr(intstr.FromString("10.5%")), nodes: 5, wantErr: `spec.maxUnavailable 10.5%`},
		{name: "negative integer", value: ptr(intstr.FromInt32(-1)), nodes: 5, wantErr: `machineconfigpool worker: spec.maxUnavailable -1 is negative`},
		{name: "negative percent", value: ptr(intstr.FromString("-50%")), nodes: 4, wantErr: `spec.maxUnavailable -50% is negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pool()
			if tt.pool != "" {
				p.Name = tt.pool
			}
			p.Spec.MaxUnavailable = tt.value
			got, err := rollout.MaxUnavailable(p, tt.nodes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("MaxUnavailable = %d, want %d", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
