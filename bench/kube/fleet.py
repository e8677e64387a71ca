"""The Kubernetes side of the status-sync bench (bench/kube/run.sh): a fleet of topology
Clusters written directly to a real kube-apiserver, shaped as Cluster API v1.13 writes them
(no controllers run: at N = 5,000 they would not fit on 2 cores), and the controllers'
part of a control-plane resize played by hand.

Every object of cluster i (name kube-iiiii, uuid seed.cluster_uuid(i)), matching the rows
bench/seed.py writes (default-master 1 node, default-worker 2, extra-ng 1):
  Cluster kube-iiiii                 topology (class, version, controlPlane 1, two workers),
                                     controlPlaneEndpoint, refs, 11 conditions
  KubeadmControlPlane kube-iiiii-cp  kubeadmConfigSpec as the class writes it, counters 1/1/1/1
  MachineDeployment per worker       selector, template, counters 2/2/2/2 and 1/1/1/1
  Machines                           1 control plane + 2 + 1 workers, phase Running,
                                     addresses, nodeRef, 6 conditions
Each object is created, then its status written through /status (merge patch), as the
controllers do. Requests are made by the admin (system:masters); magnum-rs runs as the
user magnum-rs with deploy/role.yaml's Role, so the audit log tells its requests apart.
"""
import http.client
import json
import os
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import seed  # bench/seed.py (PYTHONPATH=bench)

NS = "magnum-system"
VERSION = "v1.30.4"
CLASS = "magnum-v0.38.1"
CORE = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s" % NS
CP = "/apis/controlplane.cluster.x-k8s.io/v1beta2/namespaces/%s" % NS
WORKERS = [("default-worker", 2), ("extra-ng", 1)]
NOW = "2026-12-04T00:00:00Z"


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            env[k] = v
    return env


class Kube:
    """A small keep-alive client: one HTTPS connection per thread."""

    def __init__(self, url, token, cafile):
        host = url.split("://", 1)[1]
        self.host, self.port = host.rsplit(":", 1)
        self.token = token
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, int(self.port), context=self.ctx, timeout=60)
            self.local.conn = c
        return c

    def req(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in range(3):
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                continue
            if r.status not in ok:
                raise RuntimeError("%s %s: HTTP %d %s" % (method, path, r.status, raw[:300]))
            return json.loads(raw) if raw else None
        raise RuntimeError("unreachable")

    def merge(self, path, body):
        return self.req("PATCH", path, body, "application/merge-patch+json")


def cond(kind, status="True", reason=None, message="", generation=1):
    return {"type": kind, "status": status, "reason": reason or kind,
            "message": message, "observedGeneration": generation,
            "lastTransitionTime": NOW}


def name(i):
    return "kube-%05d" % i


def labels(i, **extra):
    out = {"cluster.x-k8s.io/cluster-name": name(i), "topology.cluster.x-k8s.io/owned": ""}
    out.update(extra)
    return out


def cluster(i):
    n = name(i)
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": n, "namespace": NS, "finalizers": ["cluster.cluster.x-k8s.io"],
                     "labels": {"cluster-uuid": seed.cluster_uuid(i),
                                "cluster.x-k8s.io/cluster-name": n,
                                "topology.cluster.x-k8s.io/owned": ""}},
        "spec": {
            "controlPlaneEndpoint": {"host": seed.addr(i, 1), "port": 6443},
            "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io",
                                "kind": "KubeadmControlPlane", "name": n + "-cp"},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                  "kind": "DevCluster", "name": n + "-infra"},
            "topology": {
                "classRef": {"name": CLASS}, "version": VERSION,
                "controlPlane": {"replicas": 1},
                "workers": {"machineDeployments": [
                    {"class": "default-worker", "name": w, "replicas": r} for w, r in WORKERS]},
            },
        },
    }


def cluster_status(generation=1):
    conds = [cond(k, generation=generation) for k in (
        "Available", "InfrastructureReady", "ControlPlaneInitialized", "ControlPlaneAvailable",
        "WorkersAvailable", "RemoteConnectionProbe", "MachinesReady", "MachinesUpToDate",
        "TopologyReconciled", "ScalingUp", "ScalingDown")]
    for c in conds:
        if c["type"] in ("ScalingUp", "ScalingDown"):
            c.update(status="False", reason="NotScaling" + c["type"][7:])
    return {"status": {
        "observedGeneration": generation, "phase": "Provisioned",
        "initialization": {"infrastructureProvisioned": True, "controlPlaneInitialized": True},
        "controlPlane": {"desiredReplicas": 1, "replicas": 1, "readyReplicas": 1,
                         "availableReplicas": 1, "upToDateReplicas": 1},
        "workers": {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 3,
                    "availableReplicas": 3, "upToDateReplicas": 3},
        "conditions": conds}}


