//! Keyset pagination as oslo.db's `paginate_query` does it: sort by the requested column, then
//! by `id` in the same direction, resuming after the marker row.

use super::sort_key::{SortKey, Table};
use super::Bind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortDir {
    Asc,
    Desc,
}

impl SortDir {
    pub fn as_str(self) -> &'static str {
        match self {
            SortDir::Asc => "asc",
            SortDir::Desc => "desc",
        }
    }
}

/// One page request, already validated by the API layer.
#[derive(Clone, Debug)]
pub struct Page {
    pub limit: i64,
    /// A column of the table.
    pub sort_key: SortKey,
    pub sort_dir: SortDir,
    /// The `id` of the marker row.
    pub marker_id: Option<i64>,
}

impl Page {
    /// Appends the marker condition (if any), `ORDER BY` and `LIMIT` to a query whose
    /// `WHERE` clause is already open (`… WHERE 1 = 1`), for table `table` aliased `t`.
    /// A key of another table sorts by `id`.
    pub(crate) fn apply(&self, table: Table, sql: &mut String, binds: &mut Vec<Bind>) {
        let key = if self.sort_key.table() == table {
            self.sort_key
        } else {
            SortKey::id(table)
        };
        let sk = key.column();
        let table = table.name();
        if let Some(mid) = self.marker_id {
            let m = format!("(SELECT m.{sk} FROM {table} m WHERE m.id = ?)");
            if key.is_id() {
                let op = if self.sort_dir == SortDir::Asc {
                    ">"
                } else {
                    "<"
                };
                sql.push_str(&format!(" AND t.id {op} ?"));
                binds.push(Bind::Int(Some(mid)));
            } else if self.sort_dir == SortDir::Asc {
                sql.push_str(&format!(
                    " AND ((t.{sk} > {m}) OR (t.{sk} = {m} AND t.id > ?) \
                     OR ({m} IS NULL AND (t.{sk} IS NOT NULL OR t.id > ?)))"
                ));
                for b in [mid, mid, mid, mid, mid] {
                    binds.push(Bind::Int(Some(b)));
                }
            } else {
                sql.push_str(&format!(
                    " AND ((t.{sk} < {m}) OR (t.{sk} = {m} AND t.id < ?) \
                     OR ({m} IS NOT NULL AND t.{sk} IS NULL) \
                     OR ({m} IS NULL AND t.{sk} IS NULL AND t.id < ?))"
                ));
                for b in [mid, mid, mid, mid, mid, mid] {
                    binds.push(Bind::Int(Some(b)));
                }
            }
        }
        let dir = self.sort_dir.as_str();
        if key.is_id() {
            sql.push_str(&format!(" ORDER BY t.id {dir}"));
        } else {
            sql.push_str(&format!(" ORDER BY t.{sk} {dir}, t.id {dir}"));
        }
        sql.push_str(" LIMIT ?");
        binds.push(Bind::Int(Some(self.limit)));
    }
}
