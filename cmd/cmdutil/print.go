package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// PrintKubeObject prints v as JSON (indented as kubectl does) or YAML.
func PrintKubeObject(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// CheckOutput is the usage error (with a pointer to --help) for an --output that is
// not one of formats, nil for one that is.
func CheckOutput(output string, formats []string) error {
	if slices.Contains(formats, output) {
		return nil
	}
	return UsageHelp(fmt.Errorf("--output %q is not a format; use one of %s", output, strings.Join(formats, ", ")))
}
