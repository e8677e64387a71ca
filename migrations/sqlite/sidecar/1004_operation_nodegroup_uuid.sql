-- An operation names its nodegroup by uuid, which is never reused (issue 28): a row id read
-- before a delete could name another project's new row. Rows recorded before this column
-- existed take the uuid of the nodegroup their id names now (their nodegroup_id stays, unread).
alter table magnum_rs_operation add column nodegroup_uuid varchar(36);
update magnum_rs_operation
    set nodegroup_uuid = (select n.uuid from nodegroup n where n.id = magnum_rs_operation.nodegroup_id)
    where nodegroup_id is not null;
-- One row per project that has created a cluster: a cluster create locks its project's row,
-- so the quota's count and the insert are serialised per project (MySQL/MariaDB; on SQLite
-- every write transaction holds the database's write lock from its start).
create table magnum_rs_project_lock (
    project_id varchar(255) not null primary key
);
