package validate

import "testing"

func TestFriendly(t *testing.T) {
	tests := []struct{ in, want string }{
		{"json: cannot unmarshal string into Go struct field File.storage.files.FileEmbedded1.mode of type int", "must be an integer, not a string"},
		{"json: cannot unmarshal number into Go struct field .Ignition.Version of type string", "must be a string, not a number"},
		{"json: cannot unmarshal object into Go struct field Storage.storage.files of type []types.File", "must be a list, not an object"},
		{"json: cannot unmarshal string into Go struct field File.overwrite of type *bool", "must be true or false, not a string"},
		{"json: cannot unmarshal number 1e2 into Go struct field File.mode of type int", "must be an integer, not 1e2"},
		{"json: cannot unmarshal array into Go value of type types.Config", "json: cannot unmarshal array into Go value of type types.Config"},
		{"unused key sytemd", `unknown key "sytemd": Ignition ignores it`},
		{"path not absolute", "path not absolute"},
	}
	for _, tt := range tests {
		if got := friendly(tt.in); got != tt.want {
			t.Errorf("friendly(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
