// Package deploy holds what `mcotui install` applies that is not built from Go code: the
// CustomResourceDefinitions, copied from the github.com/openshift/api module by `go
// generate ./deploy` (gencrds), since go:embed cannot reach into another module. The
// Containerfile beside it builds the image the agent and controller run.
package deploy

import "embed"

//go:generate go run ./gencrds

// CRDs holds the CRDs under crds/*.yaml; TestInstallCRDsMatchModule (cmd/cluster) keeps
// them equal to the module's.
//
//go:embed crds/*.yaml
var CRDs embed.FS
