-- Magnum's `x509keypair` table at alembic head b3e1cf4a2d5e, as Magnum 23's migrations leave
-- it on MariaDB (421102d1f2d2 created it, d072f58ab240 dropped name, bay_uuid and ca_cert
-- and added intermediates and private_key_passphrase). Magnum's x509keypair cert manager
-- keeps each cluster's CAs and its client certificate here; a Magnum-made database has it.

create table x509keypair (
  id int(11) not null auto_increment,
  created_at datetime default null,
  updated_at datetime default null,
  uuid varchar(36) default null,
  certificate text default null,
  private_key text default null,
  project_id varchar(255) default null,
  user_id varchar(255) default null,
  intermediates text default null,
  private_key_passphrase text default null,
  primary key (id),
  unique key uniq_x509keypair0uuid (uuid)
) engine=InnoDB default charset=utf8mb3;
