#!/bin/bash
# The first process of a Slurm release's box (dev/scripts/slurm-release up): PID 1
# of its own pid namespace, in the release's root filesystem (pivot_root). It starts
# munged, MariaDB and slurmdbd (with accounting), slurmctld and slurmd, writes
# $S/run/ready once the node is idle, reaps every orphan the daemons leave (they
# daemonize, so their parents exit and the kernel hands them to PID 1), and on
# SIGTERM stops the daemons in reverse order by their pid files, then exits;
# the kernel ends whatever is left in the namespace with it.
#
#   slurm-box-init S MODE HOST CLUSTER DB_PORT [GPU_DEVICES]
set -uo pipefail

S=$1 MODE=$2 HOST=$3 CLUSTER=$4 DB_PORT=$5 GPU_DEVICES=${6:-2}
export SLURM_CONF=$S/etc/slurm.conf
LOG=$S/log/init.log
exec >>"$LOG" 2>&1

say() { printf '%s init: %s\n' "$(date +%T.%N | cut -c1-12)" "$*"; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() {  # pidfile name
    local pf=$1 pid i
    alive "$pf" || return 0
    pid=$(cat "$pf")
    kill "$pid" 2>/dev/null
    for i in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { say "$2 did not stop in 30 s; killing"; kill -9 "$pid"; }
    say "stopped $2"
}

stopping=0
stop_all() {
    stopping=1
    say "SIGTERM: stopping"
    stop_pid "$S/run/slurmd.pid" slurmd
    stop_pid "$S/run/slurmctld.pid" slurmctld
    stop_pid "$S/run/slurmdbd.pid" slurmdbd
    stop_pid "$S/db/mysqld.pid" mariadbd
    stop_pid "$S/munge/munged.pid" munged
    say "stopped"
    exit 0
}
trap stop_all TERM INT

wait_for() {  # seconds what cmd...
    local secs=$1 what=$2 i; shift 2
    for i in $(seq 1 $((secs * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    say "$what not ready after $secs s"; echo "$what not ready after $secs s" > "$S/run/failed"; exit 1
}

node_idle_or_resume() {
    sinfo -h -n "$HOST" -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && return 0
    if sinfo -h -n "$HOST" -o %t 2>/dev/null | grep -qE 'drain|down|inval'; then
        scontrol update nodename="$HOST" state=resume >/dev/null 2>&1
    fi
    return 1
}

say "starting ($MODE) as pid $$"
mkdir -p "$S"/{state,spool,run,log,dev,munge}
chown slurm:slurm "$S"/state "$S"/run "$S"/log
# Fake GPUs (not GPUs: slurmd wants a File= for a gpu), as many as gres.conf names.
for ((i = 0; i < GPU_DEVICES; i++)); do
    [ -e "$S/dev/gpu$i" ] || mknod -m 666 "$S/dev/gpu$i" c 1 3
done

# munged, on the socket slurm.conf names, with the box's own key.
if [ ! -f "$S/munge/munge.key" ]; then
    dd if=/dev/urandom bs=1 count=1024 of="$S/munge/munge.key" 2>/dev/null
fi
chown -R munge:munge "$S/munge"; chmod 0755 "$S/munge"; chmod 0400 "$S/munge/munge.key"
runuser -u munge -- munged --socket="$S/munge/munged.socket" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/munged.seed" --log-file="$S/munge/munged.log"
wait_for 10 munged sh -c "munge -n -S '$S/munge/munged.socket' | unmunge -S '$S/munge/munged.socket'"

if [ "$MODE" = accounting ]; then
    if [ ! -d "$S/db/data/mysql" ]; then
        mkdir -p "$S/db/data"; chown -R mysql:mysql "$S/db"
        mariadb-install-db --user=mysql --datadir="$S/db/data" --skip-test-db >"$S/log/mariadb-install.log" 2>&1
    fi
    chown -R mysql:mysql "$S/db"
    extra=()
    # MariaDB 11.8 (sid) defaults to snapshot isolation, under which slurmdbd
    # warns it will crash on write conflicts.
    if mariadbd --verbose --help 2>/dev/null | grep -q 'innodb-snapshot-isolation'; then
        extra+=(--innodb-snapshot-isolation=OFF)
    fi
    setsid mariadbd --no-defaults --user=mysql --datadir="$S/db/data" --socket="$S/db/mysqld.sock" \
        --pid-file="$S/db/mysqld.pid" --port="$DB_PORT" --bind-address=127.0.0.1 \
        --log-error="$S/log/mariadb.log" "${extra[@]}" </dev/null >/dev/null 2>&1 &
    wait_for 60 mariadb mariadb-admin --socket="$S/db/mysqld.sock" ping
    mariadb --socket="$S/db/mysqld.sock" -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
    slurmdbd
    wait_for 60 slurmdbd sacctmgr -n show cluster
    sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
fi

slurmctld -f "$SLURM_CONF"
wait_for 60 slurmctld scontrol ping
slurmd -f "$SLURM_CONF"
wait_for 60 "node $HOST" node_idle_or_resume
echo "$MODE" > "$S/run/ready"
say "ready: $(sinfo -h -o %P | tr '\n' ' ')"

# Reap: bash collects every child, adopted orphans included, while it waits.
while [ "$stopping" = 0 ]; do
    sleep 3600 &
    wait $!
done
