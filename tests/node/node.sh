#!/bin/sh
# The node ledger (issue 16), with real processes under LD_PRELOAD.
# Usage: node.sh CASE NODE_PIN LIB DSPRELOAD
# Each case uses a DSP_NODE_KEY of its own and removes its ledger. Waits are
# generous polling loops (the machine is shared); the only timed assertion is
# the issue's "within 5 s".
name=$1 prog=$2 lib=$3 dsp=$4
fail() { echo "FAIL: $*"; [ -n "$top" ] && for f in "$top"/err.*; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
top=$(mktemp -d) && chmod 755 "$top"
key="test-$name-$$"
export DSP_NODE_KEY="$key" DSP_LOG=warn
path=$(DSP_NODE_KEY="$key" "$dsp" doctor 2>/dev/null | grep -o '/dev/shm/dspreload-[0-9]*-[0-9a-f]*' | head -1)
[ -n "$path" ] || fail "doctor shows no ledger path"
cleanup() { [ -n "$stop" ] && touch "$stop"; sleep 0.2; rm -rf "$top"; rm -f "$path"; }
trap cleanup EXIT
stop=$top/stop go=$top/go
run() { LD_PRELOAD="$lib" "$prog" "$@"; }
# (Background processes are started without run, so that $! is the program
# itself: a function would run in a subshell of its own.)

# parent_slot_alone MODE WHAT: node_pin MODE pins 16 MiB and makes a child
# (WHAT) that must leave the parent's slot alone: once it is gone, the
# ledger holds one live row, the parent's, with its 16 MiB.
parent_slot_alone() {
  DSP_POOL_MAX=0 NODE_PROBE="'$dsp' stats --node --key '$key' >'$top/probe'" run "$1" >"$top/out.$1" 2>"$top/err.$1" ||
    fail "$1 run: exit $? ($(cat "$top/out.$1"))"
  parent=$(sed -n 's/^parent //p' "$top/out.$1")
  grep -q "^$parent .* 16 MiB .* live$" "$top/probe" ||
    fail "the parent's slot is not its own 16 MiB after $2: $(cat "$top/probe")"
  [ "$(grep -c ' live$' "$top/probe")" -eq 1 ] || fail "more than the parent's row: $(cat "$top/probe")"
}

# Polls until the file holds a line matching the pattern (120 s at most).
wait_for() {
  i=0
  until grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 1200 ] || fail "no '$2' in $1 after 120 s: $(cat "$1" 2>/dev/null)"
    sleep 0.1
  done
}
vmlck_kb() { awk '/^VmLck:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
live_rows() { "$dsp" stats --node --key "$key" | grep -c ' live$'; }

# idle_cuda_rank_yields TAG: node_cuda pools a registered 768 MiB and idles
# (out.TAG); another process's 768 MiB under a 1 GiB node cap is given
# within DSP_NODE_WAIT, the idle rank's VmLck back to nothing, its span
# unregistered with the driver once.
idle_cuda_rank_yields() {
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=1G
  LD_PRELOAD="$lib" "$NODE_CUDA" pool 768 "$stop" >"$top/out.$1" 2>"$top/err.$1" &
  p=$!
  wait_for "$top/out.$1" '^pooled'
  sleep 0.5 # its timer publishes the pooled figure every 50 ms
  [ "$(vmlck_kb $p)" -ge $((768 * 1024)) ] || fail "the CUDA rank's pool is not locked: $(vmlck_kb $p) kB"
  DSP_NODE_WAIT=5000 run want 768 0 >"$top/out.q" 2>"$top/err.q" ||
    fail "the idle CUDA pool did not yield: $(cat "$top/out.q"); VmLck of the idle rank $(vmlck_kb $p) kB"
  echo "given after $(sed -n 's/^got //p' "$top/out.q") ms"
  [ "$(vmlck_kb $p)" -lt 1024 ] || fail "the idle rank still locks $(vmlck_kb $p) kB"
  touch "$stop"
  wait $p || fail "the CUDA rank: $(cat "$top/out.$1")"
  grep -q '^unregistered 1$' "$top/out.$1" || fail "not unregistered with the driver once: $(cat "$top/out.$1")"
}

# churn_both WHAT PHRASE: churn_through in a single-threaded process, then in
# a threaded one (the check runs at its new pins, or in the timer), under a
# 1 GiB cap with no pool.
churn_both() {
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=0
  for mode in single threaded; do churn_through $mode "$1" "$2"; done
}

# churn_through MODE WHAT PHRASE: node_pin churn (MODE: single or threaded)
# joins the ledger; WHAT (a shell command) is done to it by another process;
# the churner must warn once with PHRASE, keep pinning with nothing refused,
# and exit 0 (issue 34: it died of SIGBUS, or was refused every pin).
churn_through() {
  t=""
  [ "$1" = threaded ] && t=threaded
  LD_PRELOAD="$lib" "$prog" churn 4 "$stop.$1" $t >"$top/out.$1" 2>"$top/err.$1" &
  pid=$!
  wait_for "$top/out.$1" '^joined'
  sh -c "$2" || fail "$1: could not do to the ledger: $2"
  i=0
  until grep -q "$3" "$top/err.$1" || ! kill -0 $pid 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "$1: no '$3' within 60 s"
    sleep 0.1
  done
  sleep 0.3 # pins after the warning
  touch "$stop.$1"
  wait $pid
  rc=$?
  [ $rc -eq 0 ] || fail "$1: the process died after '$2': exit $rc (135 is SIGBUS)"
  grep -q '^churned [1-9][0-9]* refused 0$' "$top/out.$1" || fail "$1: pins refused: $(cat "$top/out.$1")"
  [ "$(grep -c "node ledger $path $3.*budgets alone from now on" "$top/err.$1")" -eq 1 ] ||
    fail "$1: not one warning: $(cat "$top/err.$1")"
  [ "$(grep -c 'node ledger\|refused' "$top/err.$1")" -eq 1 ] || fail "$1: more than the warning: $(cat "$top/err.$1")"
  rm -f "$path"
}

case $name in
node_cap_holds_for_ranks_started_together)
  # Six ranks started together, each pinning 32 MiB blocks until refused: the
  # sum of what the kernel shows locked stays within the cap plus one block,
  # and every rank gets some.
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=0
  n=6 pids=""
  for r in 1 2 3 4 5 6; do
    RANK=$r LOCAL_RANK=$r LD_PRELOAD="$lib" "$prog" hold 1024 32 "$stop" "$go" >"$top/out.$r" 2>"$top/err.$r" &
    pids="$pids $!"
  done
  sleep 0.5
  touch "$go"
  # The sum sampled while they pin, and once all are done: never past the cap
  # and one block.
  most=0 i=0
  while [ "$(cat "$top"/out.* 2>/dev/null | grep -c '^pinned')" -lt $n ]; do
    sum=0
    for p in $pids; do sum=$((sum + $(vmlck_kb $p))); done
    [ $sum -gt $most ] && most=$sum
    i=$((i + 1))
    [ $i -lt 2400 ] || fail "the ranks did not all finish within 120 s: $(cat "$top"/out.*)"
    sleep 0.05
  done
  sum=0
  for p in $pids; do sum=$((sum + $(vmlck_kb $p))); done
  [ $sum -gt $most ] && most=$sum
  [ $most -le $(((1024 + 32) * 1024)) ] || fail "the ranks locked $most kB together, over 1 GiB + 32 MiB"
  for r in 1 2 3 4 5 6; do
    got=$(sed -n 's/^pinned //p' "$top/out.$r")
    [ "$got" -gt 0 ] || fail "rank $r got nothing (the others: $(cat "$top"/out.*))"
  done
  table=$("$dsp" stats --node --key "$key")
  [ "$(echo "$table" | grep -c ' live$')" -eq $n ] || fail "stats --node shows no row per rank: $table"
  echo "$table" | grep -q '^total' || fail "stats --node has no total: $table"
  echo "locked together: $sum kB at the end, $most kB at most; $(cat "$top"/out.* | tr '\n' ' ')"
  touch "$stop"
  wait
  ;;
