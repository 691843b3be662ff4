# shellcheck shell=bash
# The local Slurm's configuration, in one place: slurm.conf, gres.conf and
# slurmdbd.conf for a single-host cluster on loopback. Sourced by
# dev/scripts/slurm-local (the host's own Slurm release) and by scripts that run
# other releases in their own namespaces; nothing here starts a daemon, creates
# a directory or writes anywhere but the config directory it is given.
#
#   . dev/scripts/lib/slurm-conf.sh
#   slurm_conf_write CONF_DIR base=/var/tmp/x mode=accounting ctld_port=6917 ...
#
# Keys (key=value words; defaults in brackets):
#   base          the base directory as the daemons see it: state, spool, run,
#                 log and dev (fake GPUs) live under it                [required]
#   mode          accounting | no-accounting                             [accounting]
#   host          NodeName and SlurmctldHost                           [hostname -s]
#   cluster       ClusterName                                          [testcluster]
#   ctld_port     SlurmctldPort                                        [6917]
#   slurmd_port   SlurmdPort                                           [6918]
#   dbd_port      slurmdbd's port (DbdPort, AccountingStoragePort)    [6919]
#   db_port       MariaDB's TCP port (StoragePort)                     [3317]
#   munge_socket  munged's socket: AuthInfo=socket=... for Slurm's own
#                 messages, AccountingStoragePass for those to slurmdbd
#                 (without it they go to the default socket)           [<base>/munge/munged.socket]
#   cpus          CPUs declared for the node; more than the machine has
#                 is allowed (SlurmdParameters=config_overrides) so test
#                 jobs run side by side on a small machine             [8]
#   memory        RealMemory in MB                                     [16000]
#   slurm_user    SlurmUser                                            [slurm]
#   first_job_id  FirstJobId: boxes running side by side number their
#                 jobs apart, so a job id (and a process titled with it,
#                 "slurmstepd: [120.0]") names one Slurm's job only      [1]
#   gpus          the node's GPUs: comma-separated [type:]count, each a
#                 run of fake devices <base>/dev/gpuN (character devices
#                 that are not GPUs: slurmd wants a File= for a gpu)
#                 numbered on across the list, e.g. tesla:2,1g.10gb:4   [2]
#   enforce       AccountingStorageEnforce (accounting mode only), e.g.
#                 associations,limits,qos: a user submits only with an
#                 association sacctmgr made (docs/tenancy.md)           [none]
#   extra_partitions  N more partitions over the same node, extra1..extraN
#                 (debug's limits): many virtual nodes for one kubelet
#                 (bench/kubelet_scale.py)                              [0]
#
# slurmdbd.conf is written only in accounting mode (and removed otherwise),
# owned by slurm_user and mode 600 when run as root, as slurmdbd demands.

# The defaults, also read by scripts that need the same figures (ports to
# print, the socket to start munged on).
SLURM_CONF_DEFAULT_CTLD_PORT=6917
SLURM_CONF_DEFAULT_SLURMD_PORT=6918
SLURM_CONF_DEFAULT_DBD_PORT=6919
SLURM_CONF_DEFAULT_DB_PORT=3317
SLURM_CONF_DEFAULT_CPUS=8

