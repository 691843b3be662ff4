"""The demo's flow: bring everything up, run every example, show what a user would see.

``wlmvk dev up`` (``scripts/demo``) starts, on one machine: a real Slurm
(dev/scripts/slurm-local), two red-box daemons as the non-root job owner (two
"clusters" over the one Slurm, with different configs), the in-memory API
server, one kubelet per red-box and the operator; applies manifests/ with the
real kubectl; then applies each example and prints ``kubectl get``/``logs``
output as it goes. Without ``--keep`` everything is stopped at the end (or on
Ctrl-C); with it, the system stays up and ``scripts/demo down`` stops it.

``--kube real`` runs the same on a real control plane of its own
(dev/scripts/kube-local, under the state directory, apiserver on ``--port``): the
host node ``minikube`` is a ``wlmvk dev node`` labelled as the agent host whose
``--image`` runs this checkout's ``wlmvk`` for the manifests' image, so the
real DaemonSet controller's configurator pod runs the first cluster's kubelet
and the Deployment's pods run the operator, each with its ServiceAccount; the
second cluster's kubelet runs beside them with a token of the same account.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from wlmvk.core import names
from wlmvk_dev import localslurm
from wlmvk_dev.demo import examples, runas, tenancy, tenantusers
from wlmvk_dev.demo.clusters import CLUSTERS, IMAGE, JOB_UID, RED_BOX_LABEL, ROOT
from wlmvk_dev.demo.options import parse
from wlmvk_dev.demo.processes import Processes
from wlmvk_dev.demo.progress import Progress, StepFailed


class Demo:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.state = Path(args.state_dir)
        self.procs = Processes(self.state)
        self.progress = Progress()
        self.kubeconfig = self.state / "kubeconfig"
        self.bin = Path(sys.executable).parent
        self.home = self.state / "home"
        self.real = args.kube == "real"
        # The real control plane's own state, ports and the kubectl built with it.
        # Its other ports follow the apiserver's, so two demos (or a demo beside the tests'
        # control plane) never share an etcd.
        self.kube_env = {
            "WLMVK_KUBE_BASE": str(self.state / "kube"),
            "WLMVK_KUBE_PORT": str(args.port),
            "WLMVK_KUBE_ETCD_PORT": str(args.port + 1),  # and the next one for its peers
            "WLMVK_KUBE_CM_PORT": str(args.port + 3),
            "WLMVK_KUBE_SCHED_PORT": str(args.port + 4),
        }
        self.kubectl_bin = "kubectl"
        self.tenants: tenancy.TenantsDemo | None = None

    # --- helpers -------------------------------------------------------------------------------

    def wlmvk(self) -> str:
        return str(self.bin / "wlmvk")

    def wlmvk_for(self, user: str) -> str:
        """A ``wlmvk`` that ``user`` can run (``runas.py``)."""
        return runas.wlmvk_for(user, self.wlmvk(), self.state)

    def kubectl(self, *args: str, show: bool = False, check: bool = True) -> str:
        self.home.mkdir(parents=True, exist_ok=True)
        argv = [self.kubectl_bin, *args]
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.home)}
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)
        out = proc.stdout + proc.stderr
        if show:
            self.progress.command(argv, out)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {out.strip()}")
        return out

    def wait(self, what: str, probe: object, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if probe():  # type: ignore[operator]
                    return
            except (OSError, RuntimeError, subprocess.SubprocessError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{what} not ready after {timeout:.0f} s")

    # --- steps ---------------------------------------------------------------------------------

    def slurm(self) -> None:
        # Its own Slurm, never the site's: every process started from here on
        # (red-box, its sbatch, the jobs) finds it through SLURM_CONF.
        if self.args.tenants:
            tenancy.use_own_slurm(self.state)
        localslurm.use()
        title = "Slurm is up (dev/scripts/slurm-local" + (
            ", its own, enforcing)" if self.args.tenants else ")"
        )
        with self.progress.step(title, log=str(localslurm.base() / "log")):
            subprocess.run([str(localslurm.SCRIPT), "up"], check=True, capture_output=True)
            subprocess.run(
                [str(ROOT / "dev" / "scripts" / "install-kubectl")], check=True, capture_output=True
            )

    def job_owner(self) -> str:
        with self.progress.step(f"job owner (uid {JOB_UID})"):
            return runas.ensure_job_owner()

    def red_boxes(self, user: str) -> None:
        for cluster in CLUSTERS:
            name = f"red-box-{cluster.name}"
            log = self.procs.logs / f"{name}.log"
            title = f"red-box for {cluster.name} on {cluster.socket} as {user}"
            with self.progress.step(title, log=str(log)):
                argv = ["runuser", "-u", user, "--", self.wlmvk_for(user), "red-box"]
                argv += ["--socket", str(cluster.socket)]
                argv += ["--work-dir", str(localslurm.jobs_root() / cluster.name)]
                argv += ["--state-dir", str(localslurm.jobs_root() / cluster.name / ".red-box")]
                if cluster.config:
                    conf = self.state / f"red-box-{cluster.name}.yaml"
                    conf.write_text(cluster.config)
                    conf.chmod(0o644)
                    argv += ["--config", str(conf)]
                self.procs.start(name, argv)
                self.wait(name, cluster.socket.exists, 30)
        for tenant in self.tenants.tenants if self.tenants else ():
            name = f"red-box-tenant-{tenant.user}"
            socket = tenancy.socket_of(tenant.user)
            with self.progress.step(f"red-box for tenant {tenant.name} on {socket} as {tenant.user}"):
                self.procs.start(name, tenancy.red_box_argv(tenant, self.wlmvk_for(tenant.user)))
                self.wait(name, socket.exists, 30)

    def apiserver(self) -> None:
        log = self.procs.logs / "apiserver.log"
        with self.progress.step(f"API server on 127.0.0.1:{self.args.port}", log=str(log)):
            argv = [self.wlmvk(), "dev", "apiserver", "--port", str(self.args.port)]
            argv += ["--kubeconfig", str(self.kubeconfig), "--host-node", CLUSTERS[0].name]
            argv += ["--host-node-label", "node-role.kubernetes.io/control-plane="]
            self.procs.start("apiserver", argv)
            ready = lambda: "Ready" in self.kubectl("get", "nodes", check=False)  # noqa: E731
            self.wait("API server", ready, 30)
            if self.tenants:  # before the kubelets, which then watch SlurmTenants from their start
                self.kubectl("apply", "-f", str(ROOT / "manifests" / "crds" / "slurmtenants.yaml"))

    def kube_local(self, *args: str) -> str:
        """``dev/scripts/kube-local ARGS`` for the demo's own control plane; its stdout."""
        with (self.procs.logs / "kube-local.log").open("a") as log:
            done = subprocess.run(
                [str(ROOT / "dev" / "scripts" / "kube-local"), *args],
                env={**os.environ, **self.kube_env},
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                check=False,
            )
        if done.returncode != 0:
            # Its last lines said here: a test's state directory is removed at its teardown.
            last = "".join(Path(log.name).read_text(errors="replace").splitlines(keepends=True)[-40:])
            raise RuntimeError(f"dev/scripts/kube-local {' '.join(args)} failed (log: {log.name}):\n{last}")
        return done.stdout

    def control_plane(self) -> None:
        log = self.procs.logs / "kube-local.log"
        title = f"Kubernetes control plane on 127.0.0.1:{self.args.port} (dev/scripts/kube-local)"
        with self.progress.step(title, log=str(log)):
            self.kube_local("build")  # the first build on a fresh machine takes about 10 minutes
            # The demo's own plane starts empty, like the in-memory one: no objects of a past run.
            self.kube_local("down", "--wipe")
            self.kube_local("up")
            self.kubectl_bin = str(Path(self.kube_local("bin").strip()) / "kubectl")
            admin = Path(self.kube_env["WLMVK_KUBE_BASE"]) / "admin.kubeconfig"
            shutil.copyfile(admin, self.kubeconfig)
            self.kubeconfig.chmod(0o600)

    def host_node(self, user: str) -> None:
        """The host node ``minikube``: marked control-plane and agent host; runs the manifests' pods."""
        name = CLUSTERS[0].name
        log = self.procs.logs / "node.log"
        with self.progress.step(f"host node {name} (wlmvk dev node)", log=str(log)):
            argv = [self.wlmvk(), "dev", "node", "--name", name, "--port", "0"]
            argv += ["--kubeconfig", self.kube_local("node-kubeconfig", name).strip()]
            argv += ["--labels", f"node-role.kubernetes.io/control-plane=,{RED_BOX_LABEL}=true"]
            argv += ["--image", f"{IMAGE}={self.wlmvk_for(user)}"]
            # What that program runs from stays visible under the pods' volumes (an emptyDir on /tmp).
            for path in runas.checkout_paths():
                argv += ["--image-path", path]
            self.procs.start("node", argv)
            condition = "jsonpath={.status.conditions[?(@.type=='Ready')].status}"

            def ready() -> bool:
                return "True" in self.kubectl("get", "node", name, "-o", condition, check=False)

            self.wait("host node", ready, 60)

    def account_kubeconfig(self, account: str) -> Path:
        """A kubeconfig holding a TokenRequest token of ServiceAccount ``wlmvk/<account>``."""
        token = self.kubectl("create", "token", account, "-n", "wlmvk", "--duration=24h").strip()
        view = json.loads(self.kubectl("config", "view", "--raw", "--minify", "-o", "json"))
        cluster = view["clusters"][0]["cluster"]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "demo", "cluster": cluster}],
            "users": [{"name": account, "user": {"token": token}}],
            "contexts": [{"name": account, "context": {"cluster": "demo", "user": account}}],
            "current-context": account,
        }
        path = self.state / f"{account}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def in_cluster(self) -> None:
        """On the real plane: the configurator's kubelet and the operator run as the manifests' pods."""
        with self.progress.step("configurator DaemonSet and operator Deployment running"):

            def running(app: str, count: int) -> bool:
                out = self.kubectl(
                    "get",
                    "pods",
                    "-n",
                    "wlmvk",
                    "-l",
                    f"app.kubernetes.io/name={app}",
                    "-o",
                    "jsonpath={.items[*].status.phase}",
                    check=False,
                )
                return out.split().count("Running") >= count

            # Running is not enough: the configurator's kubelet has registered the first
            # cluster's partitions as nodes only once it reached red-box and the API server.
            prefix = f"slurm-{CLUSTERS[0].name}-"
            try:
                self.wait("configurator pod", lambda: running("wlmvk-configurator", 1), 120)
                self.wait("operator pods", lambda: running("wlmvk-operator", 2), 120)
                self.wait("configurator's nodes", lambda: prefix in self.kubectl("get", "nodes"), 120)
            except RuntimeError:
                self.show_in_cluster_logs()
                raise
            self.kubectl("get", "pods", "-n", "wlmvk", "-o", "wide", show=True)

    def show_in_cluster_logs(self) -> None:
        """What the manifests' pods printed, as a user would look (``kubectl logs``), to say why."""
        self.kubectl("get", "pods", "-n", "wlmvk", "-o", "wide", show=True, check=False)
        names = self.kubectl("get", "pods", "-n", "wlmvk", "-o", "name", check=False).split()
        for pod in names:
            if pod.startswith("pod/"):
                self.kubectl("logs", "-n", "wlmvk", pod, "--tail=40", show=True, check=False)

    def kubelets(self) -> None:
        # On the real plane the first cluster's kubelet is the configurator DaemonSet's pod.
        for cluster in CLUSTERS[1:] if self.real else CLUSTERS:
            name = f"kubelet-{cluster.name}"
            log = self.procs.logs / f"{name}.log"
            with self.progress.step(f"kubelet for {cluster.name}", log=str(log)):
                kubeconfig = self.account_kubeconfig("wlmvk-kubelet") if self.real else self.kubeconfig
                argv = [self.wlmvk(), "kubelet", "--red-box-socket", str(cluster.socket)]
                argv += ["--kubeconfig", str(kubeconfig), "--cluster-name", cluster.name]
                argv += ["--agent-host", CLUSTERS[0].name, "--port", str(cluster.kubelet_port)]
                argv += ["--metrics-port", str(cluster.metrics_port)]
                # The API server's log proxy presents its kubelet client certificate (wlmvk dev apiserver
                # writes it next to the kubeconfig), as kube-apiserver's --kubelet-client-certificate.
                # On the real plane kube-local's CA signed kube-apiserver's --kubelet-client-certificate.
                pki = Path(self.kube_env["WLMVK_KUBE_BASE"]) / "pki"
                client_ca = pki / "ca.crt" if self.real else self.kubeconfig.parent / "kubelet-client-ca.crt"
                argv += ["--client-ca", str(client_ca)]
                if self.tenants and cluster == tenancy.CLUSTER:
                    argv += [f"--red-box={t.user}={tenancy.socket_of(t.user)}" for t in self.tenants.tenants]
                self.procs.start(name, argv)
                prefix = f"slurm-{cluster.name}-"
                self.wait(name, lambda p=prefix: p in self.kubectl("get", "nodes", check=False), 60)

    def manifests(self) -> None:
        with self.progress.step("kubectl apply -k manifests/"):
            self.kubectl("apply", "-k", str(ROOT / "manifests"), show=True)

    def operator(self, user: str) -> None:
        log = self.procs.logs / "operator.log"
        with self.progress.step("operator", log=str(log)):
            argv = [self.wlmvk(), "operator", "--kubeconfig", str(self.kubeconfig)]
            # Staging pods run as the job owner on the agent host (the host kubelet stand-in).
            argv += ["--stage-command", self.wlmvk_for(user)]
            argv += ["--run-as-user", str(JOB_UID), "--run-as-group", str(JOB_UID)]
            self.procs.start("operator", argv)
            self.wait("operator", lambda: self.procs.alive("operator"), 5)

    def show_cluster(self) -> None:
        self.kubectl("get", "nodes", show=True)

    def examples(self) -> list[str]:
        """Apply each example, wait for its end, show what a user would look at; return failures."""
        failures = []
        for path in sorted(Path(self.args.examples).glob("*.yaml")):
            doc = path.read_text()
            expect = "Failed" if "wlmvk-demo-expect: Failed" in doc else "Succeeded"
            found = examples.metadata_name(doc)
            if found is None:
                continue
            kind, name = found
            with self.progress.step(f"example {path.name}"):
                examples.prepare_inputs(doc)
                self.kubectl("apply", "-f", str(path), show=True)
                status = self._wait_status(name, self.args.timeout)
                self.kubectl("get", "slurmjob", show=True, check=False)
                self.kubectl("get", "pod", show=True, check=False)
                pod = f"{name}-job" if kind == "SlurmJob" else f"{name}-wlm-job"
                self.kubectl("logs", pod, show=True, check=False)
                examples.show_results(self.progress, doc)
                if status != expect:
                    failures.append(f"{path.name}: ended {status!r}, expected {expect!r}")
        return failures

    def multi_cluster(self) -> list[str]:
        """One SlurmJob per cluster: the same script, sent to each cluster's cpu partition."""
        failures = []
        for cluster in CLUSTERS:
            name = f"hello-{cluster.name}"
            node = names.node_name(cluster.name, "cpu")
            with self.progress.step(f"multi-cluster: {name} on {node}"):
                manifest = examples.HELLO.format(name=name, node=node)
                path = self.state / f"{name}.yaml"
                path.write_text(manifest)
                self.kubectl("apply", "-f", str(path), show=True)
                status = self._wait_status(name, self.args.timeout)
                if status != "Succeeded":
                    failures.append(f"{name}: ended {status!r}, expected 'Succeeded'")
        self.kubectl("get", "slurmjob", "-o", "wide", show=True, check=False)
        self.kubectl("logs", "hello-second-job", show=True, check=False)
        self.kubectl("get", "node", names.node_name(CLUSTERS[1].name, "cpu"), "--show-labels", show=True)
        return failures

    def _wait_status(self, name: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        status = ""
        while time.monotonic() < deadline:
            out = self.kubectl("get", "slurmjob,wlmjob", "-o", "json", check=False)
            try:
                items = json.loads(out).get("items", [])
            except ValueError:
                items = []
            for item in items:
                if item["metadata"]["name"] == name:
                    status = item.get("status", {}).get("status", "")
            if status in {"Succeeded", "Failed", "Cancelled"}:
                return status
            time.sleep(1)
        return status or "timeout"

    def down(self) -> int:
        stopped = self.procs.stop_all()
        if tenancy.tear_down(self.state):
            stopped.append("the tenants' Slurm (dev/scripts/slurm-local down)")
        removed = tenantusers.remove(self.state)
        if removed:
            stopped.append(f"the tenant users (userdel {' '.join(removed)})")
        if (Path(self.kube_env["WLMVK_KUBE_BASE"]) / "admin.kubeconfig").exists():
            self.kube_local("down", "--wipe")
            stopped.append("the control plane (dev/scripts/kube-local down --wipe)")
        self.progress.line(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
        return 0

    def up(self) -> int:
        try:
            self.slurm()
            user = self.job_owner()
            if self.args.tenants:
                self.tenants = tenancy.TenantsDemo(
                    tenantusers.prepare(self.state, user, self.progress),
                    kubectl=self.kubectl,
                    progress=self.progress,
                    state=self.state,
                )
                self.tenants.associate(user)
            self.red_boxes(user)
            if self.real:
                self.control_plane()
                self.host_node(user)
                self.manifests()
                self.in_cluster()
                self.kubelets()
            else:
                self.apiserver()
                self.kubelets()
                self.manifests()
                self.operator(user)
            self.show_cluster()
            failures = self.examples()
            failures += self.multi_cluster()
            if self.tenants:
                try:
                    failures += self.tenants.run(self.args.timeout)
                finally:
                    self.tenants.cleanup()
        except StepFailed as exc:
            print(f"demo failed at {exc}", file=sys.stderr)
            if not self.args.keep:
                self.down()
            return 1
        except KeyboardInterrupt:
            self.down()
            return 130
        except Exception:
            # Whatever went wrong, nothing the demo started is left running behind it.
            if not self.args.keep:
                self.down()
            raise
        if failures and self.real:
            self.show_in_cluster_logs()
        for failure in failures:
            self.progress.line(f"FAILED {failure}")
        if self.args.keep:
            print("\nEverything is still running. Try:")
            print(f"  export KUBECONFIG={self.kubeconfig}")
            if self.real:
                print(f"  export PATH={Path(self.kubectl_bin).parent}:$PATH")
            print("  kubectl get nodes")
            print(f"  export SLURM_CONF={localslurm.environment()['SLURM_CONF']}  # its own Slurm: squeue")
            print("Stop it with: scripts/demo down")
        else:
            self.down()
        self.progress.line("all examples ended as expected" if not failures else f"{len(failures)} failed")
        return 1 if failures else 0


def main(argv: list[str]) -> int:
    args = parse(argv)
    demo = Demo(args)
    if args.action == "down":
        return demo.down()
    if os.geteuid() != 0:
        print("wlmvk dev up: run as root (it installs Slurm and starts daemons)", file=sys.stderr)
        return 2
    if shutil.which("kubectl") is None and not (ROOT / "dev" / "scripts" / "install-kubectl").exists():
        print("wlmvk dev up: kubectl is missing", file=sys.stderr)
        return 2
    return demo.up()
