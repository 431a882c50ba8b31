// Command gen writes mcotui's command reference (make docs) and man pages (make install)
// from the command tree.
//
//	go run ./cmd/internal/docgen/gen -markdown docs/reference
//	go run ./cmd/internal/docgen/gen -man /usr/local/share/man/man1 -version v0.1
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mcotui/mcotui/cmd/internal/docgen"
)

func main() {
	markdown := flag.String("markdown", "", "write the markdown command reference into `DIR`")
	man := flag.String("man", "", "write section-1 man pages into `DIR`")
	version := flag.String("version", "dev", "the version the man pages name")
	flag.Parse()
	if *markdown == "" && *man == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen [-markdown DIR] [-man DIR [-version V]]")
		os.Exit(2)
	}
	if *markdown != "" {
		if err := docgen.Markdown(*markdown); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
	}
	if *man != "" {
		if err := docgen.Man(*man, *version, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
	}
}
