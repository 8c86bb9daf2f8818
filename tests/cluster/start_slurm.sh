#!/usr/bin/env bash
# Start a real single-node SLURM on this machine for tests/workflow/test_cluster.py.
#
#   sudo tests/cluster/start_slurm.sh     # installs and starts; prints the env to export
#   sudo tests/cluster/stop_slurm.sh      # stops exactly the daemons started here
#
# Debian/Ubuntu, as root, no systemd needed: installs slurm-wlm (22.05 on
# Debian 12), munge, slurmdbd and mariadb-server with apt, then starts
# munged, a private mariadbd (own data directory, 127.0.0.1:3307), slurmdbd,
# slurmctld and slurmd directly, all on loopback, and records their PIDs in
# $TRUSTCAL_SLURM_DIR/pids/. Idempotent: daemons still running from an
# earlier call are reused.
#
# The test cluster: cluster `trustcal`, node `$(hostname -s)` with the real
# CPU count and memory (`slurmd -C`), partitions `cpu` (default) and `gpu`
# (the same node), account `trustcal` for root (and $SUDO_USER). The node
# advertises one GPU-less `gpu` GRES (gres.conf File=/dev/null) so that the
# profile's `--gpus=1 --cpus-per-gpu` request of the training job is
# scheduled by slurmctld as on a GPU cluster; SLURM sets CUDA_VISIBLE_DEVICES
# for the job, but there is no GPU behind it, so torch sees none.
#
# Refuses to touch a machine whose /etc/slurm/slurm.conf was not written by
# this script (a real cluster node). Exit status: 0 = the node is idle;
# 3 = this machine does not allow it (not root, no apt-get, packages not
# reachable, a SLURM set up by someone else); 1 = it should have worked but failed.
set -euo pipefail

STATE=${TRUSTCAL_SLURM_DIR:-/var/tmp/trustcal-slurm}
PIDS=$STATE/pids
LOGS=$STATE/log
CONF=/etc/slurm/slurm.conf
MARKER="# written by trustcal tests/cluster/start_slurm.sh"
CLUSTER=trustcal
ACCOUNT=trustcal
DB_PORT=3307
DB_RUN=$STATE/mysqld        # socket and pid file of the private mariadbd
DB_SOCKET=$DB_RUN/mysqld.sock
TIMEOUT=${TRUSTCAL_SLURM_TIMEOUT:-90}   # seconds to wait for each daemon

