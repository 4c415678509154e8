# Sourced by installer/linux/build-deb.sh and installer/windows/build-msi.sh for --from-build: takes a project's build
# output (what `dotnet build` of Quintet.sln left in <project>/bin/<configuration>/<framework>/) instead of publishing it
# again. Reads that folder only: nothing is built, nothing in the work tree is written (the tests package the output of
# the `dotnet test` run they are part of, while other test projects run from the same bin and obj folders).
#
# For a framework-dependent, portable program the build output is its publish output (the same deps.json and
# runtimeconfig.json, the same libraries, native libraries under runtimes/ and satellite resources) plus this machine's
# launcher (apphost, a file named after the assembly) and minus web.config, which only IIS reads.

# copy_build_output PROJECT_DIR ASSEMBLY CONFIGURATION TARGET_DIR
copy_build_output() {
  local project_dir=$1 assembly=$2 configuration=$3 target=$4
  local framework
  framework=$(sed -n 's:.*<TargetFramework>\(.*\)</TargetFramework>.*:\1:p' "$repo/Directory.Build.props" | head -n 1)
  [[ -n "$framework" ]] || fail "no <TargetFramework> in $repo/Directory.Build.props"
  local from="$project_dir/bin/$configuration/$framework"
  [[ -f "$from/$assembly.dll" && -f "$from/$assembly.deps.json" && -f "$from/$assembly.runtimeconfig.json" ]] \
    || fail "--from-build: no build of $assembly in $from; run 'dotnet build Quintet.sln -c $configuration' first."
  say "taking $assembly from $from (built $(date -r "$from/$assembly.dll" '+%F %T'))"
  mkdir -p "$target"
  cp -R "$from/." "$target/"
  rm -f "$target/$assembly"
  # A build or publish for one runtime identifier nests a whole program of its own (win-x64/, win-x64/publish/):
  # not part of this one.
  local nested
  while IFS= read -r nested; do
    rm -rf "$target/${nested%%/*}"
  done < <(cd "$target" && find . -mindepth 2 -name "$assembly.dll" -printf '%P\n')
}
