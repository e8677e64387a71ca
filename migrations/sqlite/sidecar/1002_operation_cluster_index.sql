-- Completions ask whether a cluster still has open operations: an index instead of reading
-- the cluster's whole operation history.
create index ix_magnum_rs_operation_cluster on magnum_rs_operation (cluster_uuid, state);
