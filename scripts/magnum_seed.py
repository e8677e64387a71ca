"""Seed the reference Magnum DB with fixed rows, using Magnum 23's own objects.

Run by `scripts/magnum-db.sh seed DBNAME` inside the magnum venv:
    python magnum_seed.py --config-file <magnum.conf>

It replays what the API (cluster_template post, cluster _post, nodegroup post) and
the conductor (Handler.cluster_create + conductor.utils._get_nodegroup_object,
nodegroup_create) write, then sets what a finished driver create leaves behind
(status, status_reason, stack_id, api_address, coe_version, health_status,
node_addresses).  Idempotent: the seeded template, clusters and every nodegroup of
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
    dict(name="foreign-cluster", uuid="a1a1a1a1-0000-4000-8000-000000000003",
         project_id=FOREIGN_PROJECT, user_id="u-foreign",
         status=fields.ClusterStatus.UPDATE_FAILED, status_reason="boom",
         stack_id="kube-foreign", api_address="https://10.0.0.7:6443",
         health_status=fields.ClusterHealthStatus.UNKNOWN,
         master=("b1b1b1b1-0000-4000-8000-000000000031", 1, []),
         worker=("b1b1b1b1-0000-4000-8000-000000000032", 1, []),
         extra=[]),
]


def delete_existing(ctx):
    """Remove the seeded rows (nodegroups first, then clusters, then template)."""
    for spec in CLUSTERS:
        try:
            cluster = objects.Cluster.get_by_uuid(ctx, spec["uuid"])
        except exception.ClusterNotFound:
            continue
        for ng in objects.NodeGroup.list(ctx, cluster.uuid):
            ng.destroy()
        cluster.destroy()
    try:
        objects.ClusterTemplate.get_by_uuid(ctx, TEMPLATE_UUID).destroy()
    except exception.ClusterTemplateNotFound:
        pass


def reset_auto_increment():
    """Let ids restart after the highest remaining row (1 when the tables are empty).

    MariaDB/InnoDB clamps AUTO_INCREMENT to max(id)+1, so a re-seed of an otherwise
    empty database gets the same ids (template 1, clusters 1-3, nodegroups 1-7)
    as the first seed.  Housekeeping only; the rows themselves go through objects.
    """
    engine = enginefacade.writer.get_engine()
    if engine.dialect.name != "mysql":
        return
    with engine.begin() as conn:
        for table in ("nodegroup", "cluster", "cluster_template"):
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
        ng.status = fields.ClusterStatus.CREATE_COMPLETE
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
    template = objects.ClusterTemplate(ctx, **TEMPLATE)
    template.create()
    for spec in CLUSTERS:
        create_cluster(ctx, template, spec)
    print("magnum_seed: seeded 1 template, %d clusters" % len(CLUSTERS),
          file=sys.stderr)


if __name__ == "__main__":
    main()
