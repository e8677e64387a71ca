-- Magnum's `federation` table at alembic head b3e1cf4a2d5e, as Magnum 23's migrations leave
-- it on MariaDB (revision 9a1539f1cd2c created it). A Magnum-made database has it already.

create table federation (
  created_at datetime default null,
  updated_at datetime default null,
  id int(11) not null auto_increment,
  project_id varchar(255) default null,
  uuid varchar(36) default null,
  name varchar(255) default null,
  hostcluster_id varchar(255) default null,
  member_ids text default null,
  status varchar(20) default null,
  status_reason text default null,
  properties text default null,
  primary key (id),
  unique key uniq_federation0uuid (uuid)
) engine=InnoDB default charset=utf8mb3;
