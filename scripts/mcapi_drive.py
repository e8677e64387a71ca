#!/usr/bin/env python3
"""Let magnum-cluster-api 0.38.2 ("mcapi") create and delete a Magnum cluster with its OWN
driver, against the REAL Keystone/OpenStack services, a real management cluster (Cluster API
+ CAPO) and a real Magnum 23 database (MariaDB, Magnum's own schema): the fixtures of the
adoption tests (magnum-rs takes over clusters mcapi made). Run it with the venv of
`scripts/mcapi.sh install`, or as `scripts/mcapi.sh create|delete ROWS_JSON`.

    python mcapi_drive.py create ROWS_JSON    prints {"uuid", "stack_id", "status", ...}
    python mcapi_drive.py delete ROWS_JSON    prints {"uuid", "deleted": true, ...}

ROWS_JSON: as mcapi_render.py's (keystone_url, user, password, project, cluster, template,
nodegroups, conf), plus
    "database":   "mysql+pymysql://magnum:magnum@127.0.0.1:13306/DBNAME?charset=utf8mb4"
                  a database made by `scripts/magnum-db.sh create DBNAME`
    "kubeconfig": PATH of a kubeconfig usable from this host (capi.sh's DIR/kubeconfig),
                  with CAPI, CAPO and the namespace magnum-system
    "admin":      optional {"user", "password", "project"} (default admin / admin-secret /
                  admin): Magnum's service credentials ([keystone_auth] and
                  [keystone_authtoken]), used by the periodic status sync (admin context)
    "timeout":    optional, minutes passed to create_cluster (default 60); for delete: the
                  seconds to wait for the CAPI Cluster to go (default 600)
    "validate":   optional (default true): create runs the API's attr_validator checks
                  (flavor root disk, validate_os_resources, validate_master_count) first
    "cleanup":    optional (default true): delete ends with after_mcapi_cleanup() (below)
The "cluster" row may carry "uuid" (else uuid4, as Magnum's API), and no stack_id (mcapi
generates it). "nodegroups" is optional: only the node_count of the rows with role master /
worker is used (default 1 / 1); the conductor itself makes the two default nodegroups from
the cluster (_get_nodegroup_object), as for `openstack coe cluster create`.
For delete only keystone_url/user/password/project, database, kubeconfig and cluster.uuid
(or cluster.name) are needed.

What runs (nothing of Magnum, mcapi or OpenStack is patched or faked):
  create: ClusterTemplate and Cluster objects as Magnum's API makes them (project_id/user_id
    from the context, labels/flavors/fixed network/keypair/master_lb_enabled inherited from
    the template when unset, a uuid4), then Magnum's conductor
    `ClusterHandler.cluster_create(context, cluster, master_count, node_count, timeout)`:
    cluster row CREATE_IN_PROGRESS, default nodegroups, certificates through Magnum's cert
    manager ([certificates] cert_manager_type from the conf: magnum-db.sh writes x509keypair,
    the certificates in the x509keypair table of that database), the driver found through
    the `magnum.drivers` entry points (mcapi's k8s_cluster_api_<distro>), its
    create_cluster() (stack_id, ClusterClass + CRSs by the compiled module, Lease lock,
    application credential with the user's token, <stack>-cloud-config, the 4 CA Secrets,
    server groups, addon Secrets, the Cluster POST), then cluster.save() and the nodegroups'
    stack_id, as the conductor does.
  delete: Magnum's conductor `cluster_delete(context, uuid)` with the user's context
    (mcapi's delete_cluster: LB clean-up, CRS/Secret deletes, DELETE of the Cluster;
    status DELETE_IN_PROGRESS), then Magnum's periodic `ClusterUpdateJob(admin_ctx,
    cluster).update_status()` every 5 s, as sync_cluster_status does, until mcapi's
    update_cluster_status sees the Cluster gone (application credential, cloud-config, CA
    Secrets, server groups) and the job deletes certificates, nodegroups and the cluster row.
Deviations, all reported in the output:
  * Octavia: mcapi's delete_cluster begins with utils.delete_loadbalancers(), which builds
    the admin and user Octavia clients even when there is no load balancer, and raises
    PreDeletionFailed when the catalog has no load-balancer endpoint (the project's services
    have none; Magnum then marks the cluster DELETE_FAILED). Only in that case the rest of
    delete_cluster runs as mcapi's code has it (same lock: Rust delete_cluster, the
    Cluster's delete(), the autoscaler release delete) and the conductor's
    DELETE_IN_PROGRESS is saved ("octavia" in the output says which path ran).
  * after_mcapi_cleanup: the Secrets Kubernetes' garbage collector would delete (capi.sh
    runs no kube-controller-manager) and the floating IP CAPO leaves (output
    "after_mcapi_cleanup").
  * Magnum's periodic job deletes only ca_cert_ref and magnum_cert_ref of the cluster; the
    etcd and front-proxy CA rows stay in x509keypair (Magnum 23's behaviour, not changed).
  * The cluster template row stays (Magnum deletes it only on its own DELETE).
  * Without Octavia, clusters should use master_lb_enabled=false: with true CAPO fails at
    the load-balancer client and the OpenStackCluster never becomes ready.
helm is NOT installed: a `helm` shim on PATH (a temporary directory) answers `helm template`
with an empty manifest (so the OCCM and k8s-keystone-auth manifests inside the addon Secrets
are empty), `helm version` with a version, `helm delete|uninstall|get` with helm's "release:
not found" (no release is ever installed: cluster-autoscaler only with auto_scaling_enabled,
which the shim refuses: `helm upgrade` fails). Its calls are listed in the output ("helm").
"""
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import uuid as uuidlib
import warnings

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True