node_killed_rank_share_comes_back)
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=0
  LD_PRELOAD="$lib" "$prog" hold 512 512 "$stop" >"$top/out.a" 2>"$top/err.a" &
  a=$!
  wait_for "$top/out.a" '^pinned 512'
  LD_PRELOAD="$lib" "$prog" hold 512 512 "$stop" >"$top/out.b" 2>"$top/err.b" &
  wait_for "$top/out.b" '^pinned 512'
  run want 512 0 >"$top/out.c0" 2>"$top/err.c0" && fail "a third half fitted while two were held"
  kill -KILL $a
  wait $a 2>/dev/null
  run want 512 5 >"$top/out.c" 2>"$top/err.c" ||
    fail "the killed rank's half did not come back within 5 s: $(cat "$top/out.c")"
  echo "the half came back after $(sed -n 's/^got //p' "$top/out.c") ms"
  touch "$stop"
  wait
  ;;
node_dead_slot_reclaimed_without_a_refusal|node_dead_slot_reclaimed_by_a_single_threaded_process)
  # Regressions: a killed process's slot stayed counted (users, the pool
  # caps' divisor, and its bytes) until some process was refused. A threaded
  # survivor (it has the timer) reclaims it within a second; a single-threaded
  # one (no timer) at its next new pins, at most once a second, and not
  # before it pins again.
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=0
  go=$top/go
  single=0
  [ "$name" = node_dead_slot_reclaimed_by_a_single_threaded_process ] && single=1
  if [ $single -eq 1 ]; then
    LD_PRELOAD="$lib" "$prog" pool 16 "$stop" calls "$go" >"$top/out.a" 2>"$top/err.a" &
  else
    LD_PRELOAD="$lib" "$prog" pool 16 "$stop" threaded >"$top/out.a" 2>"$top/err.a" &
  fi
  wait_for "$top/out.a" '^pooled'
  LD_PRELOAD="$lib" "$prog" hold 64 64 "$stop" >"$top/out.b" 2>"$top/err.b" &
  b=$!
  wait_for "$top/out.b" '^pinned 64'
  kill -KILL $b
  wait $b 2>/dev/null
  if [ $single -eq 1 ]; then
    sleep 1.5 # a makes no call meanwhile, and has no timer: the slot stays
    "$dsp" stats --node --key "$key" | grep -q 'gone' ||
      fail "the dead slot went without a's pins (a timer?): $("$dsp" stats --node --key "$key")"
    touch "$go" # a's new pins (4 MiB every 50 ms) begin
  fi
  i=0
  while "$dsp" stats --node --key "$key" | grep -q 'gone'; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the dead slot was not reclaimed within 10 s: $("$dsp" stats --node --key "$key")"
    sleep 0.1
  done
  "$dsp" stats --node --key "$key" | grep -q '^total .* 0 B ' ||
    fail "the dead process's bytes stayed: $("$dsp" stats --node --key "$key")"
  grep -q refused "$top/out.a" && fail "a was refused: $(cat "$top/out.a")"
  echo "reclaimed after about $((i * 100)) ms"
  touch "$stop"
  wait
  ;;
