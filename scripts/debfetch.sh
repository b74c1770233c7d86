#!/bin/sh
# scripts/debfetch.sh SUITE DIR PACKAGE... — downloads Debian packages of another suite than the
# system's (bookworm-backports, trixie) and unpacks them under DIR/root, without installing
# them: an apt configuration of its own in DIR/apt (sources list, package lists, cache), so the
# system's apt state is not touched and root is not needed. The .debs stay in DIR/debs.
# Exit 0 done; 4 when the suite or a package cannot be had (no network to the mirror), with
# the reason on stderr. REPRISE_DEBIAN_MIRROR overrides http://deb.debian.org/debian.
set -eu
suite=${1:?usage: scripts/debfetch.sh SUITE DIR PACKAGE...}
dir=${2:?usage: scripts/debfetch.sh SUITE DIR PACKAGE...}
shift 2
mirror=${REPRISE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
apt=$dir/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/preferences.d" "$dir/debs"
echo "deb $mirror $suite main" > "$apt/etc/sources.list"
pkgs=$*
set -- -o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=/dev/null" \
    -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d" \
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1" \
    -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root"
if ! apt-get "$@" -qq update >"$dir/apt.log" 2>&1; then
    echo "debfetch: cannot read $suite from $mirror (see $dir/apt.log)" >&2
    exit 4
fi
rm -f "$dir"/debs/*.deb
for p in $pkgs; do
    # the suite's own version, not an older one apt might prefer from elsewhere
    v=$(apt-cache "$@" show "$p" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
    if [ -z "$v" ]; then
        echo "debfetch: $suite has no $p" >&2
        exit 4
    fi
    (cd "$dir/debs" && apt-get "$@" -qq download "$p=$v" >>"$dir/apt.log" 2>&1) || {
        echo "debfetch: downloading $p=$v from $suite failed (see $dir/apt.log)" >&2
        exit 4
    }
done
rm -rf "$dir/root"
for d in "$dir"/debs/*.deb; do
    dpkg-deb -x "$d" "$dir/root"
done
