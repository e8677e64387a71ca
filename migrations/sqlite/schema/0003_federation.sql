-- Magnum's `federation` table at alembic head b3e1cf4a2d5e (revision 9a1539f1cd2c created it).
-- A Magnum-made database has it already. `member_ids` and `properties` hold JSON text.

create table federation (
    created_at datetime,
    updated_at datetime,
    id integer not null,
    project_id varchar(255),
    uuid varchar(36),
    name varchar(255),
    hostcluster_id varchar(255),
    member_ids text,
    status varchar(20),
    status_reason text,
    properties text,
    primary key (id),
    constraint uniq_federation0uuid unique (uuid)
);
