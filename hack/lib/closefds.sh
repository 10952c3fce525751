# close_inherited_fds closes every file descriptor above 2 in the calling (sub)shell. A
# daemon started from a script otherwise keeps whatever its caller had open: a lock that
# `flock FILE make ...` holds, or the pipe of a `| tee`, so the lock is never released and the
# pipe's reader never sees end of file. Call it in the subshell that starts the daemon.
close_inherited_fds() {
  local fd n
  for fd in /proc/"$BASHPID"/fd/*; do
    n=${fd##*/}
    [[ $n =~ ^[0-9]+$ ]] && ((n > 2)) || continue
    eval "exec $n>&-" 2>/dev/null || true
  done
}
