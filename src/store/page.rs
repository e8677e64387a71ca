//! Keyset pagination as oslo.db's `paginate_query` does it: sort by the requested column, then
//! by `id` in the same direction, resuming after the marker row.

use super::sort_key::{SortKey, Table};
use super::Bind;
use crate::model::Tenancy;

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
    /// The row the page resumes after.
    pub marker: Option<Marker>,
}

/// The row a page resumes after (`marker`).
#[derive(Clone, Debug)]
pub enum Marker {
    /// Its `id`, looked up beforehand.
    Id(i64),
    /// Its `uuid`, visible within `tenancy` (`project_id`/`user_id` of the table): looked up
    /// by the page's own statement, one round trip instead of two. A uuid that names no
    /// such row matches nothing, so the page comes back empty; only then need the caller
    /// tell "after the last row" from "no such marker".
    Uuid { uuid: String, tenancy: Tenancy },
}

impl Marker {
    /// The marker row's `id` as an SQL expression, its binds pushed.
    fn id_expr(&self, table: &str, binds: &mut Vec<Bind>) -> String {
        match self {
            Marker::Id(id) => {
                binds.push(Bind::Int(Some(*id)));
                "?".to_string()
            }
            Marker::Uuid { uuid, tenancy } => {
                binds.push(Bind::text(uuid));
                let filter = tenancy_filter("m", tenancy, binds);
                format!("(SELECT MIN(m.id) FROM {table} m WHERE m.uuid = ?{filter})")
            }
        }
    }
}

/// `_add_tenant_filters` for alias `alias`: ` AND <alias>.project_id = ?` (or `user_id`),
/// nothing for all tenants.
pub(crate) fn tenancy_filter(alias: &str, tenancy: &Tenancy, binds: &mut Vec<Bind>) -> String {
    let (column, value) = match tenancy {
        Tenancy::All => return String::new(),
        Tenancy::Project(p) => ("project_id", p),
        Tenancy::User(u) => ("user_id", u),
    };
    binds.push(Bind::text(value));
    format!(" AND {alias}.{column} = ?")
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
        if let Some(marker) = &self.marker {
            if key.is_id() {
                let op = if self.sort_dir == SortDir::Asc {
                    ">"
                } else {
                    "<"
                };
                let mid = marker.id_expr(table, binds);
                sql.push_str(&format!(" AND t.id {op} {mid}"));
            } else {
                // A uuid that names no row must match nothing here too: without the marker
                // row, the NULL-key branches below would match every row.
                if let Marker::Uuid { .. } = marker {
                    let mid = marker.id_expr(table, binds);
                    sql.push_str(&format!(" AND {mid} IS NOT NULL"));
                }
                // The marker's key, then its id, each as often as the condition names them.
                let m = |binds: &mut Vec<Bind>| {
                    let mid = marker.id_expr(table, binds);
                    format!("(SELECT m2.{sk} FROM {table} m2 WHERE m2.id = {mid})")
                };
                if self.sort_dir == SortDir::Asc {
                    let (a, b) = (m(binds), m(binds));
                    let c = marker.id_expr(table, binds);
                    let d = m(binds);
                    let e = marker.id_expr(table, binds);
                    sql.push_str(&format!(
                        " AND ((t.{sk} > {a}) OR (t.{sk} = {b} AND t.id > {c}) \
                         OR ({d} IS NULL AND (t.{sk} IS NOT NULL OR t.id > {e})))"
                    ));
                } else {
                    let (a, b) = (m(binds), m(binds));
                    let c = marker.id_expr(table, binds);
                    let (d, e) = (m(binds), m(binds));
                    let f = marker.id_expr(table, binds);
                    sql.push_str(&format!(
                        " AND ((t.{sk} < {a}) OR (t.{sk} = {b} AND t.id < {c}) \
                         OR ({d} IS NOT NULL AND t.{sk} IS NULL) \
                         OR ({e} IS NULL AND t.{sk} IS NULL AND t.id < {f}))"
                    ));
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
