package cmdutil

import (
	"context"

	"github.com/spf13/cobra"
)

// Options are a command's options in kubectl's pkg/cmd style: Complete fills them from
// the command's flags, arguments, environment and Factory; Validate checks them (usage
// errors, exit 2) without touching the cluster or the disk; Run does the work.
type Options interface {
	Complete(c *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE is the RunE of a command whose options are o: Complete, Validate, then runF when
// a test gave one (gh's pkg/cmd style, so a test sees the parsed options without a
// cluster), else o.Run.
func RunE[O Options](o O, runF func(O) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := o.Complete(c, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		if runF != nil {
			return runF(o)
		}
		return o.Run(c.Context())
	}
}