node_idle_pool_yields)
  # 768 MiB idle in one process's pool under a 1 GiB cap: another's 768 MiB
  # is given within its wait (one try, no retry of ours). The holder has a
  # thread of its own, as every CUDA program does: the ledger's timer answers
  # for it (a single-threaded one answers at its next call: the case below).
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=1G
  LD_PRELOAD="$lib" "$prog" pool 768 "$stop" threaded >"$top/out.p" 2>"$top/err.p" &
  wait_for "$top/out.p" '^pooled'
  sleep 0.5 # its timer publishes the pooled figure every 50 ms
  DSP_NODE_WAIT=5000 run want 768 0 >"$top/out.q" 2>"$top/err.q" ||
    fail "the idle pool did not yield: $(cat "$top/out.q")"
  echo "given after $(sed -n 's/^got //p' "$top/out.q") ms"
  touch "$stop"
  wait
  ;;
node_cuda_yield_makes_no_context_on_another_device)
  # Regression (review of issue 30's change): the timer's runtime calls ran
  # on device 0, the runtime's default for a new thread, and made device 0's
  # primary context in a rank that works on device 1 (hundreds of MiB of
  # GPU 0 in every rank of a node on real GPUs). They run on the device the
  # program registers on.
  export FAKECUDA_DEVICES=2
  NODE_CUDA_DEVICE=1 idle_cuda_rank_yields d
  grep -q '^contexts 2$' "$top/out.d" || fail "a context on a device the program never used: $(cat "$top/out.d")"
  ;;
