-- Row ids are never reused (issue 28): SQLite's rowid alias (`id integer` with `primary key
-- (id)`) hands the largest freed id to the next insert, so a request that read a row before
-- it was deleted could address another project's new row by that id. AUTOINCREMENT keeps
-- ids strictly increasing, as Magnum's MySQL schema (AUTO_INCREMENT, persisted by InnoDB)
-- does. SQLite cannot add it to a column in place: each table is rebuilt with the same
-- columns, constraints and rows, and its indexes made again. Only magnum-rs's own schema
-- gets here (a Magnum-made database is never altered).

create table cluster_template_new (
    created_at datetime,
    updated_at datetime,
    id integer primary key autoincrement,
    uuid varchar(36),
    project_id varchar(255),
    user_id varchar(255),
    name varchar(255),
    image_id varchar(255),
    flavor_id varchar(255),
    master_flavor_id varchar(255),
    keypair_id varchar(255),
    external_network_id varchar(255),
    fixed_network varchar(255),
    fixed_subnet varchar(255),
    network_driver varchar(255),
    volume_driver varchar(255),
    dns_nameserver varchar(255),
    apiserver_port integer,
    docker_volume_size integer,
    docker_storage_driver varchar(255),
    cluster_distro varchar(255),
    coe varchar(255),
    http_proxy varchar(255),
    https_proxy varchar(255),
    no_proxy varchar(255),
    registry_enabled boolean,
    labels text,
    tls_disabled boolean,
    public boolean,
    server_type varchar(255),
    insecure_registry varchar(255),
    master_lb_enabled boolean,
    floating_ip_enabled boolean,
    hidden boolean,
    tags varchar(255),
    driver varchar(255),
    constraint uniq_baymodel0uuid unique (uuid)
);
insert into cluster_template_new (created_at, updated_at, id, uuid, project_id, user_id, name, image_id, flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, fixed_subnet, network_driver, volume_driver, dns_nameserver, apiserver_port, docker_volume_size, docker_storage_driver, cluster_distro, coe, http_proxy, https_proxy, no_proxy, registry_enabled, labels, tls_disabled, public, server_type, insecure_registry, master_lb_enabled, floating_ip_enabled, hidden, tags, driver)
    select created_at, updated_at, id, uuid, project_id, user_id, name, image_id, flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, fixed_subnet, network_driver, volume_driver, dns_nameserver, apiserver_port, docker_volume_size, docker_storage_driver, cluster_distro, coe, http_proxy, https_proxy, no_proxy, registry_enabled, labels, tls_disabled, public, server_type, insecure_registry, master_lb_enabled, floating_ip_enabled, hidden, tags, driver from cluster_template;
drop table cluster_template;
alter table cluster_template_new rename to cluster_template;

create table cluster_new (
    created_at datetime,
    updated_at datetime,
    id integer primary key autoincrement,
    project_id varchar(255),
    user_id varchar(255),
    uuid varchar(36),
    name varchar(255),
    cluster_template_id varchar(255),
    keypair varchar(255),
    docker_volume_size integer,
    labels text,
    master_flavor_id varchar(255),
    flavor_id varchar(255),
    stack_id varchar(255),
    api_address varchar(255),
    status varchar(20),
    status_reason text,
    health_status varchar(20),
    health_status_reason text,
    create_timeout integer,
    discovery_url varchar(255),
    ca_cert_ref varchar(512),
    magnum_cert_ref varchar(512),
    etcd_ca_cert_ref varchar(512),
    front_proxy_ca_cert_ref varchar(512),
    coe_version varchar(255),
    container_version varchar(255),
    fixed_network varchar(255),
    fixed_subnet varchar(255),
    floating_ip_enabled boolean,
    master_lb_enabled boolean,
    constraint uniq_bay0uuid unique (uuid)
);
insert into cluster_new (created_at, updated_at, id, project_id, user_id, uuid, name, cluster_template_id, keypair, docker_volume_size, labels, master_flavor_id, flavor_id, stack_id, api_address, status, status_reason, health_status, health_status_reason, create_timeout, discovery_url, ca_cert_ref, magnum_cert_ref, etcd_ca_cert_ref, front_proxy_ca_cert_ref, coe_version, container_version, fixed_network, fixed_subnet, floating_ip_enabled, master_lb_enabled)
    select created_at, updated_at, id, project_id, user_id, uuid, name, cluster_template_id, keypair, docker_volume_size, labels, master_flavor_id, flavor_id, stack_id, api_address, status, status_reason, health_status, health_status_reason, create_timeout, discovery_url, ca_cert_ref, magnum_cert_ref, etcd_ca_cert_ref, front_proxy_ca_cert_ref, coe_version, container_version, fixed_network, fixed_subnet, floating_ip_enabled, master_lb_enabled from cluster;
drop table cluster;
alter table cluster_new rename to cluster;

create table nodegroup_new (
    created_at datetime,
    updated_at datetime,
    id integer primary key autoincrement,
    uuid varchar(36) not null,
    name varchar(255) not null,
    cluster_id varchar(255) not null,
    project_id varchar(255) not null,
    docker_volume_size integer,
    labels text,
    flavor_id varchar(255),
    image_id varchar(255),
    node_addresses text,
    node_count integer,
    max_node_count integer,
    min_node_count integer,
    role varchar(255),
    is_default boolean,
    stack_id varchar(255),
    status varchar(20),
    status_reason text,
    version varchar(20),
    node_labels text,
    node_taints text,
    constraint uniq_nodegroup0uuid unique (uuid),
    constraint uniq_nodegroup0cluster_id0name unique (cluster_id, name)
);
insert into nodegroup_new (created_at, updated_at, id, uuid, name, cluster_id, project_id, docker_volume_size, labels, flavor_id, image_id, node_addresses, node_count, max_node_count, min_node_count, role, is_default, stack_id, status, status_reason, version, node_labels, node_taints)
    select created_at, updated_at, id, uuid, name, cluster_id, project_id, docker_volume_size, labels, flavor_id, image_id, node_addresses, node_count, max_node_count, min_node_count, role, is_default, stack_id, status, status_reason, version, node_labels, node_taints from nodegroup;
drop table nodegroup;
alter table nodegroup_new rename to nodegroup;

create table quotas_new (
    id integer primary key autoincrement,
    created_at datetime,
    updated_at datetime,
    project_id varchar(255),
    resource varchar(255),
    hard_limit integer not null,
    constraint uniq_quotas0project_id0resource unique (project_id, resource)
);
insert into quotas_new (id, created_at, updated_at, project_id, resource, hard_limit)
    select id, created_at, updated_at, project_id, resource, hard_limit from quotas;
drop table quotas;
alter table quotas_new rename to quotas;

create table magnum_service_new (
    created_at datetime,
    updated_at datetime,
    id integer primary key autoincrement,
    report_count integer not null,
    host varchar(255),
    "binary" varchar(255),
    disabled boolean,
    disabled_reason varchar(255),
    last_seen_up datetime,
    forced_down boolean,
    constraint uniq_magnum_service0host0binary unique (host, "binary")
);
insert into magnum_service_new (created_at, updated_at, id, report_count, host, "binary", disabled, disabled_reason, last_seen_up, forced_down)
    select created_at, updated_at, id, report_count, host, "binary", disabled, disabled_reason, last_seen_up, forced_down from magnum_service;
drop table magnum_service;
alter table magnum_service_new rename to magnum_service;

create table federation_new (
    created_at datetime,
    updated_at datetime,
    id integer primary key autoincrement,
    project_id varchar(255),
    uuid varchar(36),
    name varchar(255),
    hostcluster_id varchar(255),
    member_ids text,
    status varchar(20),
    status_reason text,
    properties text,
    constraint uniq_federation0uuid unique (uuid)
);
insert into federation_new (created_at, updated_at, id, project_id, uuid, name, hostcluster_id, member_ids, status, status_reason, properties)
    select created_at, updated_at, id, project_id, uuid, name, hostcluster_id, member_ids, status, status_reason, properties from federation;
drop table federation;
alter table federation_new rename to federation;

create index ix_cluster_project_id on cluster (project_id, id);
create index ix_nodegroup_cluster_id on nodegroup (cluster_id, id);
