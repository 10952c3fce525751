# Helpers for the scripts that assemble an image's root tree from the host's Debian files
# (hack/python-agent-rootfs.sh, hack/redis-rootfs.sh). Source it, set ROOTFS_TREE to the
# tree being built and define say(); then:
#
#   copy_path PATH   copies PATH into the tree at its canonical place (its directory's real
#                    path, so /lib/x86_64-linux-gnu/x lands in usr/lib/x86_64-linux-gnu/x
#                    beside the merged-/usr links); a symlink is copied as a symlink and its
#                    target copied too, down the chain.
#   libs_of FILE     copies every shared library ldd reports for FILE (and the loader);
#                    a library ldd cannot find ends the script.

declare -A rootfs_copied=()
copy_path() {
  local p=$1 dir dest target
  dir=$(realpath "$(dirname "$p")")
  dest="$ROOTFS_TREE$dir/$(basename "$p")"
  [[ -n ${rootfs_copied[$dest]:-} ]] && return 0
  rootfs_copied[$dest]=1
  mkdir -p "$ROOTFS_TREE$dir"
  if [[ -L $p ]]; then
    target=$(readlink "$p")
    ln -s "$target" "$dest"
    [[ $target == /* ]] || target="$(dirname "$p")/$target"
    copy_path "$target"
  else
    cp -p "$p" "$dest"
  fi
}

libs_of() {
  local line lib
  while IFS= read -r line; do
    case $line in
      *"not found"*) say "$1: $line"; exit 1 ;;
      *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
      [[:space:]]/*) lib=${line#"${line%%/*}"}; lib=${lib%% (*} ;;
      *) continue ;;
    esac
    copy_path "$lib"
  done < <(ldd "$1")
}