node_cuda_pool_yields_to_the_node_cap)
  # Regression (issue 30): a CUDA rank's cudaHostAlloc(768 MiB) freed with
  # cudaFreeHost stays registered in the shim's pool; the rank then idles
  # (its runtime's thread and the ledger's timer only). Another rank's
  # 768 MiB under a 1 GiB node cap was refused after 5 s while the idle one
  # held VmLck 768 MiB: the timer gave back the unregistered pool only. Its
  # registered spans freed by cudaFreeHost (the device waited for) yield
  # within the wait, unregistered with the driver first, as the plain pool's.
  idle_cuda_rank_yields p
  # The same while the idle rank's own thread holds a graph capture in the
  # global mode: the timer's calls (relaxed) are not refused for it, and
  # leave it valid.
  rm -f "$stop"
  LD_PRELOAD="$lib" "$NODE_CUDA" pool 768 "$stop" capture >"$top/out.c" 2>"$top/err.c" &
  p=$!
  wait_for "$top/out.c" '^pooled'
  sleep 0.5
  DSP_NODE_WAIT=5000 run want 768 0 >"$top/out.r" 2>"$top/err.r" ||
    fail "the idle CUDA pool did not yield during a capture: $(cat "$top/out.r")"
  touch "$stop"
  wait $p || fail "the capturing CUDA rank: $(cat "$top/out.c")"
  grep -q '^capture 0$' "$top/out.c" || fail "the yield broke the rank's capture: $(cat "$top/out.c")"
  grep -q '^unregistered 1$' "$top/out.c" || fail "not unregistered during the capture: $(cat "$top/out.c")"
  ;;
node_cuda_pool_held_to_the_node_share)
  # Regression (issue 30): the registered pool was held to DSP_POOL_MAX alone,
  # where the plain pool keeps at most the process's share of the node cap
  # (cap / users). With another rank in the ledger, a cudaFreeHost'd 768 MiB
  # block is over the 512 MiB share: unregistered and given back at the free.
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=1G
  LD_PRELOAD="$lib" "$prog" hold 16 16 "$stop" >"$top/out.h" 2>"$top/err.h" &
  wait_for "$top/out.h" '^pinned 16'
  LD_PRELOAD="$lib" "$NODE_CUDA" pool 768 "$stop" >"$top/out.p" 2>"$top/err.p" &
  p=$!
  wait_for "$top/out.p" '^pooled'
  [ "$(vmlck_kb $p)" -lt 1024 ] || fail "the CUDA rank pools $(vmlck_kb $p) kB over its share"
  touch "$stop"
  wait $p || fail "the CUDA rank: $(cat "$top/out.p")"
  grep -q '^unregistered 1$' "$top/out.p" || fail "not unregistered at the free: $(cat "$top/out.p")"
  wait
  ;;
node_single_threaded_process_starts_no_timer)
  # Regression: the ledger's timer thread, started at the first pin, ended
  # glibc's single-thread lock shortcut (the pool cycle 1.19-1.53x slower).
  # A single-threaded process keeps its one thread; one with a thread of its
  # own gets the timer (2 + 1).
  got=$(run threads 0 2>"$top/err.a") || fail "threads 0: $got"
  [ "$got" = "threads 1" ] || fail "a single-threaded process that pinned has: $got"
  got=$(run threads 1 2>"$top/err.b") || fail "threads 1: $got"
  [ "$got" = "threads 3" ] || fail "a process with a thread of its own that pinned has: $got (no timer?)"
  ;;
node_fork_child_gets_a_timer_once_threaded)
  # Regression: a fork child that never execs had no timer even when it made
  # threads of its own and pinned, so its idle pool yielded only at its own
  # calls. A child with a thread of its own that pins gets one (2 + 1); one
  # without stays single-threaded (it answers at its calls), even under a
  # threaded parent.
  got=$(run forkthreads 0 2>"$top/err.a") || fail "forkthreads 0: $got"
  [ "$got" = "threads 1" ] || fail "a single-threaded fork child that pinned has: $got"
  got=$(run forkthreads 1 2>"$top/err.b") || fail "forkthreads 1: $got"
  [ "$got" = "threads 3" ] || fail "a fork child with a thread of its own that pinned has: $got (no timer?)"
  # The same under a single-threaded parent, where glibc's flag answers
  # without the stat of /proc/self/task.
  got=$(run forkthreads 0 0 2>"$top/err.c") || fail "forkthreads 0 0: $got"
  [ "$got" = "threads 1" ] || fail "a single-threaded child of a single-threaded parent has: $got"
  got=$(run forkthreads 1 0 2>"$top/err.d") || fail "forkthreads 1 0: $got"
  [ "$got" = "threads 3" ] || fail "a threaded child of a single-threaded parent has: $got (no timer?)"
  ;;