def kcp(i):
    n = name(i)
    return {
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
        "metadata": {"name": n + "-cp", "namespace": NS, "labels": labels(i),
                     "annotations": {"cluster.x-k8s.io/cloned-from-name": CLASS + "-control-plane",
                                     "cluster.x-k8s.io/cloned-from-groupkind":
                                     "KubeadmControlPlaneTemplate.controlplane.cluster.x-k8s.io"},
                     "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                                          "name": n, "uid": "00000000-0000-4000-8000-%012d" % i}]},
        "spec": {
            "replicas": 1, "version": VERSION,
            "machineTemplate": {"spec": {"infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate",
                "name": n + "-cp-template"}}},
            "kubeadmConfigSpec": {
                "clusterConfiguration": {
                    "apiServer": {"certSANs": ["localhost", "127.0.0.1", "0.0.0.0", "host.docker.internal"],
                                  "extraArgs": [{"name": "cloud-provider", "value": "external"},
                                                {"name": "profiling", "value": "false"}]},
                    "controllerManager": {"extraArgs": [{"name": "cloud-provider", "value": "external"},
                                                        {"name": "bind-address", "value": "0.0.0.0"}]},
                    "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
                    "scheduler": {"extraArgs": [{"name": "bind-address", "value": "0.0.0.0"}]}},
                "initConfiguration": {"nodeRegistration": {
                    "criSocket": "unix:///var/run/containerd/containerd.sock",
                    "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"},
                                         {"name": "eviction-hard", "value": "nodefs.available<0%"}]}},
                "joinConfiguration": {"nodeRegistration": {
                    "criSocket": "unix:///var/run/containerd/containerd.sock",
                    "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"},
                                         {"name": "eviction-hard", "value": "nodefs.available<0%"}]}},
                "files": [{"path": "/etc/kubernetes/audit-policy.yaml", "owner": "root:root",
                           "permissions": "0600", "content": "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"}],
            },
            "rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        },
    }


def kcp_status(replicas, generation):
    conds = [cond(k, generation=generation) for k in (
        "Available", "CertificatesAvailable", "Initialized", "EtcdClusterHealthy",
        "ControlPlaneComponentsHealthy", "MachinesReady", "MachinesUpToDate")]
    conds += [cond("ScalingUp", "False", "NotScalingUp", generation=generation),
              cond("ScalingDown", "False", "NotScalingDown", generation=generation),
              cond("RollingOut", "False", "NotRollingOut", generation=generation)]
    return {"status": {
        "observedGeneration": generation, "version": VERSION, "selector":
        "cluster.x-k8s.io/cluster-name,cluster.x-k8s.io/control-plane",
        "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
        "upToDateReplicas": replicas,
        "initialization": {"controlPlaneInitialized": True},
        "conditions": conds}}


def md(i, worker, replicas):
    n = name(i)
    sel = {"cluster.x-k8s.io/cluster-name": n,
           "topology.cluster.x-k8s.io/deployment-name": worker,
           "topology.cluster.x-k8s.io/owned": ""}
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": "%s-%s" % (n, worker), "namespace": NS,
                     "labels": labels(i, **{"topology.cluster.x-k8s.io/deployment-name": worker})},
        "spec": {"clusterName": n, "replicas": replicas,
                 "selector": {"matchLabels": sel},
                 "template": {"metadata": {"labels": sel}, "spec": {
                     "clusterName": n, "version": VERSION,
                     "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                 "kind": "KubeadmConfigTemplate",
                                                 "name": "%s-%s-bootstrap" % (n, worker)}},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                           "kind": "DevMachineTemplate",
                                           "name": "%s-%s-infra" % (n, worker)}}}},
    }


def md_status(replicas, generation=1):
    conds = [cond(k, generation=generation) for k in (
        "Available", "MachinesReady", "MachinesUpToDate")]
    conds += [cond("ScalingUp", "False", "NotScalingUp", generation=generation),
              cond("ScalingDown", "False", "NotScalingDown", generation=generation),
              cond("RollingOut", "False", "NotRollingOut", generation=generation)]
    return {"status": {"observedGeneration": generation, "phase": "Running",
                       "replicas": replicas, "readyReplicas": replicas,
                       "availableReplicas": replicas, "upToDateReplicas": replicas,
                       "selector": "cluster.x-k8s.io/cluster-name=x", "conditions": conds}}


def machine(i, mname, worker=None):
    n = name(i)
    if worker is None:
        lab = labels(i, **{"cluster.x-k8s.io/control-plane": "",
                           "cluster.x-k8s.io/control-plane-name": n + "-cp"})
    else:
        lab = labels(i, **{"topology.cluster.x-k8s.io/deployment-name": worker,
                           "cluster.x-k8s.io/deployment-name": "%s-%s" % (n, worker)})
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": mname, "namespace": NS, "labels": lab,
                     "finalizers": ["machine.cluster.x-k8s.io"]},
        "spec": {"clusterName": n, "version": VERSION,
                 "providerID": "in-memory://" + mname,
                 "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                             "kind": "KubeadmConfig", "name": mname}},
                 "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                       "kind": "DevMachine", "name": mname}},
    }


