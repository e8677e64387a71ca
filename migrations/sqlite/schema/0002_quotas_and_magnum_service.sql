-- Two more of Magnum's tables at alembic head b3e1cf4a2d5e: per-project quotas and the
-- services' heartbeats (`GET /v1/mservices`). A Magnum-made database has them already.

create table quotas (
    id integer not null,
    created_at datetime,
    updated_at datetime,
    project_id varchar(255),
    resource varchar(255),
    hard_limit integer not null,
    primary key (id),
    constraint uniq_quotas0project_id0resource unique (project_id, resource)
);

create table magnum_service (
    created_at datetime,
    updated_at datetime,
    id integer not null,
    report_count integer not null,
    host varchar(255),
    "binary" varchar(255),
    disabled boolean,
    disabled_reason varchar(255),
    last_seen_up datetime,
    forced_down boolean,
    primary key (id),
    constraint uniq_magnum_service0host0binary unique (host, "binary")
);
