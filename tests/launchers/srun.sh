#!/bin/sh
# srun.sh DSPRELOAD PROG PYTHON: a one-node Slurm cluster of its own
# (slurmctld and slurmd on free ports of localhost, state in a temporary
# directory, no munge: auth/none), then two tasks of rank_pin (no MPI) under
# srun, as docs/deployment.md starts them: dspreload in the command each task
# runs, one DSP_NODE_KEY for the job. The checksums must be those of the run
# without the shim; each task writes one stats file with its rank
# (SLURM_PROCID) and its two pinned 2 MiB blocks; while both hold them, each
# task's statistics count both tasks in one node ledger under one cap.
dsp=$1 prog=$2 py=$3
. "$(dirname "$0")/common.sh"
cap=536870912 # 512M
s=$tmp/slurm
mkdir "$s" "$s/state" "$s/spool" "$tmp/sync"
ports=$("$py" -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))') || fail "no free ports"
set -- $ports
cat >"$s/slurm.conf" <<CONF
ClusterName=dsptest
SlurmctldHost=localhost
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$s/slurm.conf"
unset SLURM_JOB_ID SLURM_JOBID  # a job of this cluster, not of one the test may run in
# The daemons run in the foreground (-D), as background jobs of this shell:
# in its process group, which meson's timeout signals (SIGTERM, then SIGKILL
# half a second later, before the EXIT trap could stop them). Daemonized, they
# left their own session and kept running, as root, after a killed test.
# Stopped at exit whatever happened: asked first, then by their pids.
slurmctld -D -i >"$tmp/slurmctld.out" 2>&1 &
ctld=$!
slurmd -D -N localhost >"$tmp/slurmd.out" 2>&1 &
slurmd=$!
cleanup_hook='scontrol shutdown >/dev/null 2>&1
  for p in $slurmd $ctld; do
    i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$p" 2>/dev/null
  done'
i=0
until [ "$(sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]; do
  i=$((i + 1))
  [ $i -lt 600 ] || fail "the node is not idle after 60 s: $(sinfo 2>&1)"
  kill -0 "$ctld" 2>/dev/null || fail "slurmctld exited"
  kill -0 "$slurmd" 2>/dev/null || fail "slurmd exited"
  sleep 0.1
done
srun_ranks() {
  rm -f "$tmp/sync"/*
  RANK_PIN_SYNC=$tmp/sync timeout --foreground 120 srun --ntasks-per-node 2 "$@"
}
srun_ranks "$prog" >"$tmp/plain.out" 2>&1 || fail "srun without the shim: exit $?"
srun_ranks "$dsp" --stats-file "$tmp/stats/dsp.%p.json" DSP_NODE_KEY="$key" \
  DSP_NODE_MAX_PINNED=512M DSP_LOG=warn -- "$prog" >"$tmp/shim.out" 2>&1 ||
  fail "srun under dspreload: exit $?"
a=$(grep '^rank ' "$tmp/plain.out" | sort) b=$(grep '^rank ' "$tmp/shim.out" | sort)
[ "$(echo "$a" | grep -c 'checksum')" -eq 2 ] || fail "want 2 checksums without the shim: $a"
[ "$a" = "$b" ] || fail "checksums differ under the shim: $(echo "$a" | tr '\n' ' ') / $(echo "$b" | tr '\n' ' ')"
files=$(check_ranks "$tmp/shim.out" 2) || { echo "$files"; exit 1; }
r=0
for f in $files; do
  [ "$(num "$f" rank)" = $r ] || fail "$f: want \"rank\":$r (SLURM_PROCID): $(cat "$f")"
  [ "$(num "$f" pool_misses)" -ge 2 ] && [ "$(num "$f" pinned_new_bytes)" -ge 4194304 ] ||
    fail "rank $r did not pin its two 2 MiB blocks: $(cat "$f")"
  [ "$(num "$f" node_cap_bytes)" = $cap ] || fail "rank $r is not under the node cap 512M: $(cat "$f")"
  r=$((r + 1))
done
for r in 0 1; do
  grep -q "^node rank $r users 2 pinned 8388608 cap $cap$" "$tmp/shim.out" ||
    fail "rank $r does not see both tasks' 8 MiB in one ledger capped at 512M: $(grep '^node' "$tmp/shim.out")"
done
echo "same checksums; $(grep '^node' "$tmp/shim.out" | tr '\n' ';')"
