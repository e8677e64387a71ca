-- Two more of Magnum's tables at alembic head b3e1cf4a2d5e, as Magnum 23's migrations leave
-- them on MariaDB: per-project quotas and the services' heartbeats (`GET /v1/mservices`).
-- A Magnum-made database has them already.

create table quotas (
  id int(11) not null auto_increment,
  created_at datetime default null,
  updated_at datetime default null,
  project_id varchar(255) default null,
  resource varchar(255) default null,
  hard_limit int(11) not null,
  primary key (id),
  unique key uniq_quotas0project_id0resource (project_id, resource)
) engine=InnoDB default charset=utf8mb3;

create table magnum_service (
  created_at datetime default null,
  updated_at datetime default null,
  id int(11) not null auto_increment,
  report_count int(11) not null,
  host varchar(255) default null,
  `binary` varchar(255) default null,
  disabled tinyint(1) default null,
  disabled_reason varchar(255) default null,
  last_seen_up datetime default null,
  forced_down tinyint(1) default null,
  primary key (id),
  unique key uniq_magnum_service0host0binary (host, `binary`)
) engine=InnoDB default charset=utf8mb4;
