//! `federation` rows (`magnum/db/sqlalchemy/api.py`, the `*_federation*` functions):
//! a host cluster, its member clusters and the federation's properties.

use serde_json::{Map, Value};

use super::page::tenancy_filter;
use super::schema::{isoformat, json_list, json_map, select_from, FederationCol, FederationRow};
use super::sort_key::Table;
use super::{now, stmt, Bind, Page, Store};
use crate::model::Tenancy;

/// One row of `federation`.
#[derive(Clone, Debug, PartialEq)]
pub struct Federation {
    pub id: i64,
    pub uuid: String,
    pub project_id: Option<String>,
    pub name: Option<String>,
    pub hostcluster_id: Option<String>,
    pub member_ids: Option<Vec<Value>>,
    pub status: Option<String>,
    pub status_reason: Option<String>,
    pub properties: Option<Map<String, Value>>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// The JSON columns as read, so that an update can check nothing changed meanwhile.
    revision: (Option<String>, Option<String>),
}

/// A federation to insert.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewFederation {
    pub uuid: String,
    pub project_id: Option<String>,
    pub name: String,
    pub hostcluster_id: Option<String>,
    pub member_ids: Vec<Value>,
    pub status: String,
    pub status_reason: Option<String>,
    pub properties: Map<String, Value>,
}

/// What an update writes: the two attributes a client may change, and the outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct FederationChange {
    pub member_ids: Vec<Value>,
    pub properties: Map<String, Value>,
    pub status: String,
    pub status_reason: Option<String>,
}

/// How a conditional update ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FederationUpdate {
    Done,
    /// Another request changed the members or properties after they were read.
    Raced,
    Gone,
}

impl From<FederationRow> for Federation {
    fn from(r: FederationRow) -> Self {
        Federation {
            id: r.id,
            uuid: r.uuid.unwrap_or_default(),
            project_id: r.project_id,
            name: r.name,
            hostcluster_id: r.hostcluster_id,
            member_ids: json_list(r.member_ids.as_deref()),
            status: r.status,
            status_reason: r.status_reason,
            properties: json_map(r.properties.as_deref()),
            created_at: r.created_at.as_ref().map(isoformat),
            updated_at: r.updated_at.as_ref().map(isoformat),
            revision: (r.member_ids, r.properties),
        }
    }
}

impl Store {
    /// A page of the federations `tenancy` sees.
    pub async fn list_federations(
        &self,
        tenancy: &Tenancy,
        page: &Page,
    ) -> Result<Vec<Federation>, sqlx::Error> {
        let mut sql = format!("{} WHERE 1 = 1", select_from::<FederationCol>());
        let mut binds = Vec::new();
        sql.push_str(&tenancy_filter(
            "t",
            &federation_tenancy(tenancy),
            &mut binds,
        ));
        page.apply(Table::Federation, &mut sql, &mut binds);
        let rows: Vec<FederationRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(Federation::from).collect())
    }

    /// Federations whose `uuid` or `name` (`by_name`) is `value`, within `tenancy`.
    pub async fn find_federations(
        &self,
        tenancy: &Tenancy,
        by_name: bool,
        value: &str,
    ) -> Result<Vec<Federation>, sqlx::Error> {
        let mut sql = format!("{} WHERE 1 = 1", select_from::<FederationCol>());
        let mut binds = Vec::new();
        sql.push_str(&tenancy_filter(
            "t",
            &federation_tenancy(tenancy),
            &mut binds,
        ));
        sql.push_str(if by_name {
            " AND t.name = ?"
        } else {
            " AND t.uuid = ?"
        });
        binds.push(Bind::text(value));
        sql.push_str(" ORDER BY t.id LIMIT 2");
        let rows: Vec<FederationRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(Federation::from).collect())
    }

    pub async fn insert_federation(&self, f: &NewFederation) -> Result<(), sqlx::Error> {
        stmt(
            "INSERT INTO federation (created_at, project_id, uuid, name, hostcluster_id, \
             member_ids, status, status_reason, properties) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(now())
        .bind(f.project_id.clone())
        .bind(f.uuid.clone())
        .bind(f.name.clone())
        .bind(f.hostcluster_id.clone())
        .bind(Value::Array(f.member_ids.clone()).to_string())
        .bind(f.status.clone())
        .bind(f.status_reason.clone())
        .bind(Value::Object(f.properties.clone()).to_string())
        .execute(&mut self.conn().await?)
        .await?;
        Ok(())
    }

    /// Writes `change` if the members and properties are still those of `current`.
    pub async fn update_federation(
        &self,
        current: &Federation,
        change: &FederationChange,
    ) -> Result<FederationUpdate, sqlx::Error> {
        let (members_before, properties_before) = &current.revision;
        let done = stmt(
            "UPDATE federation SET member_ids = ?, properties = ?, status = ?, \
             status_reason = ?, updated_at = ? WHERE id = ? \
             AND COALESCE(member_ids, '') = ? AND COALESCE(properties, '') = ?",
        )
        .bind(Value::Array(change.member_ids.clone()).to_string())
        .bind(Value::Object(change.properties.clone()).to_string())
        .bind(change.status.clone())
        .bind(change.status_reason.clone())
        .bind(now())
        .bind(current.id)
        .bind(members_before.clone().unwrap_or_default())
        .bind(properties_before.clone().unwrap_or_default())
        .execute(&mut self.conn().await?)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(FederationUpdate::Done);
        }
        let still_there: Option<i64> = stmt("SELECT id FROM federation WHERE id = ?")
            .bind(current.id)
            .scalar_optional(&mut self.conn().await?)
            .await?;
        Ok(match still_there {
            Some(_) => FederationUpdate::Raced,
            None => FederationUpdate::Gone,
        })
    }

    /// Removes a federation; whether it was there.
    pub async fn delete_federation(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = stmt("DELETE FROM federation WHERE id = ?")
            .bind(id)
            .execute(&mut self.conn().await?)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// `federation` has no `user_id` column: a context without a project sees the rows of no
/// project (Magnum's filter on the missing column fails with a 500).
fn federation_tenancy(tenancy: &Tenancy) -> Tenancy {
    match tenancy {
        Tenancy::User(_) => Tenancy::Project(String::new()),
        other => other.clone(),
    }
}
