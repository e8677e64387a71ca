#!/usr/bin/env python3
"""The Cluster API `Cluster` object that magnum-cluster-api 0.38.2 ("mcapi") builds for given
Magnum rows, rendered by mcapi's OWN code (its Python package and its compiled Rust module)
with its OpenStack look-ups going to REAL services: the Python side of the differential test
(docs/mcapi-differential.md). Run it with the venv of `scripts/mcapi.sh install`, or as
`scripts/mcapi.sh render ROWS_JSON`.

    python mcapi_render.py ROWS_JSON      prints {"cluster": ..., "server_groups": {...}}
    python mcapi_render.py --self-check   imports everything, loads the compiled module,
                                          prints the ClusterClass name

ROWS_JSON:
    {"keystone_url": "http://127.0.0.1:PORT/v3", "user": "demo", "password": "demo-secret",
     "project": "demo",                       (optional: "user_domain", "project_domain",
                                               both default "Default")
     "cluster":    {Magnum `cluster` row: uuid, name, stack_id (required: it is the CAPI
                    Cluster's name), labels, master_flavor_id, flavor_id, keypair,
                    master_lb_enabled, fixed_network, fixed_subnet, docker_volume_size,
                    project_id, user_id, ...},
     "template":   {Magnum `cluster_template` row: network_driver, cluster_distro,
                    external_network_id, dns_nameserver, http_proxy, https_proxy, no_proxy,
                    labels, image_id, ...},
     "nodegroups": [{Magnum `nodegroup` row: name, role, node_count, min_node_count,
                     max_node_count, flavor_id, image_id, labels, status, is_default, ...}],
     "conf":       {"cinder": {"default_boot_volume_size": 0, ...}, ...}   magnum.conf
                   options ([group] -> {option: value}), optional
     "existing_openstack_cluster": {...}   optional, see "Kubernetes" below
     "clouds_yaml": "..."                  optional: the `<stack_id>-cloud-config` Secret's
                                           clouds.yaml; with it the output also has
                                           "cloud_provider", the data (stringData) of mcapi's
                                           `<stack_id>-cloud-provider` Secret
                                           (CloudProviderClusterResourcesSecret.get_object(),
                                           its rendered charts empty: helm is a shim)
     "validate": true                      optional (default true): run mcapi's
                                           validate_cluster() first, as its create does}
Unknown row keys are an error (they are Magnum DB columns or nothing).

Output (stdout, JSON): {"cluster": resources.Cluster(...).get_resource(), i.e. get_object()
completed with apiVersion, kind, metadata.name and metadata.namespace exactly as mcapi's
create POSTs it, "server_groups": {name: id}} where the names are the Nova server groups mcapi
uses for this cluster, `<stack_id>` and `<stack_id>-<nodegroup>` per non-master nodegroup
(also one in DELETE_*, which gets no MachineDeployment), as listed in Nova after the render.
On an error: exit 1, {"error": {"type", "module", "message"}, "server_groups": {...}} on
stdout ("server_groups": those of the names above that exist by then, for the clean-up; a
name with several groups maps to a list; absent when the error came before the look-ups could
start) and the traceback on stderr. Errors are e.g. UnsupportedCNI or ClusterMasterCountEven
from validate_cluster, or Magnum's ImageNotFound / FlavorNotFound / ExternalNetworkNotFound
from the look-ups.
Nodegroup rows need `status` (mcapi reads ng.status.startswith("DELETE")).

What is real:
  * mcapi's code: magnum_cluster_api.resources.Cluster.get_resource() (get_object(),
    mutate_machine_deployment() per worker nodegroup, utils.*, integrations.cinder), its
    ClusterServerGroups.apply() and utils.validate_cluster() as its create_cluster runs them,
    and its compiled module's Driver.resolve_immutable_fields(). Nothing of it is patched.
  * Magnum 23: the rows go through Magnum's own DB API into a throwaway in-memory SQLite
    database (schema from magnum.db.sqlalchemy.models), and the Cluster/NodeGroup/
    ClusterTemplate objects are loaded with magnum.objects as the conductor loads them (so
    cluster.nodegroups, default_ng_master, master_count, the lazy cluster_template and the
    field types are Magnum's).
  * OpenStack: a Keystone token for the user (POST /v3/auth/tokens, password, project
    scope); the request context is built as Magnum's API ContextHook builds it from
    keystonemiddleware's headers (auth_token, auth_token_info = the token body, auth_url,
    user/project ids and names, roles), with is_admin=False. mcapi's
    clients.get_openstack_api(context) (Magnum's OpenStackClients, openstacksdk) then finds
    Nova, Glance, Neutron and Cinder in that token's catalog (interface public, the
    [<service>_client] defaults) and calls them as that user: flavors, the image
    (find_image + os_distro), networks/subnets by name, Cinder's default volume type
    (GET /types/default), server groups (list, and create when missing: mcapi really
    creates `<stack_id>` and `<stack_id>-<ng>` in the user's project; the caller deletes them).

What is stubbed, and why:
  * Kubernetes. mcapi's compiled Driver("magnum-system") needs a kube client
    (kube-rs Client::try_default(), i.e. KUBECONFIG), and get_object() calls
    Driver.resolve_immutable_fields(), which LISTs OpenStackClusters labelled
    cluster.x-k8s.io/cluster-name=<stack_id> in magnum-system to keep fields that CAPO's
    webhook makes immutable. Instead of stubbing that Rust call, this script serves a tiny
    Kubernetes API on 127.0.0.1 (a free port) and writes a KUBECONFIG for it: that LIST
    answers an empty OpenStackClusterList (a new cluster, as at create time), or a list with
    the rows' "existing_openstack_cluster" object; so the Rust code itself applies its label
    fallbacks (octavia_provider, api_server_lb_flavor, api_server_lb_availability_zone).
    With "clouds_yaml", it also answers the GET of the Secret `<stack_id>-cloud-config`
    (what CloudProviderClusterResourcesSecret reads the credential from).
    Any other Kubernetes request gets 404 and is reported on stderr (none is made by
    get_object()). No kube-apiserver, ClusterClass, Secrets or Lease are involved.
  * Nothing of OpenStack is stubbed. mcapi's process-wide server-group cache (diskcache in a
    temporary directory) is used as is and removed at exit.
"""
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
import urllib.parse
import warnings

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True

