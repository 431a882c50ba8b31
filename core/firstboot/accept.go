package firstboot

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coreos/go-semver/semver"
)

// MediaType is Ignition's media type, which it names with the spec version it wants in
// its Accept header: "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1".
const MediaType = "application/vnd.coreos.ignition+json"

// Versions are the spec versions Serve writes, newest first.
var Versions = []semver.Version{
	{Major: 3, Minor: 5}, {Major: 3, Minor: 4}, {Major: 3, Minor: 3}, {Major: 3, Minor: 2},
	{Major: 3, Minor: 1}, {Major: 3, Minor: 0}, {Major: 2, Minor: 2},
}

// V22 is spec 2.2.0, which MCO serves to a client that names no version (curl, or an
// Ignition older than spec 3) and to every spec 2 client.
var V22 = semver.Version{Major: 2, Minor: 2}

// SpecVersion returns the spec version to serve a client whose Accept header is
// accept, by MCO's detectSpecVersionFromAcceptHeader: the media ranges in order of
// their q values; the first that is Ignition's type with a version decides. A 2.x
// version at or above 2.2 gets 2.2; a 3.x version gets that minor version, or 3.5 when
// it is newer than 3.5; any other version is an error (MCO answers it 400). A header
// without an Ignition version gets 2.2, as MCO serves curl.
func SpecVersion(accept string) (semver.Version, error) {
	type value struct {
		subtype string
		version *semver.Version
		q       float64
	}
	var values []value
	for _, part := range strings.Split(accept, ",") {
		params := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.TrimSpace(params[0]), "/")
		if !ok {
			continue
		}
		v := value{subtype: typ + "/" + sub, q: 1}
		haveQ := false
		for _, p := range params[1:] {
			key, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				continue
			}
			switch strings.TrimSpace(key) {
			case "version":
				if v.version == nil {
					if sv, err := semver.NewVersion(strings.TrimSpace(val)); err == nil {
						v.version = sv
					}
				}
			case "q":
				if !haveQ {
					if q, err := strconv.ParseFloat(strings.TrimSpace(val), 32); err == nil {
						v.q, haveQ = q, true
					}
				}
			}
		}
		values = append(values, v)
	}
	slices.SortStableFunc(values, func(a, b value) int { return cmp.Compare(b.q, a.q) })
	for _, v := range values {
		if v.subtype != MediaType || v.version == nil {
			continue
		}
		req := *v.version
		switch {
		case req.Major == 2 && !req.LessThan(V22):
			return V22, nil
		case req.Major == 3 && req.Minor > Versions[0].Minor:
			return Versions[0], nil
		}
		for _, s := range Versions {
			if s.Major == req.Major && s.Minor == req.Minor {
				return s, nil
			}
		}
		return semver.Version{}, fmt.Errorf("unsupported Ignition version %s in the Accept header %q: this server writes specs 3.0 to 3.5 and 2.2", req, accept)
	}
	return V22, nil
}
