// Command mcotui rolls machine configuration out to Kubernetes nodes, speaking the API of
// OpenShift's Machine Config Operator. The command tree is in cmd/; main only hands it
// the process's files and the version.
package main

import (
	"os"

	"github.com/mcotui/mcotui/cmd"
	"github.com/mcotui/mcotui/cmd/cmdutil"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(cmd.Run(os.Args[1:], &cmdutil.Factory{
		IOStreams: cmdutil.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Version:   version,
	}))
}
