#!/usr/bin/env bash
# Fails when a file tracked by git is larger than 1 MiB and hack/large-files.allow does not
# list it (part of `make verify`). Why: a binary committed once stays in every clone forever,
# even after it is deleted (hack/cluster's 19 MB build output nearly was); sources, fixtures
# and docs stay far below the limit, so anything above it is a mistake until someone says
# otherwise in the allow-list, with a reason.
#
#   hack/check-large-files.sh [REPO_DIR]     (default: this checkout)
#
# Tracked means in the index (git ls-files): a file staged for the next commit is checked
# before it is committed. LIMIT (bytes, default 1048576) is for trying another limit by hand.
set -euo pipefail
hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo=${1:-$hack_dir/..}
cd "$repo"
limit=${LIMIT:-1048576}
allow_file=hack/large-files.allow

# The allow-list: one path a line, exactly as git ls-files prints it; # starts a comment.
declare -A allowed=()
if [ -f "$allow_file" ]; then
  while IFS= read -r line; do
    line=${line%%#*}
    line=${line#"${line%%[![:space:]]*}"}
    line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] && allowed[$line]=1
  done <"$allow_file"
fi

fail=0
n=0
# NUL-separated from end to end, so that any path, even one with a newline in it, is read
# whole; one stat for all the files, not one a file (hundreds of forks took 20 s on a busy
# machine). A path in the index but deleted from the work tree (an unstaged rm) has no size:
# stat's complaint about it is dropped, and the commit will not carry it. Symlinks are
# measured as links (stat without -L), as git stores them.
while IFS=$'\t' read -r -d '' size f; do
  n=$((n + 1))
  if [ "$size" -gt "$limit" ] && [ -z "${allowed[$f]:-}" ]; then
    printf 'check-large-files: %s is %d bytes, over the %d-byte limit, and not in %s\n' "$f" "$size" "$limit" "$allow_file" >&2
    fail=1
  fi
done < <(git ls-files -z | xargs -0 -r stat --printf '%s\t%n\0' -- 2>/dev/null || true)

[ "$n" -gt 0 ] || { echo "check-large-files: git ls-files listed no files in $(pwd); not a checkout?" >&2; exit 1; }
if [ "$fail" != 0 ]; then
  echo "check-large-files: remove the file from git (git rm --cached FILE, and add it to .gitignore if it is build output), or list it in $allow_file with a comment saying why it belongs" >&2
  exit 1
fi
echo "check-large-files: none of the $n tracked files is over $limit bytes outside $allow_file"
