package validate

import "testing"

func TestPathString(t *testing.T) {
	tests := []struct {
		p    path
		want string
	}{
		{nil, "$"},
		{path{"spec", "config", "storage", "files", 0, "path"}, "$.spec.config.storage.files[0].path"},
		{path{"metadata", "labels", "machineconfiguration.openshift.io/role"}, "$.metadata.labels['machineconfiguration.openshift.io/role']"},
		{path{"a_1", "1a", "", "it's", `back\slash`, "tab\t"}, `$.a_1['1a']['']['it\'s']['back\\slash']['tab\u0009']`},
		{path{"ключ"}, "$['ключ']"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v: got %s, want %s", tt.p, got, tt.want)
		}
	}
}

func TestPathWithDoesNotShare(t *testing.T) {
	base := make(path, 1, 8)
	base[0] = "a"
	x, y := base.with("x"), base.with("y")
	if x.String() != "$.a.x" || y.String() != "$.a.y" {
		t.Errorf("with shares its array: %s %s", x, y)
	}
}
