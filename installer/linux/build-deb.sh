#!/usr/bin/env bash
# Builds the quintet Debian package: the component manager (a systemd service running as the system user quintet) and
# the quintet command, both framework-dependent (portable) on the ASP.NET Core runtime of .NET 10: one package for
# every architecture .NET runs on under Linux (Architecture: all).
#
#   installer/linux/build-deb.sh [--configuration Release|Debug] [--from-build] [--compression xz|gzip|zstd|none] OUTPUT_DIR
#
# Publishes into OUTPUT_DIR/.build (bin and obj folders of its own, so that it never touches the work tree's; a second
# run with the same OUTPUT_DIR builds incrementally). --from-build publishes nothing: it packages the projects' build
# output as a build of Quintet.sln in that configuration left it (bin/<configuration>/, read only; the tests do this).
# --compression is dpkg-deb's (xz, the default, is the smallest and the slowest to build). Writes
# OUTPUT_DIR/quintet_<version>_all.deb, whose path is the last line on standard output. Needs the .NET SDK of
# global.json and dpkg-deb (docs/installing.md).
set -euo pipefail

say() { echo "build-deb: $*" >&2; }
fail() { say "$*"; exit 1; }

configuration=Release
from_build=false
compression=xz
output=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --configuration) configuration=${2:?--configuration needs a value}; shift 2 ;;
    --from-build) from_build=true; shift ;;
    --compression) compression=${2:?--compression needs a value}; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) [[ -z "$output" ]] || fail "one output folder only (got '$output' and '$1')"; output=$1; shift ;;
  esac
done
[[ -n "$output" ]] || fail "usage: build-deb.sh [--configuration Release|Debug] [--from-build] [--compression xz|gzip|zstd|none] OUTPUT_DIR"
case "$compression" in
  xz|gzip|zstd|none) ;;
  *) fail "--compression takes xz, gzip, zstd or none, not '$compression'" ;;
esac

command -v dotnet >/dev/null || fail "the .NET SDK (dotnet) is not on the PATH; install the SDK named in global.json."
command -v dpkg-deb >/dev/null || fail "dpkg-deb is missing; install Debian's dpkg package."

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../build-output.sh
source "$repo/installer/build-output.sh"

# The one version of every Quintet assembly and package (Version is $(QuintetVersion)).
version=$(sed -n 's:.*<QuintetVersion>\(.*\)</QuintetVersion>.*:\1:p' "$repo/Directory.Build.props" | head -n 1)
[[ "$version" =~ ^[0-9] ]] || fail "no <QuintetVersion> starting with a digit in $repo/Directory.Build.props (found '$version')"

mkdir -p "$output"
output=$(cd "$output" && pwd)
build="$output/.build"
stage="$output/.stage-deb"
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

# Portable and run by /usr/bin/dotnet (no apphost, which would have to find the runtime by itself).
publish() {
  # The assembly is named after its project unless given (the proxy's is quintet-proxy).
  local project=$1 target=$2 assembly=${3:-}
  if [[ "$from_build" == true ]]; then
    [[ -n "$assembly" ]] || assembly=$(basename "$project" .csproj)
    copy_build_output "$repo/$(dirname "$project")" "$assembly" "$configuration" "$stage$target"
  else
    say "publishing $project ($configuration, framework-dependent)"
    dotnet publish "$repo/$project" --nologo -v quiet -c "$configuration" -p:UseAppHost=false --artifacts-path "$build" \
      -o "$stage$target" >&2 \
      || fail "dotnet publish $project failed"
  fi
  # The XML documentation beside each library is for compilers, not for a server; native libraries (SQLite's) of
  # other systems than Linux are dead weight.
  find "$stage$target" -maxdepth 1 -name '*.xml' -exec sh -c 'for f; do [ -f "${f%.xml}.dll" ] && rm -f "$f"; done' sh {} +
  if [[ -d "$stage$target/runtimes" ]]; then
    find "$stage$target/runtimes" -mindepth 1 -maxdepth 1 -type d ! -name 'linux-*' ! -name unix -exec rm -rf {} +
  fi
}
publish src/Quintet.Manager/Quintet.Manager.csproj /usr/lib/quintet/manager
publish tools/Quintet.Cli/Quintet.Cli.csproj /usr/lib/quintet/cli
publish tools/Quintet.Proxy/Quintet.Proxy.csproj /usr/lib/quintet/proxy quintet-proxy

install -D -m 0644 "$here/quintet-manager.service" "$stage/usr/lib/systemd/system/quintet-manager.service"
# Root's alone: the site's settings may name secrets; systemd reads the file as root before dropping to quintet.
install -D -m 0640 "$here/manager.env" "$stage/etc/quintet/manager.env"
# The local proxy: installed, not enabled (a client machine enables it, a manager's host usually does not).
install -D -m 0644 "$here/quintet-proxy.service" "$stage/usr/lib/systemd/system/quintet-proxy.service"
install -D -m 0640 "$here/proxy.env" "$stage/etc/quintet/proxy.env"
install -D -m 0755 "$here/quintet" "$stage/usr/bin/quintet"
install -D -m 0644 "$repo/docs/installing.md" "$stage/usr/share/doc/quintet/installing.md"
install -D -m 0644 "$repo/docs/configuration.md" "$stage/usr/share/doc/quintet/configuration.md"
install -D -m 0644 "$repo/docs/proxy.md" "$stage/usr/share/doc/quintet/proxy.md"

for script in postinst prerm postrm; do
  install -m 0755 "$here/debian/$script" "$stage/DEBIAN/$script"
done
printf '%s\n' /etc/quintet/manager.env /etc/quintet/proxy.env > "$stage/DEBIAN/conffiles"
# Microsoft's and Ubuntu's package of the ASP.NET Core runtime; it brings dotnet-runtime-10.0 and /usr/bin/dotnet.
depends=aspnetcore-runtime-10.0
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@DEPENDS@/$depends/" -e "s/@SIZE@/$size/" \
  "$here/debian/control" > "$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"

package="$output/quintet_${version}_all.deb"
say "compressing with $compression ($size KiB)"
dpkg-deb --root-owner-group "-Z$compression" --build "$stage" "$package" >&2 || fail "dpkg-deb --build failed"
rm -rf "$stage"
say "built $package"
echo "$package"
