// Command vmpod is the one process of the real test node's pods (e2e/vm): built static,
// it is the only file of an image pushed to the test's registry, so the node needs no
// image from the internet. It is also the node's sandbox (pause) image.
//
//	vmpod                 waits, and exits 0 on SIGTERM or SIGINT (as pause does)
//	vmpod ignore-term     waits, ignoring SIGTERM: only the kubelet's SIGKILL at the end
//	                      of the pod's grace period stops it
//	vmpod write FILE      writes FILE (an emptyDir's, say), then waits as vmpod does
//	vmpod api DIR METHOD PATH [BODY]
//	                      one request to the API server as the credentials in DIR
//	                      (token, ca.crt, server, servername) hold them; prints the
//	                      HTTP status code on the first line, then the answer's body
//
// api is for a test to ask the real API server, from inside the guest, what the
// agent's credentials may do (on the per-test disk, not in the image). It uses the
// standard library only, so the image stays one small file.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	args := os.Args[1:]
	term := make(chan os.Signal, 1)
	switch {
	case len(args) == 0:
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	case len(args) == 1 && args[0] == "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		// Waiting on SIGINT alone: a wait on nothing would be a deadlock to the runtime.
		signal.Notify(term, syscall.SIGINT)
		fmt.Println("vmpod: ignoring SIGTERM")
	case len(args) == 2 && args[0] == "write":
		if err := os.WriteFile(args[1], []byte("written by vmpod\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "vmpod:", err)
			os.Exit(1)
		}
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	case (len(args) == 4 || len(args) == 5) && args[0] == "api":
		if err := api(args[1], args[2], args[3], args[4:]); err != nil {
			fmt.Fprintln(os.Stderr, "vmpod:", err)
			os.Exit(1)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "vmpod: unknown arguments %q (want none, ignore-term, write FILE or api DIR METHOD PATH [BODY])\n", args)
		os.Exit(2)
	}
	s := <-term
	fmt.Printf("vmpod: %v: exiting\n", s)
}

// api makes one request; the status code is the answer, whatever it is.
func api(dir, method, path string, body []string) error {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b)), err
	}
	token, err := read("token")
	if err != nil {
		return err
	}
	server, err := read("server")
	if err != nil {
		return err
	}
	serverName, err := read("servername")
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s/ca.crt holds no PEM certificate", dir)
	}
	var r io.Reader
	if len(body) == 1 {
		r = strings.NewReader(body[0])
	}
	req, err := http.NewRequest(method, "https://"+server+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("%d\n%s\n", resp.StatusCode, b)
	return nil
}
