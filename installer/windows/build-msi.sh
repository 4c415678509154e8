#!/usr/bin/env bash
# Builds the Quintet Windows installer (MSI, x64) on Linux with Debian's wixl: the component manager as the Windows
# service QuintetManager and the quintet command, both self-contained for win-x64 (no .NET to install on the server).
#
#   installer/windows/build-msi.sh [--framework-dependent | --from-build] [--configuration Release|Debug] OUTPUT_DIR
#
# Publishes into OUTPUT_DIR/.build (its own bin and obj folders, never the work tree's), generates the file lists with
# wixl-heat and writes OUTPUT_DIR/quintet-<version>-x64.msi, whose path is the last line on standard output.
# --framework-dependent publishes for an installed .NET 10 runtime instead (a much smaller package). --from-build
# publishes nothing: it packages the projects' build output as a build of Quintet.sln in that configuration left it
# (bin/<configuration>/, read only), framework-dependent and portable, with Windows launchers made by the SDK
# (launchers.csproj); the tests check the installer's structure on that one. Installs Debian's wixl and msitools with
# apt-get when they are missing (as root).
set -euo pipefail

say() { echo "build-msi: $*" >&2; }
fail() { say "$*"; exit 1; }

configuration=Release
self_contained=true
from_build=false
output=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --configuration) configuration=${2:?--configuration needs a value}; shift 2 ;;
    --framework-dependent) self_contained=false; shift ;;
    --from-build) from_build=true; self_contained=false; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) [[ -z "$output" ]] || fail "one output folder only (got '$output' and '$1')"; output=$1; shift ;;
  esac
done
[[ -n "$output" ]] || fail "usage: build-msi.sh [--framework-dependent | --from-build] [--configuration Release|Debug] OUTPUT_DIR"

command -v dotnet >/dev/null || fail "the .NET SDK (dotnet) is not on the PATH; install the SDK named in global.json."
if ! command -v wixl >/dev/null || ! command -v wixl-heat >/dev/null || ! command -v msiinfo >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    fail "wixl and msitools are missing and installing them needs root: run 'sudo apt-get install -y wixl msitools', then run this again."
  fi
  command -v apt-get >/dev/null || fail "wixl and msitools are missing and there is no apt-get to install them with."
  say "installing Debian's wixl and msitools packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || fail "apt-get update failed; wixl cannot be installed."
  apt-get install -y -qq wixl msitools >&2 || fail "apt-get install -y wixl msitools failed."
fi

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
stage="$output/.stage-msi"
rm -rf "$stage"
mkdir -p "$stage"

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

publish() {
  # The assembly is named after its project unless given (the proxy's is quintet-proxy).
  local project=$1 target=$2 assembly=${3:-}
  if [[ "$from_build" == true ]]; then
    [[ -n "$assembly" ]] || assembly=$(basename "$project" .csproj)
    copy_build_output "$repo/$(dirname "$project")" "$assembly" "$configuration" "$target"
    # Portable: native libraries of other systems than Windows are dead weight.
    if [[ -d "$target/runtimes" ]]; then
      find "$target/runtimes" -mindepth 1 -maxdepth 1 -type d ! -name 'win' ! -name 'win-x64' -exec rm -rf {} +
    fi
  else
    say "publishing $project ($configuration, win-x64, self-contained: $self_contained)"
    dotnet publish "$repo/$project" --nologo -v quiet -c "$configuration" -r win-x64 --self-contained "$self_contained" \
      --artifacts-path "$build" -o "$target" >&2 \
      || fail "dotnet publish $project failed"
  fi
  find "$target" -maxdepth 1 -name '*.xml' -exec sh -c 'for f; do [ -f "${f%.xml}.dll" ] && rm -f "$f"; done' sh {} +
}
publish src/Quintet.Manager/Quintet.Manager.csproj "$stage/manager"
publish tools/Quintet.Cli/Quintet.Cli.csproj "$stage/cli"
publish tools/Quintet.Proxy/Quintet.Proxy.csproj "$stage/proxy" quintet-proxy
if [[ "$from_build" == true ]]; then
  # The launchers a win-x64 publish would make, by the SDK's own task, in a project copied to the build folder (its
  # restore and obj stay there). No build servers or reused nodes: nothing outlives the script.
  mkdir -p "$build/launchers"
  cp "$here/launchers.csproj" "$build/launchers/launchers.csproj"
  say "making the Windows launchers (launchers.csproj)"
  dotnet msbuild "$build/launchers/launchers.csproj" -restore -t:CreateLaunchers -nologo -v:minimal -nodeReuse:false \
    --disable-build-servers -p:ImportDirectoryBuildProps=false -p:ImportDirectoryPackagesProps=false \
    "-p:Programs=\"$stage/manager/Quintet.Manager.dll;$stage/cli/Quintet.Cli.dll;$stage/proxy/quintet-proxy.dll\"" >&2 \
    || fail "making the Windows launchers failed (launchers.csproj)"
fi
[[ -f "$stage/manager/Quintet.Manager.exe" ]] || fail "the publish has no Quintet.Manager.exe, which the service runs"
[[ -f "$stage/proxy/quintet-proxy.exe" ]] || fail "the publish has no quintet-proxy.exe, which the proxy's service runs"

# The file lists: every published file but the services' executables, which Quintet.wxs declares with their services.
# wixl-heat names a component and a file after the file's path inside its folder, so the two programs' many files of
# the same name (the runtime's, when self-contained) would clash: each list's ids get the program's prefix.
heat() {
  local folder=$1 directory=$2 group=$3 variable=$4 ids=$5
  shift 5
  (cd "$stage" && find "$folder" -type f | LC_ALL=C sort) \
    | (cd "$stage" && wixl-heat -p "$folder/" --directory-ref "$directory" --component-group "$group" --var "var.$variable" --win64 "$@") \
    | sed -E "s/Id=\"(cmp|fil|dir)/Id=\"$ids\1/g" \
    > "$stage/$group.wxs"
}
heat manager MANAGERDIR ManagerFiles ManagerSource m -x Quintet.Manager.exe
heat cli CLIDIR CliFiles CliSource c
heat proxy PROXYDIR ProxyFiles ProxySource p -x quintet-proxy.exe

package="$output/quintet-$version-x64.msi"
say "compiling $package ($(find "$stage/manager" "$stage/cli" "$stage/proxy" -type f | wc -l) files)"
# wixl finds sources relative to its working folder only (it refuses absolute paths).
(cd "$stage" && wixl -a x64 -o "$package" \
  -D Version="$version" -D ManagerSource=manager -D CliSource=cli -D ProxySource=proxy -D Win64=yes -D Wixl=1 \
  "$here/Quintet.wxs" ManagerFiles.wxs CliFiles.wxs ProxyFiles.wxs) >&2 \
  || fail "wixl failed on $here/Quintet.wxs"
rm -rf "$stage"
say "built $package"
echo "$package"
