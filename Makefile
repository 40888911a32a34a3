# Fanout: `make run` builds and starts fanoutd on 127.0.0.1:7411; `make test` runs every test.
# Both install the Debian packages they need first, through ./dev (with sudo when not root).

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
MANDIR      ?= $(PREFIX)/share/man
BIN_DIR     ?= .build/release
DESTDIR     ?=
SWIFT       ?= swift
# The Debian packages are listed once, in ./dev.
# The version is defined once, as FanoutVersion.current; scripts/version.sh reads it.
VERSION     := $(shell scripts/version.sh)
ARCH        := $(shell dpkg --print-architecture 2>/dev/null)

.PHONY: deps build release run test install clean bench micro-bench deb test-deb doc-examples

deps:
	./dev deps

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Says where to connect (read back from the configuration, so it follows config/fanoutd.yaml), then serves.
run: release
	@.build/release/fanoutd --config config/fanoutd.yaml --check-config | awk -F': ' \
		'$$1 == "listen" { split($$2, a, ", "); p = a[1]; h = p; sub(/:[0-9]+$$/, "", h); port = substr(p, length(h) + 2) } \
		 $$1 == "http_listen" { c = ($$2 == "off") ? "off (set http_listen)" : "http://" $$2 "/" } \
		 END { printf "fanoutd: the protocol on %s (nc %s %s, or fanout), the console on %s\n", p, h, port, c }'
	FANOUTD_HISTORY_DIR=$(CURDIR)/.build/run-history .build/release/fanoutd --config config/fanoutd.yaml

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

# Performance: fanoutd against redis-server and the plain-C baseline (scenarios A–H, medians of 5 runs),
# and the in-process micro-benchmarks (a package of their own under Benchmarks/, built only here).
bench: release
	$(MAKE) -C Benchmarks/c-baseline
	Benchmarks/scripts/compare.sh 5

micro-bench:
	cd Benchmarks && $(SWIFT) package -c release benchmark

hostile: release ; Benchmarks/scripts/hostile.py --scale $(or $(SCALE),full)

# Installs the binaries, the units (ExecStart pointing at $(PREFIX)/bin), the man page and, unless one is
# there already, the configuration, with history on disk in the unit's state directory (/var/lib/fanout).
# BIN_DIR names prebuilt binaries; without them, builds release first.
install:
	@test -x $(BIN_DIR)/fanoutd -a -x $(BIN_DIR)/fanout || $(MAKE) release
	install -D -m 0755 $(BIN_DIR)/fanoutd $(DESTDIR)$(PREFIX)/bin/fanoutd
	install -D -m 0755 $(BIN_DIR)/fanout $(DESTDIR)$(PREFIX)/bin/fanout
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local/bin/fanoutd|$(PREFIX)/bin/fanoutd|; s|/etc/fanout/|$(SYSCONFDIR)/fanout/|' \
		systemd/fanoutd.service > $(DESTDIR)$(UNITDIR)/fanoutd.service
	install -m 0644 systemd/fanoutd.socket $(DESTDIR)$(UNITDIR)/fanoutd.socket
	install -d $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1
	sed -E '1s/"fanout [0-9][^"]*"/"fanout $(VERSION)"/' man/fanoutd.8 > $(DESTDIR)$(MANDIR)/man8/fanoutd.8
	sed -E '1s/"fanout [0-9][^"]*"/"fanout $(VERSION)"/' man/fanout.1 > $(DESTDIR)$(MANDIR)/man1/fanout.1
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/fanout/fanoutd.yaml ]; then \
		echo "keeping existing $(DESTDIR)$(SYSCONFDIR)/fanout/fanoutd.yaml"; \
	else \
		install -d $(DESTDIR)$(SYSCONFDIR)/fanout; \
		sed 's|^history_dir: off$$|history_dir: /var/lib/fanout/history|' config/fanoutd.yaml \
			> $(DESTDIR)$(SYSCONFDIR)/fanout/fanoutd.yaml; \
		chmod 0644 $(DESTDIR)$(SYSCONFDIR)/fanout/fanoutd.yaml; \
	fi

# The Debian package, fanout_$(VERSION)_$(ARCH).deb, from this tree (debhelper; see scripts/build-deb.sh),
# and its test: install, check, remove and purge it on this machine (as root; see scripts/test-deb.sh).
deb: deps
	scripts/build-deb.sh

test-deb: deb
	scripts/test-deb.sh fanout_$(VERSION)_$(ARCH).deb

# Runs the docs' runnable shell examples against a fanoutd on loopback.
doc-examples: build
	scripts/doc-examples.sh

clean:
	rm -rf .build .build-package Benchmarks/.build fanout_*.deb
	$(MAKE) -C Benchmarks/c-baseline clean