say() { printf 'start_slurm: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
cannot() { say "cannot start a test SLURM here: $*"; exit 3; }

[[ $(id -u) == 0 ]] || cannot "must run as root (it installs packages and starts daemons)"
command -v apt-get >/dev/null || cannot "needs apt-get (Debian/Ubuntu)"
if [[ -e $CONF ]] && ! grep -qF "$MARKER" "$CONF"; then
    cannot "$CONF exists and was not written by this script: this machine already has a SLURM setup; not touching it"
fi

# --- packages ------------------------------------------------------------------
export PATH=$PATH:/usr/sbin:/sbin
need=()
for cmd in slurmctld slurmd sbatch sacct munged slurmdbd mariadbd mariadb; do
    command -v "$cmd" >/dev/null || need+=("$cmd")
done
if ((${#need[@]})); then
    say "installing slurm-wlm munge slurmdbd mariadb-server (missing: ${need[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq </dev/null >/tmp/trustcal-slurm-apt.log 2>&1 \
        || { tail -5 /tmp/trustcal-slurm-apt.log >&2; cannot "apt-get update failed: Debian package archives not reachable"; }
    apt-get install -y -qq \
        slurm-wlm slurm-client slurmdbd munge mariadb-server mariadb-client </dev/null >>/tmp/trustcal-slurm-apt.log 2>&1 \
        || { tail -20 /tmp/trustcal-slurm-apt.log >&2; cannot "apt-get install failed (log: /tmp/trustcal-slurm-apt.log)"; }
fi

mkdir -p "$PIDS" "$LOGS"

# alive NAME: the daemon recorded in pids/NAME.pid is running and is still NAME
alive() {
    local f=$PIDS/$1.pid pid
    [[ -s $f ]] || return 1
    pid=$(<"$f")
    [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "/$1 "
}

# launch NAME USER CMD...: start the daemon CMD (in its foreground mode) in
# its own session with no stdin, as USER (setpriv execs, so $! is the daemon
# itself); record its PID.
launch() {
    local name=$1 user=$2; shift 2
    if [[ $user == root ]]; then
        setsid "$@" </dev/null >>"$LOGS/$name.out" 2>&1 &
    else
        setsid setpriv --reuid="$user" --regid="$user" --init-groups "$@" </dev/null >>"$LOGS/$name.out" 2>&1 &
    fi
    echo $! >"$PIDS/$name.pid"
    say "started $name (pid $!)"
}

# wait_for WHAT CMD...: retry CMD until it succeeds or TIMEOUT passes
wait_for() {
    local what=$1; shift
    local t0=$SECONDS
    until "$@" >/dev/null 2>&1; do
        ((SECONDS - t0 < TIMEOUT)) || die "$what not ready after ${TIMEOUT}s (logs: $LOGS)"
        sleep 0.5
    done
}

# --- munge ---------------------------------------------------------------------
if [[ ! -s /etc/munge/munge.key ]]; then
    say "creating /etc/munge/munge.key"
    mungekey --create --keyfile /etc/munge/munge.key --force 2>/dev/null \
        || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if ! alive munged; then
    rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
    # munged -F runs in the foreground; --force: start even if a stale socket exists
    launch munged munge /usr/sbin/munged -F --force
fi
wait_for munged bash -c 'munge -n | unmunge'

# --- accounting database (private mariadbd on 127.0.0.1:3307) --------------------
DB_PASS_FILE=$STATE/db.pass
[[ -s $DB_PASS_FILE ]] || (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$DB_PASS_FILE")
DB_PASS=$(<"$DB_PASS_FILE")
if [[ ! -d $STATE/mysql/mysql ]]; then
    say "initialising the accounting database in $STATE/mysql"
    mkdir -p "$STATE/mysql" && chown mysql:mysql "$STATE/mysql"
    mariadb-install-db --user=mysql --datadir="$STATE/mysql" --auth-root-authentication-method=socket \
        --skip-test-db >"$LOGS/mariadb-install.out" 2>&1 || die "mariadb-install-db failed (log: $LOGS/mariadb-install.out)"
fi
mkdir -p "$DB_RUN"
chown mysql:mysql "$STATE/mysql" "$DB_RUN"
if ! alive mariadbd; then
    launch mariadbd root /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$STATE/mysql" \
        --socket="$DB_SOCKET" --pid-file="$DB_RUN/mariadbd.pid" --port=$DB_PORT --bind-address=127.0.0.1 \
        --log-error="$LOGS/mariadbd.log" --innodb-buffer-pool-size=64M --innodb-log-file-size=16M
fi
wait_for mariadbd mariadb-admin --no-defaults --socket="$DB_SOCKET" -u root ping
mariadb --no-defaults --socket="$DB_SOCKET" -u root <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL

# --- slurm configuration -----------------------------------------------------------
HOST=$(hostname -s)
NODE=$(slurmd -C | head -1)   # NodeName=… CPUs=… Boards=… SocketsPerBoard=… CoresPerSocket=… ThreadsPerCore=… RealMemory=…
[[ $NODE == NodeName=* ]] || die "slurmd -C did not describe this node: $NODE"
mkdir -p "$STATE/ctld" "$STATE/d" /var/log/slurm
chown slurm:slurm "$STATE/ctld" "$LOGS"
chmod 0775 "$LOGS"

cat >"$CONF.new" <<EOF
$MARKER
# A single-node test cluster on loopback; see the script for details.
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/ctld/slurmctld.pidfile
SlurmdPidFile=$STATE/slurmd.pidfile
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStorageEnforce=associations,limits
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
JobCompType=jobcomp/none
MinJobAge=300
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
$NODE NodeAddr=127.0.0.1 Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$HOST MaxTime=INFINITE State=UP
EOF
mv "$CONF.new" "$CONF"
cat >/etc/slurm/gres.conf <<EOF
$MARKER
# One GPU-less gpu GRES (File=/dev/null stands in for /dev/nvidia0): slurmctld
# schedules --gpus=1 requests; there is no GPU behind it.
NodeName=$HOST Name=gpu File=/dev/null
EOF
cat >/etc/slurm/slurmdbd.conf <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=slurm
PidFile=$STATE/ctld/slurmdbd.pidfile
LogFile=$LOGS/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
chown slurm:slurm /etc/slurm/slurmdbd.conf && chmod 0600 /etc/slurm/slurmdbd.conf

# --- slurmdbd, accounts, slurmctld, slurmd -------------------------------------------
if ! alive slurmdbd; then
    launch slurmdbd root /usr/sbin/slurmdbd -D
fi
wait_for slurmdbd sacctmgr -n list cluster

sacctmgr -i -Q add cluster "$CLUSTER" >/dev/null 2>&1 || true
sacctmgr -n list cluster format=cluster | grep -qw "$CLUSTER" || die "could not register cluster $CLUSTER with slurmdbd"
sacctmgr -i -Q add account "$ACCOUNT" Cluster="$CLUSTER" Description="trustcal tests" Organization=trustcal >/dev/null 2>&1 || true
for user in root ${SUDO_USER:-}; do
    sacctmgr -i -Q add user "$user" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" Cluster="$CLUSTER" >/dev/null 2>&1 || true
done

if ! alive slurmctld; then
    launch slurmctld root /usr/sbin/slurmctld -D
fi
wait_for slurmctld scontrol ping
if ! alive slurmd; then
    launch slurmd root /usr/sbin/slurmd -D
fi

# --- wait for the idle node ------------------------------------------------------------
t0=$SECONDS
until state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | sort -u | head -1) && [[ $state == idle || $state == mixed || $state == allocated ]]; do
    if [[ $state == *drain* || $state == down* ]]; then
        scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true
    fi
    ((SECONDS - t0 < TIMEOUT)) || { sinfo -R >&2 || true; die "node $HOST is '$state', not idle, after ${TIMEOUT}s (logs: $LOGS)"; }
    sleep 0.5
done
say "SLURM is up: node $HOST $state; partitions cpu (default), gpu; account $ACCOUNT (logs: $LOGS)"
sinfo >&2
echo "export TRUSTCAL_SLURM=1"