node_single_threaded_idle_pool_yields_at_its_next_call)
  # Without a timer, a single-threaded process's idle pool is given back when
  # it next calls the manager (here: a 4 MiB alloc+free every 50 ms once GO
  # exists), within the other's wait.
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=1G
  LD_PRELOAD="$lib" "$prog" pool 768 "$stop" calls "$go" >"$top/out.p" 2>"$top/err.p" &
  wait_for "$top/out.p" '^pooled'
  DSP_NODE_WAIT=10000 LD_PRELOAD="$lib" "$prog" want 768 0 >"$top/out.q" 2>"$top/err.q" &
  q=$!
  sleep 1 # it has asked and waits
  touch "$go"
  wait $q || fail "the single-threaded idle pool did not yield at its next call: $(cat "$top/out.q")"
  echo "given after $(sed -n 's/^got //p' "$top/out.q") ms"
  touch "$stop"
  wait
  ;;
node_long_or_odd_key_neither_cut_nor_printed_raw)
  # A DSP_NODE_KEY past the maximum is refused with one line naming the
  # variable and the maximum (the process uses the default key, and pins),
  # never cut into another key; stats --node refuses it likewise.
  long=$(printf 'k%.0s' $(seq 1 300))
  DSP_NODE_KEY=$long run want 4 0 >"$top/out.l" 2>"$top/err.l" || fail "a long key: no memory"
  [ "$(grep -c 'DSP_NODE_KEY is longer than 159 bytes; ignored' "$top/err.l")" -eq 1 ] ||
    fail "a long key: no single warning: $(cat "$top/err.l")"
  "$dsp" stats --node --key "$long" >"$top/out.s" 2>&1 && fail "stats --node took a long key: $(cat "$top/out.s")"
  grep -q "longer than DSP_NODE_KEY's maximum of 159 bytes" "$top/out.s" || fail "stats --node: $(cat "$top/out.s")"
  # The key as the live mapping holds it, its control characters escaped.
  odd="odd$(printf '\033')[31mkey-$$"
  oddpath=$(DSP_NODE_KEY="$odd" "$dsp" doctor 2>/dev/null | grep -o '/dev/shm/dspreload-[0-9]*-[0-9a-f]*' | head -1)
  DSP_NODE_KEY="$odd" run want 4 0 >/dev/null 2>"$top/err.o" || fail "an odd key: no memory"
  "$dsp" stats --node --key "$odd" >"$top/out.o" 2>&1
  rm -f "$oddpath"
  grep -q "key:odd" "$top/out.o" || fail "stats --node shows no key: $(cat -v "$top/out.o")"
  ! grep -q "$(printf '\033')" "$top/out.o" || fail "stats --node printed a raw escape: $(cat -v "$top/out.o")"
  ;;
node_full_dev_shm_falls_back)
  # /dev/shm with no room for the ledger (a 8 KiB tmpfs mounted over it in a
  # mount namespace of the test's own): one warning, the process budgets
  # alone and pins, no SIGBUS. Needs root (or user namespaces) for the mount.
  unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs /dev/shm' 2>/dev/null ||
    { echo "SKIP: cannot mount a tmpfs in a mount namespace (unshare -m; run as root)"; exit 77; }
  unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs /dev/shm && head -c 8192 /dev/zero >/dev/shm/filler &&
    LD_PRELOAD="$1" "$2" want 16 0' sh "$lib" "$prog" >"$top/out.f" 2>"$top/err.f" ||
    fail "a full /dev/shm: exit $? ($(cat "$top/out.f"))"
  [ "$(grep -c "node ledger .* cannot be sized (/dev/shm full?).*budgets alone" "$top/err.f")" -eq 1 ] ||
    fail "a full /dev/shm: no single warning: $(cat "$top/err.f")"
  ;;