import mcapi_common  # noqa: E402  (next to this script)

NAMESPACE = mcapi_common.NAMESPACE
OSC_LIST_PATH = (
    "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/%s/openstackclusters" % NAMESPACE
)


def log(msg):
    print("mcapi_render: %s" % msg, file=sys.stderr, flush=True)


# --- Kubernetes stub (only for resolve_immutable_fields) -----------------------------------
class KubeStub:
    def __init__(self, existing_osc):
        self.existing = existing_osc
        self.secrets = {}  # name -> data (base64 values), answered by GET
        self.requests = []
        self.unexpected = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                stub.requests.append("GET " + self.path)
                if url.path == OSC_LIST_PATH:
                    selector = query.get("labelSelector", [""])[0]
                    items = []
                    if stub.existing is not None:
                        want = dict(s.split("=", 1) for s in selector.split(",") if "=" in s)
                        labels = stub.existing.get("metadata", {}).get("labels", {})
                        if all(labels.get(k) == v for k, v in want.items()):
                            items = [stub.existing]
                    return self._send(200, {
                        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                        "kind": "OpenStackClusterList",
                        "metadata": {"resourceVersion": "1"},
                        "items": items,
                    })
                prefix = "/api/v1/namespaces/%s/secrets/" % NAMESPACE
                if url.path.startswith(prefix) and url.path[len(prefix):] in stub.secrets:
                    name = url.path[len(prefix):]
                    return self._send(200, {
                        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                        "metadata": {"name": name, "namespace": NAMESPACE},
                        "data": stub.secrets[name],
                    })
                self._unexpected()

            def _unexpected(self):
                stub.unexpected.append("%s %s" % (self.command, self.path))
                self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                 "reason": "NotFound", "code": 404,
                                 "message": "not served by mcapi_render.py's stub"})

            do_POST = do_PUT = do_PATCH = do_DELETE = _unexpected

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def kubeconfig(self, path):
        url = "http://127.0.0.1:%d" % self.server.server_address[1]
        with open(path, "w") as f:
            json.dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "stub",
                "clusters": [{"name": "stub", "cluster": {"server": url}}],
                "users": [{"name": "stub", "user": {"token": "stub"}}],
                "contexts": [{"name": "stub", "context": {
                    "cluster": "stub", "user": "stub", "namespace": NAMESPACE}}],
            }, f)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --- Magnum: configuration, rows -> in-memory DB -> objects --------------------------------
def configure(rows):
    conf = mcapi_common.configure(rows, "sqlite://")
    # mcapi's is_service_enabled (cinder, manila) reads the catalog as Magnum's service user.
    mcapi_common.service_credentials(conf, rows)


