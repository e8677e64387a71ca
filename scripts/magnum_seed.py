"""Seed the reference Magnum DB with fixed rows, using Magnum 23's own objects.

Run by `scripts/magnum-db.sh seed DBNAME` inside the magnum venv:
    python magnum_seed.py --config-file <magnum.conf>

It replays what the API (cluster_template post, cluster _post, nodegroup post) and
the conductor (Handler.cluster_create + conductor.utils._get_nodegroup_object,
nodegroup_create) write, then sets what a finished driver create leaves behind
(status, status_reason, stack_id, api_address, coe_version, health_status,
node_addresses).  Idempotent: the seeded templates, clusters and every nodegroup of
those clusters are deleted first and recreated (new ids/timestamps).
"""
import sys

from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from magnum.common import context as magnum_context
from magnum.common import exception
from magnum.common import service
from magnum.conductor import utils as conductor_utils
from magnum import objects
from magnum.objects import fields

PROJECT = "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa"
FOREIGN_PROJECT = "99999999999949999999999999999999"
TEMPLATE_UUID = "0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6b"
LABELS = {"kube_tag": "v1.30.4"}

TEMPLATE = dict(
    uuid=TEMPLATE_UUID, name="k8s-template", coe="kubernetes", server_type="vm",
    cluster_distro="ubuntu", image_id="ubuntu-2204-kube", flavor_id="m1.medium",
    master_flavor_id="m1.large", keypair_id="default", labels=dict(LABELS),
    project_id=PROJECT, user_id="u-demo", public=False, master_lb_enabled=True,
    # API defaults (wsattr default=...) that the template POST would store:
    registry_enabled=False, tls_disabled=False, floating_ip_enabled=True,
    hidden=False,
)

# Further templates, for lookups, visibility and delete: an unused one of the seed's
# project, a public and a public+hidden one of another project, and two of the same name.
EXTRA_TEMPLATES = [
    dict(TEMPLATE, uuid="0b3c7f2e-6a51-4d7e-9f0a-00000000000b", name="spare-template",
         labels={}, master_lb_enabled=False),
    dict(TEMPLATE, uuid="0b3c7f2e-6a51-4d7e-9f0a-00000000000c", name="public-template",
         project_id=FOREIGN_PROJECT, user_id="u-foreign", public=True,
         cluster_distro="fedora-coreos"),
    dict(TEMPLATE, uuid="0b3c7f2e-6a51-4d7e-9f0a-00000000000d", name="hidden-template",
         project_id=FOREIGN_PROJECT, user_id="u-foreign", public=True, hidden=True),
    dict(TEMPLATE, uuid="0b3c7f2e-6a51-4d7e-9f0a-00000000000e", name="twin-template"),
    dict(TEMPLATE, uuid="0b3c7f2e-6a51-4d7e-9f0a-00000000000f", name="twin-template"),
]