import mcapi_common  # noqa: E402  (next to this script)

def log(msg):
    print("mcapi_drive: %s" % msg, file=sys.stderr, flush=True)


def configure(rows):
    conf = mcapi_common.configure(rows, rows["database"])
    mcapi_common.service_credentials(conf, rows)
    # magnum-db.sh's magnum.conf: x509keypair certificates, no messaging.
    conf.set_default("cert_manager_type", "x509keypair", group="certificates")
    from oslo_messaging import transport as om_transport
    from oslo_messaging.notify import notifier as om_notifier
    conf.register_opts(om_transport._transport_opts)
    conf.register_opts(om_notifier._notifier_opts, group="oslo_messaging_notifications")
    conf.set_default("transport_url", "fake://")
    conf.set_default("driver", ["noop"], group="oslo_messaging_notifications")
    # rows["conf"] wins over the defaults above
    for group, opts in (rows.get("conf") or {}).items():
        for name, value in opts.items():
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    from magnum.common import rpc
    rpc.init(conf)
    return conf


Helm = mcapi_common.Helm


def kube_summary(stack_id, cluster_uuid):
    """What mcapi left in magnum-system for this cluster (pykube, the given kubeconfig)."""
    import pykube

    from magnum_cluster_api import clients

    api = clients.get_pykube_api()
    ns = mcapi_common.NAMESPACE
    out = {}
    secrets = [s.name for s in pykube.Secret.objects(api, namespace=ns)
               if s.name.startswith(stack_id + "-") or s.name == cluster_uuid]
    out["secrets"] = sorted(secrets)
    crs = pykube.object_factory(api, "addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet")
    out["clusterresourcesets"] = sorted(
        c.name for c in crs.objects(api, namespace=ns)
        if c.name in (cluster_uuid, stack_id + "-cloud-provider"))
    cl = pykube.object_factory(api, "cluster.x-k8s.io/v1beta1", "Cluster")
    out["cluster"] = [c.name for c in cl.objects(api, namespace=ns) if c.name == stack_id]
    lease = pykube.object_factory(api, "coordination.k8s.io/v1", "Lease")
    out["leases"] = [x.name for x in lease.objects(api, namespace=ns)
                     if x.name == "cluster-%s" % cluster_uuid]
    return out


def app_credentials(ctx, user_id, name):
    from magnum_cluster_api import clients

    identity = clients.get_openstack_api(ctx).keystone().client
    return [c.id for c in identity.application_credentials(user_id) if c.name == name]