def load_objects(rows, admin_ctx):
    from magnum import objects
    from magnum.db import api as dbapi
    from magnum.db.sqlalchemy import models
    from oslo_db.sqlalchemy import enginefacade

    models.Base.metadata.create_all(enginefacade.writer.get_engine())
    db = dbapi.get_instance()

    def check(kind, row, model):
        unknown = sorted(set(row) - set(model.__table__.columns.keys()))
        if unknown:
            raise ValueError("%s: not Magnum %s columns: %s"
                             % (kind, model.__tablename__, ", ".join(unknown)))
        return dict(row)

    cl_row = check("cluster", rows["cluster"], models.Cluster)
    if not cl_row.get("stack_id"):
        raise ValueError("cluster.stack_id is required (mcapi's CAPI Cluster name)")
    tm_row = check("template", rows["template"], models.ClusterTemplate)
    tm_row.setdefault("uuid", cl_row.get("cluster_template_id")
                      or "00000000-0000-4000-8000-000000000001")
    tm_row.setdefault("name", "template")
    tm_row.setdefault("project_id", cl_row.get("project_id"))
    tm_row.setdefault("coe", "kubernetes")
    cl_row["cluster_template_id"] = tm_row["uuid"]
    cl_row.setdefault("uuid", "00000000-0000-4000-8000-000000000002")
    db.create_cluster_template(tm_row)
    db.create_cluster(cl_row)
    for ng in rows["nodegroups"]:
        ng = check("nodegroup", ng, models.NodeGroup)
        ng.setdefault("cluster_id", cl_row["uuid"])
        ng.setdefault("project_id", cl_row.get("project_id"))
        ng.setdefault("stack_id", cl_row["stack_id"])
        db.create_nodegroup(ng)
    return objects.Cluster.get_by_uuid(admin_ctx, cl_row["uuid"])


user_context = mcapi_common.user_context
imports = mcapi_common.imports
server_groups_in_nova = mcapi_common.server_groups_in_nova
remove_server_group_cache = mcapi_common.remove_server_group_cache


# What the error output can still report: the server groups mcapi may have made already.
PARTIAL = {}


def render(rows):
    configure(rows)
    rs = imports()
    from magnum.common import context as mcontext

    from magnum_cluster_api import clients, resources, utils

    stub = KubeStub(rows.get("existing_openstack_cluster"))
    tmp = tempfile.mkdtemp(prefix="mcapi-render-")
    try:
        os.environ["KUBECONFIG"] = os.path.join(tmp, "kubeconfig")
        stub.kubeconfig(os.environ["KUBECONFIG"])
        ctx = user_context(rows)
        cluster = load_objects(rows, mcontext.make_admin_context(all_tenants=True))
        # The names ClusterServerGroups.apply() ensures: every non-master nodegroup, also
        # one in DELETE_* (which gets no MachineDeployment).
        PARTIAL.update(ctx=ctx, names=[cluster.stack_id] + [
            "%s-%s" % (cluster.stack_id, ng.name) for ng in cluster.nodegroups
            if ng.role != "master"])
        # The steps of mcapi's BaseDriver.create_cluster() that decide the Cluster object
        # (driver.py: validate_cluster; _create_cluster -> apply_cluster_from_magnum_cluster
        # -> ClusterServerGroups.apply(); resources.Cluster(...).apply() -> get_resource()).
        if rows.get("validate", True):
            utils.validate_cluster(ctx, cluster)
        resources.ClusterServerGroups(ctx, cluster).apply()
        resource = resources.Cluster(
            ctx, rs.KubeClient(), clients.get_pykube_api(), cluster,
            rust_driver=rs.Driver(NAMESPACE), namespace=NAMESPACE,
        ).get_resource()
        cloud_provider = None
        if rows.get("clouds_yaml"):
            import base64

            stub.secrets["%s-cloud-config" % cluster.stack_id] = {
                "clouds.yaml": base64.b64encode(rows["clouds_yaml"].encode()).decode(),
            }
            # Its chart renderings (helm template) come out empty from the shim: those
            # keys are Cluster API's Helm add-on provider's part in magnum-rs.
            helm = mcapi_common.Helm()
            try:
                cloud_provider = resources.CloudProviderClusterResourcesSecret(
                    ctx, rs.KubeClient(), clients.get_pykube_api(), cluster,
                    namespace=NAMESPACE,
                ).get_object()["stringData"]
            finally:
                helm.close()
        server_groups = server_groups_in_nova(ctx, PARTIAL["names"], strict=True)
        log("kubernetes stub answered: %s" % (stub.requests or "nothing"))
        if stub.unexpected:
            log("WARNING: unexpected Kubernetes requests (answered 404): %s" % stub.unexpected)
        out = {"cluster": resource, "server_groups": server_groups}
        if cloud_provider is not None:
            out["cloud_provider"] = cloud_provider
        return out
    finally:
        stub.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--self-check":
        import magnum.conf  # noqa: F401
        from keystonemiddleware import auth_token  # noqa: F401

        rs = imports()
        remove_server_group_cache()
        print("mcapi_render: ok, compiled module %s, ClusterClass %s"
              % (rs.__file__, rs.CLUSTER_CLASS_NAME))
        return
    with open(sys.argv[1]) as f:
        rows = json.load(f)
    try:
        out = render(rows)
    except Exception as e:
        traceback.print_exc()
        out = {"error": {"type": type(e).__name__, "module": type(e).__module__,
                         "message": str(e)}}
        if PARTIAL:
            try:
                out["server_groups"] = server_groups_in_nova(
                    PARTIAL["ctx"], PARTIAL["names"], strict=False)
            except Exception as e2:
                log("listing the server groups after the error failed too: %s" % e2)
        print(json.dumps(out, indent=1, sort_keys=True))
        sys.exit(1)
    finally:
        remove_server_group_cache()
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
