#!/usr/bin/env bash
# Builds fanout_<version>_<arch>.deb in the repository's top folder (`make deb` runs this).
#   scripts/build-deb.sh
# Swift is not a Debian package, so the release binaries are built here first, with the Swift runtime
# linked statically (the package must not depend on a toolchain); then the tree's packaging files and the
# binaries are copied to .build/deb/fanout-<version>/ and debhelper packages them there, so the build
# writes nothing outside .build/ and .build-package/ but the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(scripts/version.sh)
arch=$(dpkg --print-architecture)
work=".build/deb"
stage="$work/fanout-$version"

# Bound at load and read-only after relocation (Debian's hardening flags). A build folder of its own, so that
# these flags do not send `make release` (./dev run) into a rebuild, nor it this.
flags=(-c release --static-swift-stdlib -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro
       --scratch-path .build-package)
swift build "${flags[@]}" --product fanoutd
swift build "${flags[@]}" --product fanout
bin=$(swift build "${flags[@]}" --show-bin-path)

rm -rf "$work"
mkdir -p "$stage/bin" "$stage/completions"
cp -r debian config systemd docs README.md "$stage/"
cp "$bin/fanoutd" "$bin/fanout" "$stage/bin/"
# The man pages say the version they document; it comes from FanoutVersion like everything else.
mkdir -p "$stage/man"
for page in man/fanoutd.8 man/fanout.1; do
    sed -E "1s/\"fanout [0-9][^\"]*\"/\"fanout $version\"/" "$page" > "$stage/$page"
done
# A completion file is sourced, not run: no #! line.
"$bin/fanout" --generate-completion-script bash | sed '1{/^#!/d}' > "$stage/completions/fanout.bash"
"$bin/fanout" --generate-completion-script zsh > "$stage/completions/_fanout"
"$bin/fanout" --generate-completion-script fish > "$stage/completions/fanout.fish"
# A native package: its version is the program's, and its changelog says so.
cat > "$stage/debian/changelog" <<CHANGELOG
fanout ($version) unstable; urgency=medium

  * Release $version; see /usr/share/doc/fanout/README.md and docs/.

 -- Fanout maintainers <fanout@lists.example.org>  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")
CHANGELOG

(cd "$stage" && dpkg-buildpackage -b -us -uc --no-pre-clean >/dev/null)
cp "$work/fanout_${version}_${arch}.deb" .
echo "built fanout_${version}_${arch}.deb"
