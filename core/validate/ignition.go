package validate

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/osstream"
	"gopkg.in/yaml.v3"
)

// minVersion is the oldest Ignition spec 3 that ignconfig.Parse accepts; it converts
// spec 2.0 to 2.2 as well.
const minVersion = "3.0.0"

// ignition checks the Ignition config at node cfg, reached from its document's root by
// at. file, when not nil, holds the exact bytes of the config, the whole file; otherwise
// cfg is converted to JSON, as the API server does with a MachineConfig's spec.config.
func (c *checker) ignition(cfg *yaml.Node, at path, file []byte) {
	raw := file
	if raw == nil {
		var err error
		if raw, err = manifest.ToJSON(cfg); err != nil {
			c.unconvertible(cfg, at, err)
			return
		}
	}
	parsed, rpt, err := ignconfig.Parse(raw)
	if errors.Is(err, ignerrors.ErrUnknownVersion) || errors.Is(err, ignerrors.ErrInvalidVersion) {
		c.version(cfg, at, err)
		return
	}
	if v := resolve(manifest.Lookup(cfg, "ignition", "version")); v != nil && ignconfig.IsSpec2(v.Value) {
		c.spec2(cfg, v, at, parsed, rpt, err)
		c.provisionOnly(cfg, at)
		return
	}
	for _, e := range rpt.Entries {
		c.entry(cfg, at, raw, file != nil, e)
	}
	if err == nil {
		c.refusals(cfg, at, parsed)
	}
	c.provisionOnly(cfg, at)
}

// refusals records, as errors, what Ignition accepts but the agent refuses (unit names
// that leave the unit directory, files on /dev, /proc or /sys, contents over the
// agent's default limits), so that the refusal comes before a rollout, not on a node.
// The parsed config's lists are in the order of the file's, so its indices lead back
// to the nodes.
func (c *checker) refusals(cfg *yaml.Node, at path, parsed types.Config) {
	for _, r := range ignconfig.Refusals(parsed, ignconfig.DefaultLimits()) {
		rel, _ := contextPath(r.Path)
		c.add(Error, locate(cfg, rel, false), at.with(rel...), "%s; the mcotui agent refuses such a config", r.Message)
	}
	c.runc(cfg, at, parsed)
}

// runc refuses a config that makes runc CRI-O's default runtime when its pool's stream
// is RHEL 10 (Options.OSImageStream), at the drop-in that decides it. It is judged
// alone: a later MachineConfig of the pool that sets crun would lift it, which render,
// given the pool's MachineConfigs, sees.
func (c *checker) runc(cfg *yaml.Node, at path, parsed types.Config) {
	if !osstream.IsRHEL10(c.opts.OSImageStream) {
		return
	}
	dropIn, runc, err := osstream.RuncDropIn(parsed)
	if err != nil || !runc {
		return // a broken drop-in is the agent's to refuse
	}
	i := slices.IndexFunc(parsed.Storage.Files, func(f types.File) bool { return f.Path == dropIn })
	rel := path{"storage", "files", i}
	pool := c.pool
	if pool == "" {
		pool = "of this config"
	}
	c.add(Error, locate(cfg, rel, false), at.with(rel...), "on OS image stream %s: %s", c.opts.OSImageStream, osstream.RuncRefusal(pool))
}

// spec2 records what converting the spec 2 config at cfg (version node v) to spec 3
// found. The conversion merges duplicates and reorders lists, so the converted config's
// paths do not lead back into the file: its problems are reported at the config.
func (c *checker) spec2(cfg, v *yaml.Node, at path, parsed types.Config, rpt report.Report, err error) {
	c.add(Warning, v, at.with("ignition", "version"), "Ignition spec %s is converted to spec %s as MCO converts it: of duplicate files and units the last one wins, the core user's SSH keys are merged without duplicates; write spec 3 to apply exactly what you write", v.Value, ignconfig.Version)
	for _, e := range rpt.Entries {
		sev := Warning
		if e.Kind == report.Error {
			sev = Error
		}
		msg := friendly(e.Message)
		if p := e.Context.String(); p != "" && p != "$" {
			msg = fmt.Sprintf("converted to spec %s: %s: %s", ignconfig.Version, p, msg)
		}
		c.add(sev, cfg, at, "%s", msg)
	}
	if err != nil && !rpt.IsFatal() {
		c.add(Error, cfg, at, "%v", err)
	}
	if err == nil {
		for _, r := range ignconfig.Refusals(parsed, ignconfig.DefaultLimits()) {
			c.add(Error, cfg, at, "converted to spec %s: %s; the mcotui agent refuses such a config", ignconfig.Version, r.Message)
		}
	}
}

