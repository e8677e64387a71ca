//! The route table: every (method, path template) the Magnum router serves, recorded by the
//! same calls that build the router, so the api-ref test reads the router's real table.

use axum::handler::Handler;
use axum::routing::{on, MethodFilter};
use axum::Router;

use crate::state::AppState;

/// One served route: an HTTP method and an axum path template (`/v1/clusters/{ident}`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
}

/// A router under construction together with the table of what it serves.
pub struct Routes {
    router: Router<AppState>,
    table: Vec<Route>,
}

impl Default for Routes {
    fn default() -> Self {
        Routes {
            router: Router::new(),
            table: Vec::new(),
        }
    }
}

macro_rules! method {
    ($name:ident, $filter:ident, $text:literal) => {
        #[doc = concat!("Serves `", $text, " path` with `handler`.")]
        pub fn $name<H, T>(self, path: &'static str, handler: H) -> Self
        where
            H: Handler<T, AppState>,
            T: 'static,
        {
            self.add(MethodFilter::$filter, $text, path, handler)
        }
    };
}

impl Routes {
    method!(get, GET, "GET");
    method!(post, POST, "POST");
    method!(patch, PATCH, "PATCH");
    method!(delete, DELETE, "DELETE");

    /// Serves every method of `path` with `handler` (an error route, such as pecan's 405 for
    /// an action the controller does not have); recorded as `ANY`.
    pub fn any<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, axum::routing::any(handler));
        self.table.push(Route {
            method: "ANY",
            path,
        });
        self
    }

    fn add<H, T>(
        mut self,
        filter: MethodFilter,
        method: &'static str,
        path: &'static str,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        // axum merges the method routers of one path given in several calls.
        self.router = self.router.route(path, on(filter, handler));
        self.table.push(Route { method, path });
        self
    }

    /// Both halves of another table.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.table.extend(other.table);
        self
    }

    pub fn table(&self) -> &[Route] {
        &self.table
    }

    pub fn into_router(self) -> Router<AppState> {
        self.router
    }
}