# How many fake GPU devices (<base>/dev/gpuN) a gpus=... list needs.
slurm_conf_gpu_devices() {
    local item total=0
    local -a items
    IFS=, read -ra items <<< "${1:-2}"
    for item in "${items[@]}"; do total=$((total + ${item##*:})); done
    echo "$total"
}

slurm_conf_write() {
    local dir=${1:?slurm_conf_write: config directory missing}; shift
    local base='' mode=accounting host='' cluster=testcluster
    local ctld_port=$SLURM_CONF_DEFAULT_CTLD_PORT slurmd_port=$SLURM_CONF_DEFAULT_SLURMD_PORT
    local dbd_port=$SLURM_CONF_DEFAULT_DBD_PORT db_port=$SLURM_CONF_DEFAULT_DB_PORT
    local munge_socket='' cpus=$SLURM_CONF_DEFAULT_CPUS memory=16000 slurm_user=slurm first_job_id=1 gpus=2 enforce=
    local extra_partitions=0
    local kv key value
    for kv in "$@"; do
        key=${kv%%=*}; value=${kv#*=}
        [ "$key" != "$kv" ] || { echo "slurm_conf_write: expected key=value, got '$kv'" >&2; return 2; }
        case $key in
            base|mode|host|cluster|ctld_port|slurmd_port|dbd_port|db_port|munge_socket|cpus|memory|slurm_user|first_job_id|gpus|enforce|extra_partitions)
                printf -v "$key" '%s' "$value" ;;
            *) echo "slurm_conf_write: unknown key '$key'" >&2; return 2 ;;
        esac
    done
    [ -n "$base" ] || { echo "slurm_conf_write: base=... is required" >&2; return 2; }
    case $mode in accounting|no-accounting) ;; *) echo "slurm_conf_write: mode is accounting or no-accounting, not '$mode'" >&2; return 2 ;; esac
    [ -n "$host" ] || host=$(hostname -s)
    [ -n "$munge_socket" ] || munge_socket=$base/munge/munged.socket
    case $extra_partitions in ''|*[!0-9]*) echo "slurm_conf_write: extra_partitions wants a count, not '$extra_partitions'" >&2; return 2 ;; esac
    local extra_lines='' n
    for ((n = 1; n <= extra_partitions; n++)); do
        extra_lines+="PartitionName=extra$n Nodes=$host MaxTime=10:00 State=UP"$'\n'
    done

    local node_gres='' gres_lines='' item type count first=0
    local -a items
    IFS=, read -ra items <<< "$gpus"
    for item in "${items[@]}"; do
        type='' count=$item
        [ "${item#*:}" = "$item" ] || { type=${item%%:*}; count=${item##*:}; }
        case $count in ''|*[!0-9]*) echo "slurm_conf_write: gpus wants [type:]count items, not '$item'" >&2; return 2 ;; esac
        node_gres+="${node_gres:+,}gpu:${type:+$type:}$count"
        gres_lines+="NodeName=$host Name=gpu${type:+ Type=$type} File=$base/dev/gpu[$first-$((first + count - 1))]"$'\n'
        first=$((first + count))
    done

    local storage
    if [ "$mode" = accounting ]; then
        storage="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$munge_socket
AccountingStoreFlags=job_comment"
        [ -z "$enforce" ] || storage="$storage
AccountingStorageEnforce=$enforce"
    else
        storage="AccountingStorageType=accounting_storage/none"
    fi
    cat > "$dir/slurm.conf" <<CONF
# Written by wlmvk dev/scripts/lib/slurm-conf.sh: a single-host Slurm on loopback,
# with its own ports and munged socket so it runs beside a site's Slurm.
ClusterName=$cluster
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
FirstJobId=$first_job_id
SlurmUser=$slurm_user
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_socket
CredType=cred/munge
StateSaveLocation=$base/state
SlurmdSpoolDir=$base/spool
SlurmctldPidFile=$base/run/slurmctld.pid
SlurmdPidFile=$base/run/slurmd.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# The node declares more CPUs than the machine may have: slurmd reports what
# is written here instead of draining the node.
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
ReturnToService=2
MinJobAge=10
KillWait=5
InactiveLimit=0
Waittime=0
MpiDefault=none
EnforcePartLimits=ALL
MailProg=/bin/true
MaxJobCount=50000
$storage
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$memory Feature=avx2 Gres=$node_gres State=UNKNOWN
# Partitions of different limits: a short default, a general "cpu" one (the
# original README's examples target slurm-<cluster>-cpu), a long one with a
# memory cap, a GPU one, and one without a time limit but one CPU per node.
PartitionName=debug Nodes=$host Default=YES MaxTime=10:00 State=UP
PartitionName=cpu Nodes=$host MaxTime=01:00:00 State=UP
PartitionName=long Nodes=$host MaxTime=1-00:00:00 MaxMemPerNode=8000 DefMemPerNode=1000 State=UP
PartitionName=gpu Nodes=$host MaxTime=02:00:00 State=UP
PartitionName=unlimited Nodes=$host MaxTime=UNLIMITED MaxCPUsPerNode=1 State=UP
# Extra partitions (extra_partitions=N), if any:
$extra_lines
CONF
    # gpu needs character devices as File= (a count alone is dropped by slurmd).
    printf '%s' "$gres_lines" > "$dir/gres.conf"
    if [ "$mode" = accounting ]; then
        (umask 077; cat > "$dir/slurmdbd.conf" <<CONF
# Written by wlmvk dev/scripts/lib/slurm-conf.sh.
AuthType=auth/munge
AuthInfo=socket=$munge_socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=$slurm_user
LogFile=$base/log/slurmdbd.log
PidFile=$base/run/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
CONF
        )
        chmod 600 "$dir/slurmdbd.conf"
        [ "$(id -u)" != 0 ] || chown "$slurm_user:" "$dir/slurmdbd.conf"
    else
        rm -f "$dir/slurmdbd.conf"
    fi
}
