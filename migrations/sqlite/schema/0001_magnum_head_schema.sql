-- Magnum's tables at alembic head b3e1cf4a2d5e, as SQLAlchemy creates them on SQLite
-- (magnum/db/sqlalchemy/models.py). Only applied to an empty database: magnum-rs never
-- alters a schema that Magnum's own migrations created.

create table cluster_template (
    created_at datetime,
    updated_at datetime,
    id integer not null,
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
    labels text,              -- JSON dict
    tls_disabled boolean,
    public boolean,
    server_type varchar(255),
    insecure_registry varchar(255),
    master_lb_enabled boolean,
    floating_ip_enabled boolean,
    hidden boolean,
    tags varchar(255),
    driver varchar(255),
    primary key (id),
    constraint uniq_baymodel0uuid unique (uuid)
);

create table cluster (
    created_at datetime,
    updated_at datetime,
    id integer not null,
    project_id varchar(255),
    user_id varchar(255),
    uuid varchar(36),
    name varchar(255),         -- not unique
    cluster_template_id varchar(255),
    keypair varchar(255),
    docker_volume_size integer,
    labels text,               -- JSON dict
    master_flavor_id varchar(255),
    flavor_id varchar(255),
    stack_id varchar(255),     -- shown as cluster_id from microversion 1.13
    api_address varchar(255),
    status varchar(20),
    status_reason text,
    health_status varchar(20),
    health_status_reason text, -- JSON dict
    create_timeout integer,    -- minutes
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
    primary key (id),
    constraint uniq_bay0uuid unique (uuid)
);

create table nodegroup (
    created_at datetime,
    updated_at datetime,
    id integer not null,
    uuid varchar(36) not null,
    name varchar(255) not null,
    cluster_id varchar(255) not null,  -- the cluster's uuid
    project_id varchar(255) not null,
    docker_volume_size integer,
    labels text,                       -- JSON dict
    flavor_id varchar(255),
    image_id varchar(255),
    node_addresses text,               -- JSON list
    node_count integer,
    max_node_count integer,            -- NULL: no maximum
    min_node_count integer,            -- NULL reads as 0
    role varchar(255),
    is_default boolean,
    stack_id varchar(255),
    status varchar(20),
    status_reason text,
    version varchar(20),
    node_labels text,                  -- JSON dict
    node_taints text,                  -- JSON list
    primary key (id),
    constraint uniq_nodegroup0uuid unique (uuid),
    constraint uniq_nodegroup0cluster_id0name unique (cluster_id, name)
);

-- Indexes magnum-rs adds on its own schema so that tenant-filtered pages stay cheap.
create index ix_cluster_project_id on cluster (project_id, id);
create index ix_nodegroup_cluster_id on nodegroup (cluster_id, id);

-- Stamped at Magnum's head, so Magnum's own tools accept this database as current.
create table alembic_version (
    version_num varchar(32) not null,
    constraint alembic_version_pkc primary key (version_num)
);
insert into alembic_version (version_num) values ('b3e1cf4a2d5e');
