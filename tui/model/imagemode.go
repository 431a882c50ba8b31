package model

import (
	"cmp"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// MachineOSConfigEvent is an added or updated MachineOSConfig.
func MachineOSConfigEvent(m *mcfgv1.MachineOSConfig) Event {
	return Event{Kind: KindMachineOSConfig, MachineOSConfig: m}
}

// MachineOSBuildEvent is an added or updated MachineOSBuild.
func MachineOSBuildEvent(m *mcfgv1.MachineOSBuild) Event {
	return Event{Kind: KindMachineOSBuild, MachineOSBuild: m}
}

// OSImageStreamEvent is an added or updated OSImageStream.
func OSImageStreamEvent(s *mcfgv1.OSImageStream) Event {
	return Event{Kind: KindOSImageStream, OSImageStream: s}
}

// OSImageStreamName is the name of the one OSImageStream MCO reads (its CEL rule
// allows no other).
const OSImageStreamName = "cluster"

// imageObjects are image mode's objects and the cluster's OS streams: a MachineOSConfig
// per image mode pool, a MachineOSBuild per build (MCO keeps a few per pool), and
// OSImageStream/cluster. Tens of objects, rarely changing: the sorted lists are rebuilt
// on each change.
type imageObjects struct {
	moscs    map[string]*mcfgv1.MachineOSConfig
	moscList []*mcfgv1.MachineOSConfig
	mosbs    map[string]*mcfgv1.MachineOSBuild
	mosbList []*mcfgv1.MachineOSBuild // by MachineOSConfig, then newest first
	stream   *mcfgv1.OSImageStream
}

func newImageObjects() imageObjects {
	return imageObjects{moscs: map[string]*mcfgv1.MachineOSConfig{}, mosbs: map[string]*mcfgv1.MachineOSBuild{}}
}

func (im *imageObjects) apply(e Event, name string, ch *Changes) {
	if name == "" {
		return
	}
	switch e.Kind {
	case KindMachineOSConfig:
		applyNamed(im.moscs, name, e.MachineOSConfig, e.Deleted)
		im.moscList = sortedValues(im.moscs, func(m *mcfgv1.MachineOSConfig) string { return m.Name })
	case KindMachineOSBuild:
		applyNamed(im.mosbs, name, e.MachineOSBuild, e.Deleted)
		im.mosbList = im.mosbList[:0]
		for _, b := range im.mosbs {
			im.mosbList = append(im.mosbList, b)
		}
		slices.SortFunc(im.mosbList, func(a, b *mcfgv1.MachineOSBuild) int {
			return cmp.Or(cmp.Compare(a.Spec.MachineOSConfig.Name, b.Spec.MachineOSConfig.Name),
				b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
	case KindOSImageStream:
		if name != OSImageStreamName {
			return
		}
		im.stream = e.OSImageStream
		if e.Deleted {
			im.stream = nil
		}
	default:
		return
	}
	ch.Builds = true
}

// MachineOSConfigs returns every MachineOSConfig, sorted by name. The slice is the
// store's own: read it, don't keep it across an Apply.
func (s *Store) MachineOSConfigs() []*mcfgv1.MachineOSConfig { return s.images.moscList }

// MachineOSBuilds returns every MachineOSBuild, by MachineOSConfig and then newest
// first. The slice is the store's own.
func (s *Store) MachineOSBuilds() []*mcfgv1.MachineOSBuild { return s.images.mosbList }

// MachineOSBuild returns the MachineOSBuild named name, or nil.
func (s *Store) MachineOSBuild(name string) *mcfgv1.MachineOSBuild { return s.images.mosbs[name] }

// MachineOSConfig returns the MachineOSConfig named name, or nil.
func (s *Store) MachineOSConfig(name string) *mcfgv1.MachineOSConfig { return s.images.moscs[name] }

// OSImageStream returns OSImageStream/cluster, or nil when the cluster has none (or
// does not serve the API: clusters older than OSStreams).
func (s *Store) OSImageStream() *mcfgv1.OSImageStream { return s.images.stream }
