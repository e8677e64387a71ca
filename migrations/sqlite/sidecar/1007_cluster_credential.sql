-- magnum-rs's own table beside Magnum's: a cluster's application credential (the one
-- magnum-cluster-api gives Cluster API's OpenStack provider). The create request's token
-- waits here until the worker has made the credential with it, and is cleared in the
-- statement that stores the credential; the row goes with the cluster's.
create table magnum_rs_cluster_credential (
    cluster_uuid varchar(36) not null primary key,
    user_token text,                      -- the creating user's token, until it is used
    token_expires_at varchar(40),         -- RFC 3339
    credential_id varchar(64),            -- Keystone's id, once made
    credential_secret text,               -- shown by Keystone once; written to <stack>-cloud-config
    created_at datetime
);
