# mcotui build, test and lint entry points. `make test` is what CI runs.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)

# Test binaries are built from the Go module proxy into .testbin/, keyed by version, so a
# second run rebuilds nothing. Tests find them through MCOTUI_TESTBIN.
TESTBIN   := $(CURDIR)/.testbin
export MCOTUI_TESTBIN := $(TESTBIN)

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TESTBIN)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.PHONY: all build install docs image demo test test-crash e2e test-vm testbin k9s lint vet fmt-check staticcheck bench fuzz clean

FUZZTIME ?= 1m

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/mcotui .

# The binary, a man page per command and the bash, zsh and fish completions, where a
# user's system looks for them. PREFIX (default /usr/local) and DESTDIR (for packagers).
PREFIX    ?= /usr/local
DESTDIR   ?=
install: build
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(PREFIX)/share/man/man1' \
		'$(DESTDIR)$(PREFIX)/share/bash-completion/completions' \
		'$(DESTDIR)$(PREFIX)/share/zsh/site-functions' '$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d'
	install -m 0755 bin/mcotui '$(DESTDIR)$(PREFIX)/bin/mcotui'
	$(GO) run ./cmd/internal/docgen/gen -man '$(DESTDIR)$(PREFIX)/share/man/man1' -version '$(VERSION)'
	bin/mcotui completion bash > '$(DESTDIR)$(PREFIX)/share/bash-completion/completions/mcotui'
	bin/mcotui completion zsh > '$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_mcotui'
	bin/mcotui completion fish > '$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/mcotui.fish'

# The command reference, docs/reference/, from the command tree. A test
# (cmd/internal/docgen) fails when a command or flag changed and this was not rerun.
docs:
	rm -f docs/reference/*.md
	$(GO) run ./cmd/internal/docgen/gen -markdown docs/reference

# The OCI image, without a container engine: the static binary, the build machine's CA
# certificates (Debian's ca-certificates), a non-root user, no base image (hack/image).
# Writes the OCI layout bin/oci and the tarball bin/mcotui-image.tar (podman load -i).
# deploy/Containerfile builds the same with a container engine.
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o bin/mcotui-static .
	$(GO) run ./hack/image -binary bin/mcotui-static -version $(VERSION) -revision '$(IMAGE_REVISION)' \
		-layout bin/oci -tarball bin/mcotui-image.tar

# The TUI on a cluster simulated inside the process: no cluster, no test binaries.
# DEMOFLAGS passes flags, e.g. make demo DEMOFLAGS='--nodes 30 --speed 2'.
demo: build
	bin/mcotui demo $(DEMOFLAGS)

testbin:
	./hack/system-deps.sh
	./hack/testbin.sh $(TESTBIN)
	./hack/vmimage.sh $(TESTBIN)
	./hack/vmimage.sh $(TESTBIN) grub
	./hack/vmimage.sh $(TESTBIN) ostree

# The VM tests (e2e/vm) named TestVMExtended* or TestVMOSExtended* run only in make
# test-vm, to keep a cold CI within its time; each boots a QEMU guest under TCG (a
# minute or more here).
# The agent's in-process failpoint tests need the failpoints build tag; the crash tests
# in ./... (and the VM tests) build their tagged binary themselves.
test: testbin lint
	$(GO) test -race -count=1 -timeout 70m -skip '^TestVM(OS)?Extended' ./...
	$(GO) test -race -count=1 -tags failpoints -run 'TestResumeAtEveryFailpoint|TestFailpoint|TestWriteFailpoints' ./agent/

# The real-host tests alone: the agent on a Debian guest in QEMU with real systemd,
# logind reboots and power cuts, against the test control plane. One guest at a time.
test-vm: testbin
	$(GO) test -count=1 -v -timeout 90m ./e2e/vm/

# The agent's crash tests alone: the real binary killed with SIGKILL at every failpoint.
# make test runs them too, as part of ./...
test-crash: testbin
	$(GO) test -count=1 -run TestCrash -v ./agent/...
	$(GO) test -count=1 -tags failpoints -run 'TestResumeAtEveryFailpoint|TestFailpoint|TestWriteFailpoints' -v ./agent/

# The end-to-end rollout alone: 50 kwok nodes with real agents, two controller processes.
# make test runs it too, as part of ./...
e2e: testbin
	$(GO) test -race -count=1 -v ./e2e/

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.testbin/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# k9s, the peer of the TUI's scale benchmark; only make bench needs it.
k9s:
	./hack/k9s.sh $(TESTBIN)

# The cluster-side benchmarks run once each on a real control plane: rollouts of kwok
# pools (1,000 nodes; 200 nodes with 2 s agents; 5,000 nodes at maxUnavailable 50: about
# 10 minutes on 2 shared cores at the controller's rate limit of 50/100, setup included),
# status on 5,000 nodes against kubectl, the demo's first frame at 2,000 nodes (5 starts;
# the aim is under a second), and the TUI against k9s on 15,000 kwok nodes in tmux (3
# runs of each, the ratios to k9s from the same run; some hours on 2 shared cores: the
# largest clusters go past 5,000 nodes).
bench: testbin k9s
	$(GO) test -run '^$$' -bench . -benchmem ./core/... ./store/... ./agent/... ./tui/...
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3000x ./sim/apisim/
	$(GO) test -run '^$$' -bench Rollout -benchtime 1x -timeout 60m ./controller/
	$(GO) test -run '^$$' -bench Status -benchtime 5x -timeout 30m ./cmd/cluster/
	$(GO) test -run '^$$' -bench DemoFirstFrame -benchtime 5x -timeout 30m ./cmd/interactive/
	$(GO) test -run '^$$' -bench TUIScale -benchtime 1x -timeout 300m ./cmd/interactive/ -args -bench.tui-nodes 15000 -bench.tui-timeout 290m

fuzz:
	./hack/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
