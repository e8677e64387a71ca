-- magnum-rs's own table beside Magnum's: durable records of accepted operations (resize,
-- upgrade, nodegroup changes) that a worker hands to the cluster's driver.
create table magnum_rs_operation (
    id integer primary key autoincrement,  -- strictly increasing: the order requests were accepted
    kind varchar(32) not null,             -- resize | upgrade | nodegroup_create | …
    cluster_uuid varchar(36) not null,
    nodegroup_id integer,
    old_count integer,
    new_count integer,
    payload text,                          -- JSON: nodes_to_remove, template, …
    state varchar(20) not null,            -- pending | done | failed | superseded
    attempts integer not null default 0,
    last_error text,
    created_at datetime,
    updated_at datetime
);
create index ix_magnum_rs_operation_state on magnum_rs_operation (state, id);
