-- magnum-rs's own table beside Magnum's: durable records of accepted operations (resize,
-- upgrade, nodegroup changes) that a worker hands to the cluster's driver.
create table magnum_rs_operation (
    id bigint not null auto_increment primary key,  -- strictly increasing: the order requests were accepted
    kind varchar(32) not null,             -- resize | upgrade | nodegroup_create | …
    cluster_uuid varchar(36) not null,
    nodegroup_id int,
    old_count int,
    new_count int,
    payload text,                          -- JSON: nodes_to_remove, template, …
    state varchar(20) not null,            -- pending | done | failed | superseded
    attempts int not null default 0,
    last_error text,
    created_at datetime,
    updated_at datetime
) engine=InnoDB default charset=utf8mb4;
create index ix_magnum_rs_operation_state on magnum_rs_operation (state, id);
