//! The column a collection is sorted by, as a typed identifier: only [`SortKey::parse`]
//! makes one, from the schema's own column lists, so the name that reaches SQL is always a
//! column of the table it sorts (Magnum, through oslo.db, accepts any column of the table).

use super::schema::{ClusterCol, Column, FederationCol, NodeGroupCol, QuotaCol, TemplateCol};

/// A table whose rows are listed a page at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Cluster,
    ClusterTemplate,
    NodeGroup,
    Federation,
    Quota,
}

/// Columns of `cluster` that magnum-rs does not read but Magnum sorts by.
const CLUSTER_CERT_REF_COLUMNS: &[&str] = &[
    "ca_cert_ref",
    "magnum_cert_ref",
    "etcd_ca_cert_ref",
    "front_proxy_ca_cert_ref",
];

impl Table {
    /// The table's name in Magnum's schema.
    pub fn name(self) -> &'static str {
        match self {
            Table::Cluster => ClusterCol::TABLE,
            Table::ClusterTemplate => TemplateCol::TABLE,
            Table::NodeGroup => NodeGroupCol::TABLE,
            Table::Federation => FederationCol::TABLE,
            Table::Quota => QuotaCol::TABLE,
        }
    }

    /// The schema's own spelling of `name`, when it is a column of this table.
    fn column(self, name: &str) -> Option<&'static str> {
        fn of<C: Column>(name: &str) -> Option<&'static str> {
            C::named(name).map(C::name)
        }
        match self {
            Table::Cluster => of::<ClusterCol>(name).or_else(|| {
                CLUSTER_CERT_REF_COLUMNS
                    .iter()
                    .copied()
                    .find(|c| *c == name)
            }),
            Table::ClusterTemplate => of::<TemplateCol>(name),
            Table::NodeGroup => of::<NodeGroupCol>(name),
            Table::Federation => of::<FederationCol>(name),
            Table::Quota => of::<QuotaCol>(name),
        }
    }
}

/// A column of one table to sort its collection by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    table: Table,
    column: &'static str,
}

impl SortKey {
    /// The key a client named, when `name` is a column of `table`.
    pub fn parse(table: Table, name: &str) -> Option<SortKey> {
        table.column(name).map(|column| SortKey { table, column })
    }

    /// Sorting by `id`, the default.
    pub fn id(table: Table) -> SortKey {
        SortKey {
            table,
            column: "id",
        }
    }

    pub fn table(self) -> Table {
        self.table
    }

    /// The column's name, as the schema spells it.
    pub fn column(self) -> &'static str {
        self.column
    }

    pub fn is_id(self) -> bool {
        self.column == "id"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_of_the_table_is_a_sort_key() {
        let k = SortKey::parse(Table::Cluster, "node_count");
        assert_eq!(
            k, None,
            "node_count is a nodegroup column, not a cluster one"
        );
        let k = SortKey::parse(Table::NodeGroup, "node_count").expect("a nodegroup column");
        assert_eq!((k.table(), k.column()), (Table::NodeGroup, "node_count"));
        assert!(SortKey::parse(Table::Cluster, "ca_cert_ref").is_some());
        assert!(SortKey::parse(Table::Quota, "hard_limit").is_some());
        assert!(SortKey::parse(Table::Federation, "member_ids").is_some());
        assert!(SortKey::parse(Table::ClusterTemplate, "coe").is_some());
    }

    #[test]
    fn anything_else_is_refused_before_it_reaches_sql() {
        for name in [
            "",
            "id; DROP TABLE cluster",
            "t.id",
            "ID",
            "uuid ",
            "hard_limit",
        ] {
            assert_eq!(SortKey::parse(Table::Cluster, name), None, "{name:?}");
        }
        assert!(SortKey::id(Table::Quota).is_id());
    }
}
