package offline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/validate"
	"github.com/mcotui/mcotui/platform/manifestfile"
)

// ValidateOptions are `mcotui validate`'s.
type ValidateOptions struct {
	IOStreams cmdutil.IOStreams
	// Files are the files to check; "-" is standard input.
	Files []string
	// Output is the report format: text or json.
	Output string
	// MaxInput caps each input file, in bytes (--max-input-size).
	MaxInput int64
	// OSImageStream is the OS image stream of the configs' pools (--os-image-stream).
	OSImageStream string
}

// NewCmdValidate is `mcotui validate`; runF, when not nil, replaces the run step.
func NewCmdValidate(f *cmdutil.Factory, runF func(*ValidateOptions) error) *cobra.Command {
	o := &ValidateOptions{IOStreams: f.IOStreams}
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check MachineConfig, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig manifests and Ignition configs",
		Long: `Check MachineConfig manifests (YAML or JSON, one or many documents per file, List
kinds expanded) and raw Ignition configs (spec 3.0.0 to 3.5.0). A document that is an
object with an "ignition" key and no "kind" is a raw Ignition config; "-" reads standard
input.

Each problem is one line on standard output:

  FILE:LINE:COL: error|warning: JSON-PATH: message

LINE and COL point at the field in the file as written, YAML or JSON. JSON-PATH is a
JSONPath from the root of the document the problem is in: $ is the document itself,
.name a key, ['a.b/c'] a key that is not a plain name, [0] a list index. In a
MachineConfig, the Ignition config is under $.spec.config, as in
$.spec.config.storage.files[0].path; in a raw Ignition config it is the root, as in
$.storage.files[0].path. Problems are sorted by file, line and column; a summary goes
to standard error.

What is checked:
  - Ignition's own validation of each config, spec 3.0.0 to 3.5.0, as Ignition parses it
  - MachineConfig fields: apiVersion, kernelType, osImageURL, unknown spec fields, and
    the machineconfiguration.openshift.io/role label the standard pools select by
  - PinnedImageSets: each image a pull spec by digest
    (host[:port][/namespace]/name@sha256:<64 hex digits>), 1 to 500 images, none twice
  - KubeletConfigs and ContainerRuntimeConfigs: the rules the controller applies
    before it generates their MachineConfigs (MCO's, plus what mcotui cannot carry out
    off OpenShift: autoSizingReserved, tlsSecurityProfile), at the field refused
  - with --os-image-stream rhel-10 or centos-10: runc as CRI-O's default runtime (a
    MachineConfig's drop-in under /etc/crio/crio.conf.d/, a ContainerRuntimeConfig's
    defaultRuntime), which RHEL 10 does not ship and render and the controller refuse
  - MachineConfigPool and MachineConfiguration objects decode; other kinds are not checked
  - warnings for what only a machine's first boot applies, which a running node cannot
    change (mcotui and MCO refuse it): storage disks, raid, filesystems, luks,
    directories and links, file append, passwd groups, users other than core, core user
    fields other than sshAuthorizedKeys and passwordHash, Ignition's kernelArguments
    section (use spec.kernelArguments), and fips

Exit status: 0 when there are no errors (warnings allowed), 1 when there are errors,
2 on a usage error such as a missing or unreadable file, in which case nothing is
checked.`,
		Example: `  # Check a MachineConfig before applying it
  mcotui validate 99-worker-chrony.yaml

  # Check every manifest of a directory and a raw Ignition config
  mcotui validate manifests/*.yaml bootstrap.ign

  # Check configs meant for pools on the RHEL 10 OS image stream
  mcotui validate --os-image-stream rhel-10 ctrcfg.yaml 99-worker-crio.yaml

  # Machine-readable report
  mcotui validate -o json 99-worker-chrony.yaml`,
		Args: cmdutil.UsageArgs(cobra.MinimumNArgs(1)),
		RunE: cmdutil.RunE(o, runF),
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "report format: text or json")
	c.Flags().StringVar(&o.OSImageStream, "os-image-stream", "", "check the configs as for pools on this OS image stream (rhel-9, rhel-10, centos-10: a pool's spec.osImageStream.name or the cluster's default)")
	addMaxInput(c, &o.MaxInput)
	return c
}

