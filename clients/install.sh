#!/bin/sh
# Installs appserver from a release: fetches appserver-VERSION-TARGET.tar.gz and the release's
# SHA256SUMS, checks the archive's digest against it, and puts the binary into PREFIX/bin.
#
#   sh install.sh --from URL --version VERSION [--prefix DIR]
#
#   --from URL        where the release's files are: a GitHub release's download folder
#                     (https://github.com/OWNER/REPO/releases/download/vVERSION), any HTTPS
#                     folder, or file:///path for a local copy ($APPSERVER_RELEASE_URL)
#   --version VERSION the release, without the v ($APPSERVER_VERSION)
#   --prefix DIR      install into DIR/bin (default ~/.local; $PREFIX)
#
# Needs curl, tar and sha256sum (or shasum). Nothing is installed unless the digest matches.
set -eu

from=${APPSERVER_RELEASE_URL:-}
version=${APPSERVER_VERSION:-}
prefix=${PREFIX:-${HOME:-}/.local}
die() { echo "install.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case $1 in
        --from) [ $# -ge 2 ] || die "--from needs a URL"; from=$2; shift 2 ;;
        --version) [ $# -ge 2 ] || die "--version needs a version"; version=${2#v}; shift 2 ;;
        --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; prefix=$2; shift 2 ;;
        -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$from" ] || die "say where the release is: --from URL (or APPSERVER_RELEASE_URL)"
[ -n "$version" ] || die "say which release: --version VERSION (or APPSERVER_VERSION)"
[ -n "$prefix" ] || die "no --prefix and no HOME"

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) target=x86_64-unknown-linux-gnu ;;
    Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-gnu ;;
    Darwin-x86_64) target=x86_64-apple-darwin ;;
    Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
    *) die "no release is built for $(uname -s) $(uname -m); build from source (README.md)" ;;
esac
name=appserver-$version-$target
from=${from%/}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch() { curl --fail --silent --show-error --location --proto '=https,file' --output "$work/$1" "$from/$1" ||
    die "cannot fetch $from/$1"; }
fetch "$name.tar.gz"
fetch SHA256SUMS
expected=$(awk -v f="$name.tar.gz" '$2 == f || $2 == "*" f { print $1 }' "$work/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS has no line for $name.tar.gz"
if command -v sha256sum >/dev/null 2>&1; then
    actual=$(sha256sum "$work/$name.tar.gz" | awk '{ print $1 }')
else
    actual=$(shasum -a 256 "$work/$name.tar.gz" | awk '{ print $1 }')
fi
[ "$actual" = "$expected" ] || die "$name.tar.gz does not match SHA256SUMS (got $actual, expected $expected); nothing installed"

tar -xzf "$work/$name.tar.gz" -C "$work"
[ -f "$work/$name/appserver" ] || die "$name.tar.gz holds no $name/appserver"
mkdir -p "$prefix/bin"
# Into place in one rename, so a running appserver is never overwritten half-way.
cp "$work/$name/appserver" "$prefix/bin/.appserver.new"
chmod 755 "$prefix/bin/.appserver.new"
mv -f "$prefix/bin/.appserver.new" "$prefix/bin/appserver"
echo "installed $("$prefix/bin/appserver" --version) into $prefix/bin/appserver"
case ":${PATH:-}:" in *":$prefix/bin:"*) ;; *) echo "add $prefix/bin to your PATH to run it as appserver" ;; esac
