# shellcheck shell=bash
# A heartbeat for long steps, to be sourced: `. hack/lib/heartbeat.sh`.
#
# Why: on a cold 2-core machine single steps of `make ci` run for ten minutes and more (the
# kube-apiserver build, the race-enabled tests). A step that prints nothing that long looks
# hung, and people kill it. heartbeat_run names the step and what to expect before it starts,
# says it is still alive with the elapsed time while it runs, and reports how long it took.
#
#   heartbeat_run [-v VERB] [-e EXPECTED] [-i SECONDS] [-s FUNCTION] NAME COMMAND [ARG...]
#
#     -v VERB      what the step is doing, as a present participle (default "running")
#     -e EXPECTED  how long it usually takes, e.g. "~9 min on 2 cores, cold"; printed once
#     -i SECONDS   seconds between heartbeats (default $HEARTBEAT_INTERVAL, else 30)
#     -s FUNCTION  a shell function (or command) whose one-line output is appended to every
#                  heartbeat, for progress the elapsed time alone does not show (for example
#                  which test packages are still running)
#
# It prints, on stderr (stdout stays the command's, so callers can still capture it):
#
#   [kube-apiserver] building (expected ~9 min on 2 cores, cold)
#   [kube-apiserver] still building, 0m30s elapsed
#   [kube-apiserver] done building in 8m41s        (or: FAILED after 0m12s, exit status 1)
#
# and returns the command's exit status. COMMAND runs in the foreground, so it keeps stdin and
# receives ^C directly. Pass a program (or a subshell: `bash -c ...`); a shell function works
# too, but bash ignores `set -e` inside a function whose status is being tested, which is what
# heartbeat_run must do to report failures.

# heartbeat_fmt SECONDS prints a duration as 1m05s; minutes keep growing past an hour because
# the expected durations are given in minutes too.
heartbeat_fmt() {
  printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

heartbeat_run() {
  local verb=running expected="" interval="${HEARTBEAT_INTERVAL:-30}" status="" opt OPTIND=1
  local usage="usage: heartbeat_run [-v VERB] [-e EXPECTED] [-i SECONDS] [-s FUNCTION] NAME COMMAND [ARG...]"
  while getopts 'v:e:i:s:' opt; do
    case "$opt" in
      v) verb="$OPTARG" ;;
      e) expected="$OPTARG" ;;
      i) interval="$OPTARG" ;;
      s) status="$OPTARG" ;;
      *) echo "$usage" >&2; return 2 ;;
    esac
  done
  shift $((OPTIND - 1))
  if [ $# -lt 2 ]; then
    echo "$usage" >&2
    return 2
  fi
  local name="$1"
  shift

  local start
  printf -v start '%(%s)T' -1
  if [ -n "$expected" ]; then
    printf '[%s] %s (expected %s)\n' "$name" "$verb" "$expected" >&2
  else
    printf '[%s] %s\n' "$name" "$verb" >&2
  fi

  # The ticker sleeps one second at a time and checks that this shell is still alive, so it
  # goes away within a second when the step ends or the script is killed, and never leaves a
  # long sleep behind holding the terminal or a pipe open. Its sleeps write to /dev/null for
  # output for the same reason.
  local parent=$BASHPID
  (
    next=$((start + interval))
    while kill -0 "$parent" 2>/dev/null; do
      sleep 1 >/dev/null 2>&1
      printf -v now '%(%s)T' -1
      if [ "$now" -ge "$next" ]; then
        extra=""
        [ -n "$status" ] && extra="$("$status" 2>/dev/null || true)"
        [ -n "$extra" ] && extra="; $extra"
        printf '[%s] still %s, %s elapsed%s\n' "$name" "$verb" "$(heartbeat_fmt $((now - start)))" "$extra" >&2
        next=$((next + interval))
      fi
    done
  ) &
  local ticker=$!

  local rc=0
  "$@" || rc=$?

  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  local end
  printf -v end '%(%s)T' -1
  if [ "$rc" -eq 0 ]; then
    printf '[%s] done %s in %s\n' "$name" "$verb" "$(heartbeat_fmt $((end - start)))" >&2
  else
    printf '[%s] FAILED after %s, exit status %d\n' "$name" "$(heartbeat_fmt $((end - start)))" "$rc" >&2
  fi
  return "$rc"
}