// Complete takes the files from the arguments.
func (o *ValidateOptions) Complete(_ *cobra.Command, args []string) error {
	o.Files = args
	return nil
}

// Validate checks the report format.
func (o *ValidateOptions) Validate() error {
	return cmdutil.CheckOutput(o.Output, []string{"text", "json"})
}

// Run reads every file, then checks them and reports. A file that cannot be read is a
// usage error and nothing is checked.
func (o *ValidateOptions) Run(context.Context) error {
	s := o.IOStreams
	files, err := readInputs(o.Files, s.In, o.MaxInput)
	if tooLarge(err) {
		return err
	}
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	var probs []validate.Problem
	for _, f := range files {
		probs = append(probs, validate.FileWith(f.name, f.data, validate.Options{OSImageStream: o.OSImageStream})...)
	}
	validate.Sort(probs)
	if err := writeProblems(s.Out, o.Output, probs); err != nil {
		return err
	}
	errs := summarize(s.ErrOut, probs, len(files))
	if errs > 0 {
		return cmdutil.ExitCode(cmdutil.ExitError)
	}
	return nil
}

type inputFile struct {
	name string
	data []byte
}

// readInputs reads every named file before any is checked, so that a bad name stops the
// command before it reports anything.
func readInputs(names []string, stdin io.Reader, max int64) ([]inputFile, error) {
	files := make([]inputFile, 0, len(names))
	var total int64
	for _, name := range names {
		var data []byte
		var err error
		if name == "-" {
			name = "<stdin>"
			data, err = manifestfile.ReadFrom(name, stdin, max)
		} else {
			data, err = manifestfile.Read(name, max)
		}
		if tooLarge(err) {
			return nil, err
		}
		if err != nil {
			return nil, readError(name, err)
		}
		// The inputs are held together until checked: past the total cap, a run of
		// many files took gigabytes and died, under a memory limit, with a stack trace.
		if total += int64(len(data)); total > manifestfile.TotalMax(max) {
			return nil, &manifestfile.TotalTooLargeError{Names: "given", Max: manifestfile.TotalMax(max)}
		}
		files = append(files, inputFile{name: name, data: data})
	}
	return files, nil
}

// readError says why name cannot be read, without repeating the name as os errors do.
func readError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", name)
	case isDir(name):
		return fmt.Errorf("%s is a directory: name its files, for example %s/*.yaml", name, name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot read %s: %w", name, err)
}

// addMaxInput adds --max-input-size, which caps each input file of validate, render and
// diff.
func addMaxInput(c *cobra.Command, n *int64) {
	*n = manifestfile.DefaultMaxSize
	c.Flags().Var(cmdutil.SizeFlag{N: n}, "max-input-size", "refuse an input file bigger than this (exit 1); a MachineConfig is at most 1.5 MiB in etcd")
}

// tooLarge reports whether err is an input, or all of them, over --max-input-size: a
// refusal of the input (exit 1), not a usage error.
func tooLarge(err error) bool {
	var tl *manifestfile.TooLargeError
	var ttl *manifestfile.TotalTooLargeError
	return errors.As(err, &tl) || errors.As(err, &ttl)
}

func isDir(name string) bool {
	st, err := os.Stat(name)
	return err == nil && st.IsDir()
}

func writeProblems(w io.Writer, format string, probs []validate.Problem) error {
	if format == "json" {
		if probs == nil {
			probs = []validate.Problem{} // [] rather than null
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(probs)
	}
	for _, p := range probs {
		if _, err := fmt.Fprintln(w, p); err != nil {
			return err
		}
	}
	return nil
}

// summarize writes the counts to w and returns the number of errors.
func summarize(w io.Writer, probs []validate.Problem, files int) int {
	var errs, warns int
	for _, p := range probs {
		if p.Severity == validate.Error {
			errs++
		} else {
			warns++
		}
	}
	if errs+warns == 0 {
		fmt.Fprintf(w, "no problems in %s\n", plural(files, "file"))
	} else {
		fmt.Fprintf(w, "%s, %s in %s\n", plural(errs, "error"), plural(warns, "warning"), plural(files, "file"))
	}
	return errs
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