node_257th_process_budgets_alone)
  # 256 processes hold every slot; the 257th pins anyway, budgeting alone,
  # with one warning, and no crash.
  export DSP_NODE_MAX_PINNED=4G DSP_POOL_MAX=0
  n=0
  while [ $n -lt 256 ]; do
    LD_PRELOAD="$lib" "$prog" hold 1 1 "$stop" >/dev/null 2>>"$top/err.h" &
    n=$((n + 1))
  done
  i=0
  until [ "$(live_rows)" -ge 256 ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || fail "the 256 holders did not all join within 120 s: $(live_rows) live"
    sleep 0.1
  done
  run want 16 0 >"$top/out.x" 2>"$top/err.x" || fail "the 257th process got no memory: $(cat "$top/out.x")"
  [ "$(grep -c 'all 256 slots are held by live processes; this process budgets alone' "$top/err.x")" -eq 1 ] ||
    fail "the 257th process: no single warning: $(cat "$top/err.x")"
  [ "$(live_rows)" -eq 256 ] || fail "the 257th took a slot: $(live_rows) live"
  touch "$stop"
  wait
  [ ! -s "$top/err.h" ] || fail "the holders complained: $(head -5 "$top/err.h")"
  ;;
node_foreign_or_corrupt_ledger_refused)
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: run as root (the other user is uid 65534)"; exit 77; }
  as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
  expect_fallback() { # what: the phrase of the warning
    run want 64 0 >"$top/out" 2>"$top/err.x" || fail "$1: no memory (the fallback must pin)"
    grep -q "node ledger $path $2.*budgets alone" "$top/err.x" || fail "$1: no warning: $(cat "$top/err.x")"
  }
  # Another user's ledger, writable by all: refused, left as it was.
  as_other sh -c "head -c 20480 /dev/zero >'$path' && chmod 666 '$path'" || fail "cannot plant the file"
  expect_fallback "another user's ledger" "belongs to another user"
  [ "$(stat -c %u "$path")" = 65534 ] && [ "$(head -c 20480 "$path" | tr -d '\0' | wc -c)" -eq 0 ] ||
    fail "the other user's file was changed"
  rm -f "$path"
  # A symbolic link to a file of ours: never followed.
  echo secret >"$top/victim"
  as_other ln -s "$top/victim" "$path" || fail "cannot plant the link"
  expect_fallback "a symbolic link" "cannot be opened or created: ELOOP"
  [ "$(cat "$top/victim")" = secret ] || fail "the link was followed"
  rm -f "$path"
  # A FIFO: the open does not hang.
  as_other mkfifo "$path"
  timeout 60 sh -c "LD_PRELOAD='$lib' '$prog' want 64 0" >/dev/null 2>"$top/err.x" || fail "a FIFO at the name: $?"
  rm -f "$path"
  # Our own files, corrupt on purpose, then writable by others, then the wrong size.
  head -c 4096 /dev/urandom >"$path" && chmod 600 "$path"
  expect_fallback "a corrupt ledger" "is corrupt (bad magic)"
  chmod 622 "$path"
  expect_fallback "a ledger writable by others" "is writable by group or others"
  rm -f "$path" && head -c 100 /dev/urandom >"$path" && chmod 600 "$path"
  expect_fallback "a ledger of the wrong size" "has the wrong size"
  # Another dspreload's format (issue 34): format 1 (the counters in a 20 KiB
  # file). While a process of it holds a slot (a lock on its byte), refused
  # with both formats named, and left as it was; once none does, replaced.
  rm -f "$path" && { printf 'DSPDLGR\0\001\0\0\0'; head -c 20468 /dev/zero; } >"$path" && chmod 600 "$path"
  python3 -c 'import fcntl, os, sys, time
f = open(sys.argv[1], "r+"); fcntl.lockf(f, fcntl.LOCK_EX, 1, 3)
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[3]): time.sleep(0.05)' "$path" "$top/held" "$top/release" &
  holder=$!
  wait_for_file() { i=0; until [ -e "$1" ]; do i=$((i + 1)); [ $i -lt 1200 ] || fail "no $1"; sleep 0.1; done; }
  wait_for_file "$top/held"
  expect_fallback "another version's ledger" "has ledger format 1 (another dspreload's); this dspreload ([0-9.]*) uses format 2"
  [ "$(stat -c %s "$path")" -eq 20480 ] || fail "the other version's ledger was changed"
  touch "$top/release"
  wait $holder
  run want 16 0 >/dev/null 2>"$top/err.x" || fail "after the old version's process: no memory"
  [ ! -s "$top/err.x" ] || fail "the stale ledger of another format was not replaced: $(cat "$top/err.x")"
  [ "$(stat -c %s "$path")" -eq 4096 ] || fail "the stale ledger is $(stat -c %s "$path") bytes"
  rm -f "$path"
  # Another user with the same key has a ledger of its own, never ours
  # (4 MiB: it has RLIMIT_MEMLOCK's 8 MiB and no CAP_IPC_LOCK).
  theirs=$(as_other env DSP_NODE_KEY="$key" "$dsp" doctor 2>/dev/null | grep -o '/dev/shm/dspreload-[0-9]*-[0-9a-f]*' | head -1)
  [ -n "$theirs" ] && [ "$theirs" != "$path" ] || fail "the other user's ledger is $theirs, ours $path"
  as_other env LD_PRELOAD="$lib" "$prog" want 4 0 >/dev/null 2>"$top/err.x" || fail "the other user could not pin"
  [ "$(stat -c '%u %a' "$theirs")" = "65534 600" ] || fail "the other user's ledger is $(stat -c '%u %a' "$theirs")"
  [ ! -e "$path" ] || fail "the other user's process made our ledger"
  rm -f "$theirs"
  # And the ledger made when nothing is in the way: ours, 0600, its exact size.
  run want 16 0 >/dev/null 2>"$top/err.x" || fail "a fresh ledger: no memory"
  [ "$(stat -c '%u %a %s' "$path")" = "0 600 4096" ] || fail "the new ledger is $(stat -c '%u %a %s' "$path")"
  ;;
