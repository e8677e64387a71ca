-- Magnum's `x509keypair` table at alembic head b3e1cf4a2d5e (see the MySQL migration of the
-- same name): each cluster's CAs and client certificate, as Magnum's x509keypair cert
-- manager keeps them. AUTOINCREMENT: ids are never reused (0004).

create table x509keypair (
    id integer primary key autoincrement,
    created_at datetime,
    updated_at datetime,
    uuid varchar(36),
    certificate text,
    private_key text,
    project_id varchar(255),
    user_id varchar(255),
    intermediates text,
    private_key_passphrase text,
    constraint uniq_x509keypair0uuid unique (uuid)
);
