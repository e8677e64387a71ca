//! Rebuild when a migration is added or changed: `sqlx::migrate!` embeds the migrations
//! directory at compile time, and cargo does not otherwise see a new file there (sqlx's own
//! advice, `sqlx migrate build-script`).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