node_fork_exec_and_short_lived_processes)
  # 2000 short-lived processes that pin nothing: no ledger at all.
  LD_PRELOAD="$lib" sh -c 'i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i + 1)); done' ||
    fail "the short-lived processes failed"
  [ ! -e "$path" ] || fail "processes that pin nothing created $path"
  # A process's own DSP_MAX_PINNED caps that process, not the node it
  # created the ledger for (regression: 16M became every process's cap).
  DSP_MAX_PINNED=16M LD_PRELOAD="$lib" "$prog" hold 8 8 "$top/stop.small" >"$top/out.s" 2>"$top/err.s" &
  small=$!
  wait_for "$top/out.s" '^pinned 8'
  run want 64 0 >"$top/out.big" 2>"$top/err.big" || fail "a small DSP_MAX_PINNED capped the node: $(cat "$top/err.big")"
  touch "$top/stop.small"
  wait $small
  # fork: the child that pins nothing takes no slot, the one that pins its own;
  # exec hands the slot back (the descriptor is close-on-exec).
  NODE_PROBE="'$dsp' stats --node --key '$key' >>'$top/probe'" run fork >"$top/out.f" 2>"$top/err.f" ||
    fail "fork run: $(cat "$top/out.f")"
  parent=$(sed -n 's/^parent //p' "$top/out.f")
  [ "$(grep -c ' live$' "$top/probe")" -eq 3 ] ||
    fail "expected 1 row (the parent) then 2 (parent and pinning child): $(cat "$top/probe")"
  grep -q "^$parent " "$top/probe" || fail "no row of the parent $parent: $(cat "$top/probe")"
  [ "$(live_rows)" -eq 0 ] || fail "slots left after exit: $("$dsp" stats --node --key "$key")"
  "$dsp" stats --node --key "$key" | grep -q '^total .* 0 B ' || fail "bytes left: $("$dsp" stats --node --key "$key")"
  ;;
node_fork_without_handlers_leaves_the_parent_slot_alone)
  # Regression: a child made without the fork handlers (_Fork) shares the
  # parent's descriptor and mapping; its new pins went into the parent's slot
  # (only releases checked the owner), and stayed there after it exited.
  parent_slot_alone rawfork "the _Fork child"
  ;;
node_closed_descriptor_never_used_again)
  # A program that closes the ledger's descriptor (closefrom) and reuses its
  # number for a file of its own: no lock of ours ever reaches that file.
  # The slot stays the process's (its lock belongs to the open file, which
  # the mapping keeps open), so another process takes another slot, and what
  # the first frees before it notices leaves its own slot. It notices at its
  # once-a-second look at the descriptor while it pins (not at every new pin:
  # that was two system calls a block), with one warning, and budgets alone.
  export DSP_NODE_MAX_PINNED=1G DSP_POOL_MAX=0
  LD_PRELOAD="$lib" "$prog" closefd "$top/own" "$stop" "$go" >"$top/out.a" 2>"$top/err.a" &
  wait_for "$top/out.a" '^reused'
  LD_PRELOAD="$lib" "$prog" hold 64 64 "$stop" >"$top/out.b" 2>"$top/err.b" &
  wait_for "$top/out.b" '^pinned 64'
  table=$("$dsp" stats --node --key "$key")
  [ "$(echo "$table" | grep -c ' live$')" -eq 2 ] || fail "a's slot was not a's after the close: $table"
  echo "$table" | grep -q '^total .* 80 MiB ' || fail "expected a's 16 MiB and b's 64: $table"
  touch "$go" # a frees its 16 MiB, then pins and frees 4 MiB every 20 ms
  wait_for "$top/err.a" 'the program closed its descriptor'
  table=$("$dsp" stats --node --key "$key")
  echo "$table" | grep -q '^total .* 64 MiB ' || fail "a's freed 16 MiB stayed, or b's changed: $table"
  touch "$stop"
  wait
  grep -q '^own file unlocked' "$top/out.a" || fail "a lock of ours on the program's file: $(cat "$top/out.a")"
  [ "$(grep -c 'the program closed its descriptor' "$top/err.a")" -eq 1 ] ||
    fail "no single warning: $(cat "$top/err.a")"
  ;;
