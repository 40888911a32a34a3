# Fanout: `make run` builds and starts fanoutd on 127.0.0.1:7411; `make test` runs every test.
# Both install the Debian packages they need first (with sudo when not root).

PREFIX      ?= /usr/local
SWIFT       ?= swift
APT_PACKAGES = libevent-dev libsystemd-dev pkg-config netcat-openbsd redis-server
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build release run test clean

deps:
	@missing=""; \
	for package in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/fanoutd --config config/fanoutd.yaml

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

clean:
	rm -rf .build
