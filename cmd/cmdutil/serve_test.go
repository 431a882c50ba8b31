package cmdutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHealthMuxServes: /healthz and /readyz answer 200 "ok" while their probe passes and
// 503 with its reason when it fails, over a real listener from Serve.
func TestHealthMuxServes(t *testing.T) {
	var notReady error = errors.New("not ready: caches syncing")
	mux := http.NewServeMux()
	HealthMux(mux, nil, func() error { return notReady })
	addr, stop, err := Serve("127.0.0.1:0", "health-addr", mux, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, path := range []string{"/healthz", "/livez"} {
		if code, body := get(path); code != http.StatusOK || body != "ok" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "not ready: caches syncing" {
		t.Errorf("/readyz while not ready: %d %q", code, body)
	}
	notReady = nil
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/readyz when ready: %d %q", code, body)
	}
	if _, _, err := Serve(addr, "health-addr", mux, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--health-addr "+addr) {
		t.Errorf("a second server on %s: %v, want an error naming the flag", addr, err)
	}
}

// TestLogFormat: --log-format takes text and json only, and json writes one object a
// line.
func TestLogFormat(t *testing.T) {
	var f LogFormat
	fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
	AddLogFormat(fl, &f)
	if f != LogText {
		t.Errorf("default %q", f)
	}
	if err := fl.Parse([]string{"--log-format", "yaml"}); err == nil || !strings.Contains(err.Error(), `"yaml": use text or json`) {
		t.Errorf("--log-format yaml: %v", err)
	}
	if err := fl.Parse([]string{"--log-format", "json"}); err != nil || f != LogJSON {
		t.Fatalf("--log-format json: %v, %q", err, f)
	}
	var buf bytes.Buffer
	NewLogger(&buf, f, slog.LevelInfo).Info("serving", "addr", "127.0.0.1:1")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "serving" || rec["addr"] != "127.0.0.1:1" {
		t.Errorf("json log line %q: %v", buf.String(), err)
	}
}