node_fork_child_keeps_a_file_at_a_closed_ledger_number)
  # Regression (review of issue 16's change): the fork handler closed the
  # child's copy of the ledger's number without checking it, and a program
  # that had closed the ledger's descriptor (closefrom) and reused the number
  # for a file of its own lost that file in every child it forked.
  DSP_POOL_MAX=0 run closefork "$top/own" >"$top/out.k" 2>"$top/err.k" || fail "closefork: exit $? ($(cat "$top/err.k"))"
  grep -q '^child kept its file' "$top/out.k" || fail "the child lost the program's file: $(cat "$top/out.k")"
  ;;
node_vfork_child_exit_leaves_the_parent_slot_alone)
  # Regression (review of issue 16's change): a vfork child that calls exit
  # runs our destructor in the parent's memory, where the owner page says
  # "ours"; it freed the parent's slot and unlocked it through the shared
  # open file. Only the pid tells such a child apart.
  parent_slot_alone vforkexit "the vfork child's exit"
  ;;
node_truncated_ledger_costs_a_warning_not_the_process)
  # Regression (issue 34): `truncate -s 0` on the ledger's file (a clean-up
  # script emptying /dev/shm) killed every process pinning through it with
  # SIGBUS. Single-threaded (the check runs at its new pins) and threaded
  # (the timer's).
  churn_both "truncate -s 0 '$path'" "was truncated by another process"
  ;;
node_overwritten_ledger_is_dropped_not_believed)
  # Regression (issue 34): random bytes written over the ledger's file while
  # a process used it were believed: every later pin was refused.
  churn_both "head -c \$(stat -c %s '$path') /dev/urandom | dd of='$path' conv=notrunc status=none" \
    "was overwritten by another process"
  ;;
node_nonsense_counters_are_dropped_not_believed)
  # Issue 34: counters that make no sense (written by another process of the
  # user into the shared memory itself) are not believed either: the check
  # before a refusal drops the ledger, and the pin goes ahead.
  churn_both "'$prog' scribble '$path' >/dev/null" "is corrupt (counters)"
  ;;
node_table_says_1_process_not_1_processes)
  # Regression (issue 31's review): stats --node's head line, read by people,
  # counted a ledger of one process as "1 processes".
  parent_slot_alone vforkexit "the vfork child's exit"
  grep -q "^ledger .*(key:$key): cap [^,]*, 1 process, 16 MiB pinned$" "$top/probe" ||
    fail "stats --node's head line for one process: $(cat "$top/probe")"
  ;;
node_mpi_ranks_in_a_slurm_allocation_show_their_mpi_rank)
  # Regression (issue 31's review): mpirun (Open MPI) or mpiexec (MPICH,
  # Intel MPI) inside a Slurm allocation starts its ranks from per-node
  # daemons that srun started, so every rank inherits SLURM_PROCID and
  # SLURM_LOCALID (the daemon's: 0 on the first node). They were asked before
  # the MPI's own variables, and all the ranks of a node showed rank 0.
  export SLURM_PROCID=0 SLURM_LOCALID=0
  for mpi in "OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_LOCAL_RANK=1" "PMI_RANK=3 MPI_LOCALRANKID=1"; do
    # shellcheck disable=SC2086 # two assignments
    export $mpi
    parent_slot_alone vforkexit "the vfork child's exit"
    grep -q "^$parent  *3  *1 .* live$" "$top/probe" ||
      fail "with SLURM_PROCID=0 SLURM_LOCALID=0 $mpi: not rank 3, local 1: $(cat "$top/probe")"
    unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK PMI_RANK MPI_LOCALRANKID
  done
  ;;
*) fail "unknown case $name" ;;
esac
echo PASS
