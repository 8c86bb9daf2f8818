#!/usr/bin/env bash
# Stop exactly the daemons tests/cluster/start_slurm.sh started (the PIDs it
# recorded in $TRUSTCAL_SLURM_DIR/pids/), in reverse order: slurmd,
# slurmctld, slurmdbd, mariadbd, munged. A PID that no longer belongs to that
# daemon (exited, reused) is left alone. Configuration, the accounting
# database and the packages stay, so the next start takes a few seconds.
set -uo pipefail

STATE=${TRUSTCAL_SLURM_DIR:-/var/tmp/trustcal-slurm}
PIDS=$STATE/pids
say() { printf 'stop_slurm: %s\n' "$*" >&2; }

[[ -d $PIDS ]] || { say "nothing to stop ($PIDS does not exist)"; exit 0; }

# pid_of NAME: the recorded PID, if that process is still the daemon NAME
pid_of() {
    local f=$PIDS/$1.pid pid
    [[ -s $f ]] || return 1
    pid=$(<"$f")
    [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "/$1 " && echo "$pid"
}

status=0
for name in slurmd slurmctld slurmdbd mariadbd munged; do
    if ! pid=$(pid_of "$name"); then
        rm -f "$PIDS/$name.pid"
        continue
    fi
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do            # up to 20 s for a clean shutdown
        [[ -d /proc/$pid ]] || break
        sleep 0.2
    done
    if [[ -d /proc/$pid ]]; then
        say "$name (pid $pid) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
        sleep 0.5
    fi
    if [[ -d /proc/$pid ]]; then
        say "could not stop $name (pid $pid)"
        status=1
    else
        say "stopped $name (pid $pid)"
        rm -f "$PIDS/$name.pid"
    fi
done
exit $status
