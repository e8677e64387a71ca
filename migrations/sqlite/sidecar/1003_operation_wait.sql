-- What an operation in flight waits for, durable (so a restart or a new leader ends it the
-- same way): the object and the generation our change produced, when the wait started,
-- its deadline, and the last progress seen (a marker of the controllers' counters; a new
-- marker moves the deadline). State 'waiting': handed to the driver, not yet ended.
alter table magnum_rs_operation add column wait_object varchar(255);
alter table magnum_rs_operation add column wait_generation integer;
alter table magnum_rs_operation add column started_at datetime;
alter table magnum_rs_operation add column deadline_at datetime;
alter table magnum_rs_operation add column progress text;
alter table magnum_rs_operation add column progress_at datetime;
create index ix_magnum_rs_operation_deadline on magnum_rs_operation (state, deadline_at);