def create(rows):
    from magnum import objects
    from magnum.conductor.handlers import cluster_conductor
    from magnum.objects import fields

    ctx = mcapi_common.user_context(rows)
    # --- the API's part (magnum/api/controllers/v1/cluster_template.py, cluster.py) ------
    tm = dict(rows["template"])
    tm.setdefault("uuid", str(uuidlib.uuid4()))
    tm.setdefault("name", "mcapi-adopt-template")
    tm.setdefault("coe", "kubernetes")
    tm.setdefault("server_type", "vm")
    tm["project_id"], tm["user_id"] = ctx.project_id, ctx.user_id
    template = objects.ClusterTemplate(ctx, **tm)
    template.create()

    cl = dict(rows["cluster"])
    cl.pop("stack_id", None)
    for k in ("status", "project_id", "user_id"):
        cl.pop(k, None)
    cl["cluster_template_id"] = template.uuid
    if cl.get("keypair") is None:
        cl["keypair"] = template.keypair_id
    if not cl.get("labels"):
        cl["labels"] = dict(template.labels or {})
    for attr in ("floating_ip_enabled", "master_lb_enabled"):
        if cl.get(attr) is None:
            cl[attr] = getattr(template, attr)
    for attr in ("docker_volume_size", "master_flavor_id", "flavor_id", "fixed_network",
                 "fixed_subnet"):
        if not cl.get(attr):
            cl[attr] = getattr(template, attr)
    cl["project_id"], cl["user_id"] = ctx.project_id, ctx.user_id
    cl.setdefault("name", "mcapi-adopt")
    cl["coe_version"] = None
    cl["container_version"] = None
    cl.setdefault("uuid", str(uuidlib.uuid4()))
    counts = {"master": 1, "worker": 1}
    for ng in rows.get("nodegroups") or []:
        counts[ng.get("role", "worker")] = ng["node_count"]
    # The API's checks against the real services (Nova flavors' root disk, image with
    # os_distro, flavors, keypair, external network, ...; master_count vs master_lb_enabled).
    from magnum.api import attr_validator
    from oslo_config import cfg
    from magnum.common import clients as mclients
    if rows.get("validate", True):
        cli = mclients.OpenStackClients(ctx)
        boot = (cl.get("labels") or {}).get("boot_volume_size",
                                             cfg.CONF.cinder.default_boot_volume_size)
        attr_validator.validate_flavor_root_volume_size(cli, cl["flavor_id"], boot)
        attr_validator.validate_flavor_root_volume_size(cli, cl["master_flavor_id"], boot)
        attr_validator.validate_os_resources(ctx, template.as_dict(), dict(cl))
        attr_validator.validate_master_count(
            ctx, dict(cl, master_count=counts["master"]))
    cluster = objects.Cluster(ctx, **cl)
    timeout = int(rows.get("timeout", 60))
    # --- the conductor's part --------------------------------------------------------
    t0 = time.time()
    cluster_conductor.Handler().cluster_create(ctx, cluster, counts["master"],
                                               counts["worker"], timeout)
    took = time.time() - t0
    cluster = objects.Cluster.get_by_uuid(ctx, cluster.uuid)
    assert cluster.status == fields.ClusterStatus.CREATE_IN_PROGRESS, cluster.status
    names = [cluster.stack_id] + ["%s-%s" % (cluster.stack_id, ng.name)
                                  for ng in cluster.nodegroups if ng.role != "master"]
    return {
        "uuid": cluster.uuid, "stack_id": cluster.stack_id, "status": cluster.status,
        "cluster_template_id": template.uuid, "project_id": cluster.project_id,
        "user_id": cluster.user_id,
        "nodegroups": {ng.name: {"role": ng.role, "node_count": ng.node_count,
                                 "stack_id": ng.stack_id} for ng in cluster.nodegroups},
        "ca_cert_ref": cluster.ca_cert_ref,
        "server_groups": mcapi_common.server_groups_in_nova(ctx, names, strict=True),
        "application_credentials": app_credentials(ctx, cluster.user_id, cluster.uuid),
        "kubernetes": kube_summary(cluster.stack_id, cluster.uuid),
        "cluster_create_seconds": round(took, 1),
    }


def after_mcapi_cleanup(ctx, stack_id):
    """Not mcapi's and not Magnum's: what the test environment leaves that a real one would
    not, or that CAPO leaves on any cloud.
    * Secrets `<stack>-*` in magnum-system whose every owner (KubeadmConfig,
      KubeadmControlPlane) is gone: Kubernetes' garbage collector deletes them; capi.sh runs
      no kube-controller-manager, so they would stay.
    * Neutron floating IPs described "Created by cluster-api-provider-openstack cluster
      magnum-system-<stack>": CAPO v0.14.7 leaves the API server's floating IP behind
      (docs/capo-env.md), deleted as the user.
    Returns what was deleted. rows "cleanup": false skips it."""
    import pykube

    from magnum_cluster_api import clients

    api = clients.get_pykube_api()
    ns = mcapi_common.NAMESPACE
    out = {"orphaned_secrets": [], "capo_floating_ips": []}
    for sec in list(pykube.Secret.objects(api, namespace=ns)):
        meta = sec.obj["metadata"]
        owners = meta.get("ownerReferences") or []
        if not sec.name.startswith(stack_id + "-") or not owners:
            continue
        alive = False
        for o in owners:
            kind = pykube.object_factory(api, o["apiVersion"], o["kind"])
            if kind.objects(api, namespace=ns).get_or_none(name=o["name"]) is not None:
                alive = True
        if not alive:
            sec.delete()
            out["orphaned_secrets"].append(sec.name)
    net = clients.get_openstack_api(ctx).neutron()
    desc = "Created by cluster-api-provider-openstack cluster %s-%s" % (ns, stack_id)
    for fip in list(net.ips()):  # Magnum 23's neutron() is an openstacksdk network proxy
        if fip.description == desc:
            net.delete_ip(fip.id)
            out["capo_floating_ips"].append(fip.floating_ip_address)
    return out


