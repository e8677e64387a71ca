-- An operation's payload holds what the request gave (a resize's nodes_to_remove, bounded by
-- [api] max_field_size like Magnum's TEXT columns) plus its own keys, and a roll-back keeps
-- the failure's reason: more than a TEXT column's 65,535 bytes in the worst case. The table is
-- magnum-rs's own, so it may grow its columns (SQLite's TEXT has no such limit).
alter table magnum_rs_operation modify payload mediumtext;
alter table magnum_rs_operation modify last_error mediumtext;
