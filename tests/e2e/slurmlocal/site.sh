#!/usr/bin/env bash
# A fake site on this machine, for tests/e2e/slurmlocal: run only inside a
# private mount namespace (unshare --mount --propagation private), where tmpfs
# covers the site's Slurm and munge directories, so nothing of the real host's
# is read or written.
#
#   site.sh DIR COMMAND...
#
# DIR/site/etc-slurm and DIR/site/etc-munge hold the fake site's files: they are
# copied into /etc/slurm and /etc/munge, a "site" munged is started on the
# default socket (/run/munge), DIR/before gets a copy of both directories, then
# COMMAND runs. Afterwards DIR/after gets a second copy, DIR/site-munged says
# whether the site munged still runs and answers ("alive", else what failed),
# the site munged is stopped (by the pid it wrote, waiting until it is gone: its
# environment names the test's Slurm base, which the test then finds no process
# naming) and COMMAND's exit code is the script's.
set -euo pipefail
D=${1:?usage: site.sh DIR COMMAND...}; shift

[ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] \
    || { echo "site.sh: not in a private mount namespace; refusing to touch /etc" >&2; exit 2; }

for d in /etc/slurm /etc/munge /run/munge /var/lib/munge /var/log/munge; do
    mkdir -p "$d"
    mount -t tmpfs -o mode=0755 site "$d"
done
cp -a "$D/site/etc-slurm/." /etc/slurm/
cp -a "$D/site/etc-munge/." /etc/munge/
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
runuser -u munge -- munged
site_munged=$(cat /run/munge/munged.pid)
mkdir -p "$D/before" "$D/after"
cp -a /etc/slurm /etc/munge "$D/before/"

rc=0
"$@" || rc=$?

cp -a /etc/slurm /etc/munge "$D/after/"
if ! kill -0 "$site_munged" 2>/dev/null; then
    echo "the site munged (pid $site_munged) is gone" > "$D/site-munged"
elif ! munge -n </dev/null | unmunge >/dev/null 2>&1; then
    echo "the site munged does not answer on its socket" > "$D/site-munged"
else
    echo alive > "$D/site-munged"
fi
kill "$site_munged" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$site_munged" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$site_munged" 2>/dev/null; then kill -9 "$site_munged" 2>/dev/null || true; sleep 0.2; fi
exit "$rc"
