-- Retries of an operation whose driver call failed for a passing reason (the management
-- cluster unreachable, a conflict): durable, so a restart keeps the schedule (issue 29).
-- not_before: the operation is pending but not claimed before this time (exponential
-- backoff with jitter); retry_since: the first of the failures in a row, so the retries end
-- at the driver's progress deadline from there. Microseconds kept (datetime(6)): a retry may be
-- due within the second, and a whole-second value could make it due before its time.
alter table magnum_rs_operation add column not_before datetime(6);
alter table magnum_rs_operation add column retry_since datetime(6);