def delete(rows):
    from magnum import objects
    from magnum.common import context as mcontext
    from magnum.conductor.handlers import cluster_conductor
    from magnum.common import exception
    from magnum.service import periodic
    from oslo_service import loopingcall

    ctx = mcapi_common.user_context(rows)
    admin = mcontext.make_admin_context(all_tenants=True)
    ident = rows["cluster"].get("uuid") or rows["cluster"]["name"]
    cluster = (objects.Cluster.get_by_uuid(ctx, ident) if "uuid" in rows["cluster"]
               else objects.Cluster.get_by_name(ctx, ident))
    uuid, stack_id, user_id = cluster.uuid, cluster.stack_id, cluster.user_id
    names = [stack_id] + ["%s-%s" % (stack_id, ng.name)
                          for ng in cluster.nodegroups if ng.role != "master"]
    t0 = time.time()
    # The API: policy, then cluster_delete_async -> the conductor.
    octavia = "used"
    try:
        cluster_conductor.Handler().cluster_delete(ctx, uuid)
    except exception.PreDeletionFailed as e:
        # mcapi's delete_cluster starts with utils.delete_loadbalancers(), which needs
        # Octavia (the admin and user octavia clients) even when the cluster has no load
        # balancer; without a load-balancer endpoint in the catalog it raises and Magnum
        # marks the cluster DELETE_FAILED. Only then: the rest of mcapi's delete_cluster
        # (driver.py, same order, same lock), and the conductor's DELETE_IN_PROGRESS.
        if "load-balancer service not found" not in str(e):
            raise
        octavia = "absent: %s; the rest of delete_cluster run without it" % e
        log(octavia)
        from magnum.drivers.common import driver as mdriver
        from magnum.objects import fields
        from magnum_cluster_api import resources, sync
        cluster = objects.Cluster.get_by_uuid(ctx, uuid)
        d = mdriver.Driver.get_driver_for_cluster(ctx, cluster)
        with sync.ClusterLock(cluster.uuid):
            d.rust_driver.delete_cluster(cluster)
            resources.Cluster(ctx, d.kube_client, d.k8s_api, cluster,
                              rust_driver=d.rust_driver).delete()
            resources.ClusterAutoscalerHelmRelease(d.k8s_api, cluster).delete()
        cluster.status = fields.ClusterStatus.DELETE_IN_PROGRESS
        cluster.status_reason = None
        cluster.save()
    t_delete = time.time() - t0
    wait = float(rows.get("timeout", 600))
    syncs = 0
    statuses = []
    last_reason = None
    while True:
        try:
            c = objects.Cluster.get_by_uuid(admin, uuid)
        except exception.ClusterNotFound:
            break
        if time.time() - t0 > wait:
            raise RuntimeError("cluster %s still %s after %ds (reason %r)"
                               % (uuid, c.status, wait, c.status_reason))
        statuses.append(c.status)
        try:
            # The periodic sync_cluster_status (admin context, set as the thread's ctx).
            mcontext.set_ctx(admin)
            periodic.ClusterUpdateJob(admin, c).update_status()
        except loopingcall.LoopingCallDone:
            pass
        finally:
            mcontext.set_ctx(None)
        syncs += 1
        last_reason = c.status_reason
        try:
            objects.Cluster.get_by_uuid(admin, uuid)
        except exception.ClusterNotFound:
            break
        time.sleep(5)
    took = time.time() - t0
    cleanup = after_mcapi_cleanup(ctx, stack_id) if rows.get("cleanup", True) else None
    return {
        "uuid": uuid, "stack_id": stack_id, "deleted": True, "octavia": octavia,
        "after_mcapi_cleanup": cleanup,
        "periodic_syncs": syncs, "statuses_seen": sorted(set(statuses)),
        "status_reason_last": last_reason,
        "cluster_delete_seconds": round(t_delete, 1), "total_seconds": round(took, 1),
        "left": {
            "nodegroups": len(objects.NodeGroup.list(admin, uuid)),
            "server_groups": mcapi_common.server_groups_in_nova(ctx, names, strict=False),
            "application_credentials": app_credentials(ctx, user_id, uuid),
            "kubernetes": kube_summary(stack_id, uuid),
        },
    }


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("create", "delete"):
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        rows = json.load(f)
    os.environ["KUBECONFIG"] = os.path.abspath(rows["kubeconfig"])
    helm = Helm()
    try:
        configure(rows)
        mcapi_common.imports()
        out = create(rows) if sys.argv[1] == "create" else delete(rows)
        out["helm"] = {"shim": True, "calls": helm.calls()}
    except Exception as e:
        traceback.print_exc()
        print(json.dumps({"error": {"type": type(e).__name__, "module": type(e).__module__,
                                    "message": str(e)}, "helm_calls": helm.calls()},
                         indent=1, sort_keys=True))
        sys.exit(1)
    finally:
        helm.close()
        mcapi_common.remove_server_group_cache()
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
