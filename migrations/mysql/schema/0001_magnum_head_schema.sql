-- Magnum's tables at alembic head b3e1cf4a2d5e exactly as Magnum 23's own migrations leave
-- them on MariaDB (column order, types, character sets and constraint names from
-- SHOW CREATE TABLE). Only applied to an empty database: magnum-rs never alters a schema
-- that Magnum's migrations created.

create table cluster_template (
  created_at datetime default null,
  updated_at datetime default null,
  id int(11) not null auto_increment,
  uuid varchar(36) default null,
  name varchar(255) default null,
  flavor_id varchar(255) default null,
  keypair_id varchar(255) default null,
  image_id varchar(255) default null,
  external_network_id varchar(255) default null,
  dns_nameserver varchar(255) default null,
  apiserver_port int(11) default null,
  project_id varchar(255) default null,
  user_id varchar(255) default null,
  docker_volume_size int(11) default null,
  fixed_network varchar(255) default null,
  master_flavor_id varchar(255) default null,
  cluster_distro varchar(255) default null,
  coe varchar(255) default null,
  http_proxy varchar(255) default null,
  https_proxy varchar(255) default null,
  no_proxy varchar(255) default null,
  registry_enabled tinyint(1) default null,
  network_driver varchar(255) default null,
  labels text default null,                 -- JSON dict
  tls_disabled tinyint(1) default null,
  public tinyint(1) default null,
  server_type varchar(255) default 'vm',
  volume_driver varchar(255) default null,
  insecure_registry varchar(255) default null,
  docker_storage_driver varchar(512) default null,
  master_lb_enabled tinyint(1) default null,
  fixed_subnet varchar(255) default null,
  floating_ip_enabled tinyint(1) default null,
  hidden tinyint(1) default null,
  tags varchar(255) default null,
  driver varchar(255) default null,
  primary key (id),
  unique key uniq_baymodel0uuid (uuid)
) engine=InnoDB default charset=utf8mb3;

create table cluster (
  created_at datetime default null,
  updated_at datetime default null,
  id int(11) not null auto_increment,
  uuid varchar(36) default null,
  name varchar(255) default null,           -- not unique
  cluster_template_id varchar(255) default null,
  api_address varchar(255) default null,
  stack_id varchar(255) default null,       -- shown as cluster_id from microversion 1.13
  project_id varchar(255) default null,
  user_id varchar(255) default null,
  status varchar(20) default null,
  discovery_url varchar(255) default null,
  status_reason text default null,
  ca_cert_ref varchar(512) default null,
  magnum_cert_ref varchar(512) default null,
  create_timeout int(11) default null,      -- minutes
  coe_version varchar(255) default null,
  container_version varchar(255) default null,
  keypair varchar(255) default null,
  docker_volume_size int(11) default null,
  labels text default null,                 -- JSON dict
  master_flavor_id varchar(255) default null,
  flavor_id varchar(255) default null,
  health_status varchar(20) default null,
  health_status_reason text default null,   -- JSON dict
  fixed_network varchar(255) default null,
  fixed_subnet varchar(255) default null,
  floating_ip_enabled tinyint(1) default null,
  master_lb_enabled tinyint(1) default null,
  etcd_ca_cert_ref varchar(512) default null,
  front_proxy_ca_cert_ref varchar(512) default null,
  primary key (id),
  unique key uniq_bay0uuid (uuid),
  -- Added by magnum-rs on its own schema so that tenant-filtered pages stay cheap.
  key ix_cluster_project_id (project_id, id)
) engine=InnoDB default charset=utf8mb3;

create table nodegroup (
  created_at datetime default null,
  updated_at datetime default null,
  id int(11) not null auto_increment,
  uuid varchar(36) not null,
  name varchar(255) not null,
  cluster_id varchar(255) not null,         -- the cluster's uuid
  project_id varchar(255) not null,
  docker_volume_size int(11) default null,
  labels text default null,                 -- JSON dict
  flavor_id varchar(255) default null,
  image_id varchar(255) default null,
  node_addresses text default null,         -- JSON list
  node_count int(11) default null,
  max_node_count int(11) default null,      -- NULL: no maximum
  min_node_count int(11) default null,      -- NULL reads as 0
  role varchar(255) default null,
  is_default tinyint(1) default null,
  stack_id varchar(255) default null,
  status varchar(20) default null,
  status_reason text default null,
  version varchar(20) default null,
  node_labels text default null,            -- JSON dict
  node_taints text default null,            -- JSON list
  primary key (id),
  unique key uniq_nodegroup0uuid (uuid),
  unique key uniq_nodegroup0cluster_id0name (cluster_id, name)
) engine=InnoDB default charset=utf8mb4;

-- Stamped at Magnum's head, so Magnum's own tools accept this database as current.
create table alembic_version (
  version_num varchar(32) not null,
  primary key (version_num)
) engine=InnoDB default charset=utf8mb3;
insert into alembic_version (version_num) values ('b3e1cf4a2d5e');