def machine_status(i, host, mname):
    conds = [cond(k) for k in ("Available", "Ready", "BootstrapConfigReady",
                               "InfrastructureReady", "NodeHealthy", "UpToDate")]
    return {"status": {"phase": "Running", "observedGeneration": 1,
                       "addresses": [{"type": "InternalIP", "address": seed.addr(i, host)},
                                     {"type": "Hostname", "address": mname}],
                       "nodeRef": {"name": mname},
                       "initialization": {"bootstrapDataSecretCreated": True,
                                          "infrastructureProvisioned": True},
                       "nodeInfo": {"kubeletVersion": VERSION, "containerRuntimeVersion": "containerd://1.7.20",
                                    "kernelVersion": "6.8.0-45-generic", "osImage": "Ubuntu 22.04.5 LTS",
                                    "architecture": "amd64", "operatingSystem": "linux",
                                    "bootID": "b-" + mname, "machineID": "m-" + mname,
                                    "systemUUID": "s-" + mname, "kubeProxyVersion": VERSION},
                       "conditions": conds}}


def create_machine(kube, i, mname, host, worker=None):
    kube.req("POST", CORE + "/machines", machine(i, mname, worker))
    kube.merge(CORE + "/machines/%s/status" % mname, machine_status(i, host, mname))


def create_cluster(kube, i):
    n = name(i)
    c = kube.req("POST", CORE + "/clusters", cluster(i))
    kube.merge(CORE + "/clusters/%s/status" % n, cluster_status(c["metadata"]["generation"]))
    k = kube.req("POST", CP + "/kubeadmcontrolplanes", kcp(i))
    kube.merge(CP + "/kubeadmcontrolplanes/%s-cp/status" % n, kcp_status(1, k["metadata"]["generation"]))
    for w, r in WORKERS:
        m = kube.req("POST", CORE + "/machinedeployments", md(i, w, r))
        kube.merge(CORE + "/machinedeployments/%s-%s/status" % (n, w),
                   md_status(r, m["metadata"]["generation"]))
    create_machine(kube, i, n + "-cp-0", 1)
    host = 10
    for w, r in WORKERS:
        for k in range(r):
            create_machine(kube, i, "%s-%s-%d" % (n, w, k), host, w)
            host += 1


def create_fleet(kube, first, last, threads=12):
    """Clusters first..last (1-based, inclusive); returns (seconds, requests)."""
    t = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(create_cluster, kube, i) for i in range(first, last + 1)]:
            f.result()
    per = 2 * (2 + len(WORKERS) + 1 + sum(r for _, r in WORKERS))
    return time.monotonic() - t, per * (last - first + 1)


def scale_control_plane(kube, i, target):
    """What KCP and the topology controller do for a control-plane scale 1 -> target, in
    one go: the new Machines (Running), KCP's spec.replicas, then KCP's status with the
    counters at target. Returns the monotonic time the last write was answered: the status
    write that completes the resize."""
    n = name(i)
    for k in range(1, target):
        create_machine(kube, i, "%s-cp-%d" % (n, k), 1 + k)
    obj = kube.merge(CP + "/kubeadmcontrolplanes/%s-cp" % n, {"spec": {"replicas": target}})
    kube.merge(CP + "/kubeadmcontrolplanes/%s-cp/status" % n,
               kcp_status(target, obj["metadata"]["generation"]))
    return time.monotonic()


def apply_rbac(kube, role_yaml):
    """deploy/role.yaml's Role, bound to the user magnum-rs (kube.sh's limited token)."""
    import yaml  # PyYAML, from the openstack CLI's virtualenv

    with open(role_yaml) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    role = next(d for d in docs if d["kind"] == "Role")
    kube.req("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles" % NS, role,
             ok=(201, 409))
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "magnum-rs-user", "namespace": NS},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": role["metadata"]["name"]},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "magnum-rs"}]}
    kube.req("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" % NS,
             binding, ok=(201, 409))


def from_env(path):
    env = read_env(path)
    return Kube(env["KUBE_APISERVER_URL"], env["KUBE_TOKEN"], env["KUBE_CA_FILE"]), env


if __name__ == "__main__":
    import sys

    kube, _ = from_env(sys.argv[1])
    secs, reqs = create_fleet(kube, 1, int(sys.argv[2]))
    print(json.dumps({"seconds": round(secs, 1), "requests": reqs}))
    sys.stdout.flush()
    os._exit(0)