# name, uuid, project, user, final status, status_reason, stack_id, api_address,
# health_status, default nodegroups: (uuid, node_count, node_addresses) for
# master / worker, extra nodegroups.
CLUSTERS = [
    dict(name="k8s-cluster", uuid="a1a1a1a1-0000-4000-8000-000000000001",
         project_id=PROJECT, user_id="u-demo",
         status=fields.ClusterStatus.CREATE_COMPLETE,
         status_reason="Stack CREATE completed successfully",
         stack_id="kube-abcde", api_address="https://10.0.0.5:6443",
         health_status=fields.ClusterHealthStatus.HEALTHY,
         master=("b1b1b1b1-0000-4000-8000-000000000011", 1, ["10.0.0.10"]),
         worker=("b1b1b1b1-0000-4000-8000-000000000012", 2,
                 ["10.0.0.20", "10.0.0.21"]),
         extra=[]),
    dict(name="other-cluster", uuid="a1a1a1a1-0000-4000-8000-000000000002",
         project_id=PROJECT, user_id="u-demo",
         status=fields.ClusterStatus.CREATE_COMPLETE,
         status_reason="Stack CREATE completed successfully",
         stack_id="kube-other", api_address="https://10.0.0.6:6443",
         health_status=fields.ClusterHealthStatus.HEALTHY,
         master=("b1b1b1b1-0000-4000-8000-000000000021", 1, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000022", 1, []),
         extra=[dict(name="bounded-ng", uuid="b1b1b1b1-0000-4000-8000-000000000023",
                     role="worker", node_count=2, min_node_count=1,
                     max_node_count=5)]),
    # Another project's cluster, made from that project's public template.
    dict(name="foreign-cluster", uuid="a1a1a1a1-0000-4000-8000-000000000003",
         template="0b3c7f2e-6a51-4d7e-9f0a-00000000000c",
         project_id=FOREIGN_PROJECT, user_id="u-foreign",
         status=fields.ClusterStatus.UPDATE_FAILED, status_reason="boom",
         stack_id="kube-foreign", api_address="https://10.0.0.7:6443",
         health_status=fields.ClusterHealthStatus.UNKNOWN,
         master=("b1b1b1b1-0000-4000-8000-000000000031", 1, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000032", 1, []),
         extra=[]),
    # Still being created: no api_address yet, nodegroups CREATE_IN_PROGRESS.
    dict(name="building-cluster", uuid="a1a1a1a1-0000-4000-8000-000000000004",
         project_id=PROJECT, user_id="u-demo",
         status=fields.ClusterStatus.CREATE_IN_PROGRESS, status_reason=None,
         stack_id="kube-building", api_address=None,
         health_status=None, ng_status=fields.ClusterStatus.CREATE_IN_PROGRESS,
         master=("b1b1b1b1-0000-4000-8000-000000000041", 3, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000042", 0, []),
         extra=[]),
    # Two clusters of one name (ambiguous name lookups), one failed, one being deleted.
    dict(name="twin", uuid="a1a1a1a1-0000-4000-8000-000000000005",
         project_id=PROJECT, user_id="u-demo",
         status=fields.ClusterStatus.UPDATE_FAILED, status_reason="resize failed",
         stack_id="kube-twin1", api_address="https://10.0.0.8:6443",
         health_status=fields.ClusterHealthStatus.UNHEALTHY,
         master=("b1b1b1b1-0000-4000-8000-000000000051", 1, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000052", 3, []),
         extra=[dict(name="gpu", uuid="b1b1b1b1-0000-4000-8000-000000000053",
                     role="gpu", node_count=1, min_node_count=0,
                     max_node_count=None)]),
    dict(name="twin", uuid="a1a1a1a1-0000-4000-8000-000000000006",
         project_id=PROJECT, user_id="u-demo",
         status=fields.ClusterStatus.DELETE_IN_PROGRESS, status_reason=None,
         stack_id="kube-twin2", api_address="https://10.0.0.9:6443",
         health_status=fields.ClusterHealthStatus.HEALTHY,
         master=("b1b1b1b1-0000-4000-8000-000000000061", 1, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000062", 1, []),
         extra=[]),
]


# A federation of the seed's project: k8s-cluster hosts it and is its only member.
FEDERATION = dict(
    uuid="f1f1f1f1-0000-4000-8000-000000000001", name="k8s-federation",
    project_id=PROJECT, hostcluster_id="a1a1a1a1-0000-4000-8000-000000000001",
    member_ids=["a1a1a1a1-0000-4000-8000-000000000001"],
    status=fields.FederationStatus.CREATE_COMPLETE, status_reason=None,
    properties={"dns-zone": "example.com."},
)


def delete_existing(ctx):
    """Remove the seeded rows (the federation, nodegroups, then clusters, then template)."""
    try:
        objects.Federation.get_by_uuid(ctx, FEDERATION["uuid"]).destroy()
    except exception.FederationNotFound:
        pass
    for spec in CLUSTERS:
        try:
            cluster = objects.Cluster.get_by_uuid(ctx, spec["uuid"])
        except exception.ClusterNotFound:
            continue
        for ng in objects.NodeGroup.list(ctx, cluster.uuid):
            ng.destroy()
        cluster.destroy()
    for spec in [TEMPLATE] + EXTRA_TEMPLATES:
        try:
            objects.ClusterTemplate.get_by_uuid(ctx, spec["uuid"]).destroy()
        except exception.ClusterTemplateNotFound:
            pass


def reset_auto_increment():
    """Let ids restart after the highest remaining row (1 when the tables are empty).

    MariaDB/InnoDB clamps AUTO_INCREMENT to max(id)+1, so a re-seed of an otherwise
    empty database gets the same ids (templates 1-6, clusters 1-6, nodegroups 1-14) as
    the first seed.  Housekeeping only; the rows themselves go through objects.
    """
    engine = enginefacade.writer.get_engine()
    if engine.dialect.name != "mysql":
        return
    with engine.begin() as conn:
        for table in ("federation", "nodegroup", "cluster", "cluster_template"):
            conn.execute(sa.text("ALTER TABLE `%s` AUTO_INCREMENT = 1" % table))


def create_cluster(ctx, template, spec):
    # What cluster _post puts in the object (values inherited from the template).
    cluster = objects.Cluster(
        ctx, uuid=spec["uuid"], name=spec["name"], project_id=spec["project_id"],
        user_id=spec["user_id"], cluster_template_id=template.uuid,
        keypair=template.keypair_id, labels=dict(template.labels),
        floating_ip_enabled=template.floating_ip_enabled,
        master_lb_enabled=template.master_lb_enabled,
        docker_volume_size=template.docker_volume_size,
        master_flavor_id=template.master_flavor_id, flavor_id=template.flavor_id,
        fixed_network=template.fixed_network, fixed_subnet=template.fixed_subnet,
        create_timeout=60, coe_version=None, container_version=None)
    # Handler.cluster_create
    cluster.status = fields.ClusterStatus.CREATE_IN_PROGRESS
    cluster.status_reason = None
    cluster.create()
    ngs = []
    for is_master, (ng_uuid, count, addrs) in ((True, spec["master"]),
                                               (False, spec["worker"])):
        ng = conductor_utils._get_nodegroup_object(ctx, cluster, count,
                                                   is_master=is_master)
        ng.uuid = ng_uuid
        ng.create()
        ngs.append((ng, addrs))
    # What a successful driver create leaves behind.
    cluster.stack_id = spec["stack_id"]
    cluster.api_address = spec["api_address"]
    cluster.coe_version = LABELS["kube_tag"]
    cluster.health_status = spec["health_status"]
    cluster.status = spec["status"]
    cluster.status_reason = spec["status_reason"]
    cluster.save()
    for ng, addrs in ngs:
        ng.stack_id = cluster.stack_id
        ng.node_addresses = addrs
        ng.status = spec.get("ng_status", fields.ClusterStatus.CREATE_COMPLETE)
        ng.save()
    # Extra (non-default) nodegroups: nodegroup post + nodegroup_create.
    for extra in spec["extra"]:
        ng = objects.NodeGroup(
            ctx, cluster_id=cluster.uuid, project_id=cluster.project_id,
            image_id=template.image_id, flavor_id=cluster.flavor_id,
            labels=dict(cluster.labels), is_default=False, **extra)
        ng.status = fields.ClusterStatus.CREATE_IN_PROGRESS
        ng.create()
        ng.stack_id = cluster.stack_id
        ng.node_addresses = []
        ng.status = fields.ClusterStatus.CREATE_COMPLETE
        ng.save()


def main():
    service.prepare_service(sys.argv)
    # magnum.objects registers every object class on import (no register_all()).
    ctx = magnum_context.make_admin_context(all_tenants=True)
    delete_existing(ctx)
    reset_auto_increment()
    templates = {}
    for spec in [TEMPLATE] + EXTRA_TEMPLATES:
        templates[spec["uuid"]] = objects.ClusterTemplate(ctx, **spec)
        templates[spec["uuid"]].create()
    for spec in CLUSTERS:
        create_cluster(ctx, templates[spec.get("template", TEMPLATE_UUID)], spec)
    objects.Federation(ctx, **FEDERATION).create()
    print("magnum_seed: seeded %d templates, %d clusters, 1 federation"
          % (1 + len(EXTRA_TEMPLATES), len(CLUSTERS)), file=sys.stderr)


if __name__ == "__main__":
    main()