// unconvertible records why the config at cfg has no JSON form, at the node to fix.
func (c *checker) unconvertible(cfg *yaml.Node, at path, err error) {
	if n, keys, msg := manifest.JSONProblem(cfg); n != nil {
		c.add(Error, n, at.with(typedPath(cfg, keys)...), "%s", msg)
		return
	}
	c.add(Error, cfg, at, "cannot be converted to JSON: %v", err)
}

// entry records one entry of Ignition's report. Validation entries name their field by
// a context path; parse errors (JSON syntax, a value of the wrong type) only by an offset
// in raw, which leads back to the field through raw's structure.
func (c *checker) entry(cfg *yaml.Node, at path, raw []byte, rawIsFile bool, e report.Entry) {
	sev := Warning
	if e.Kind == report.Error {
		sev = Error
	}
	msg := friendly(e.Message)
	if len(e.Context.Path) > 0 {
		rel, key := contextPath(e.Context.Path)
		c.add(sev, locate(cfg, rel, key), at.with(rel...), "%s", msg)
		return
	}
	if e.Marker.StartP == nil {
		c.add(sev, cfg, at, "%s", msg)
		return
	}
	off := e.Marker.StartP.Index
	if keys, ok := manifest.PathAtOffset(raw, off); ok {
		rel := typedPath(cfg, keys)
		c.add(sev, locate(cfg, rel, false), at.with(rel...), "%s", msg)
		return
	}
	if rawIsFile {
		// Not JSON up to the offset: a syntax error, at the byte before it.
		p := position(raw, off-1)
		c.addAt(sev, p.line, p.col, at, "invalid JSON: "+msg)
		return
	}
	c.add(sev, cfg, at, "%s", msg)
}

// version records why the config's spec version was refused: err is Ignition's
// ErrInvalidVersion or ErrUnknownVersion.
func (c *checker) version(cfg *yaml.Node, at path, err error) {
	at = at.with("ignition", "version")
	want := fmt.Sprintf("use a spec version from %s to %s", minVersion, ignconfig.Version)
	v := resolve(manifest.Lookup(cfg, "ignition", "version"))
	switch {
	case v == nil:
		c.add(Error, locate(cfg, path{"ignition", "version"}, false), at, "Ignition config has no spec version: %s", want)
	case v.Kind != yaml.ScalarNode || v.Value == "" || errors.Is(err, ignerrors.ErrInvalidVersion):
		c.add(Error, v, at, "%q is not an Ignition spec version: %s", v.Value, want)
	case strings.HasPrefix(v.Value, "1.") || strings.HasPrefix(v.Value, "2."):
		c.add(Error, v, at, "Ignition spec %s is not supported: %s (MCO converts spec %s only; translate other spec 2 configs to spec 3)", v.Value, want, strings.Join(ignconfig.Spec2Versions, ", "))
	default:
		c.add(Error, v, at, "Ignition spec %s is not supported: %s", v.Value, want)
	}
}

// typeError matches encoding/json's message for a value of the wrong type.
var typeError = regexp.MustCompile(`json: cannot unmarshal (\w+)(?: (\S+))? into Go (?:struct field \S+|value) of type (\S+)`)

// friendly rewrites encoding/json's type errors, which name Go types, in the terms of
// the JSON the user wrote: "must be an integer, not a string", and says what an unused
// key means. Other messages are kept.
// Ignition's types are plain structs, with no UnmarshalJSON method to make the Go type
// say less than the JSON accepts.
func friendly(msg string) string {
	if key, ok := strings.CutPrefix(msg, "unused key "); ok {
		return fmt.Sprintf("unknown key %q: Ignition ignores it", key)
	}
	return typeError.ReplaceAllStringFunc(msg, func(m string) string {
		sub := typeError.FindStringSubmatch(m)
		found, literal, want := sub[1], sub[2], jsonType(sub[3])
		if want == "" {
			return m
		}
		if literal != "" {
			return fmt.Sprintf("must be %s, not %s", want, literal)
		}
		return fmt.Sprintf("must be %s, not %s", want, article(found))
	})
}

// jsonType names the JSON a Go type is decoded from, or "" for a type it cannot tell.
func jsonType(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	}
	return ""
}

// article names a JSON value kind as encoding/json reports it.
func article(kind string) string {
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	case "string":
		return "a string"
	}
	return kind
}
