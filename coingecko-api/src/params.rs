//! Query parameters as CoinGecko reads them: leniently, the last of
//! repeated ones winning, empty ones absent.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::Response;

use crate::reply::error;

/// Query parameters by name (the last of repeated ones).
pub(crate) struct Params(BTreeMap<String, String>);

impl Params {
    /// The parameters of `query`.
    pub(crate) fn new(query: Option<&str>) -> Self {
        Self(
            weiport_access::params::lenient_pairs(query.unwrap_or(""))
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect(),
        )
    }

    /// A parameter's value, if there and not empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A parameter that must be there, or the 400 that says it is not.
    pub(crate) fn required(&self, name: &str) -> Result<&str, Box<Response>> {
        self.get(name).ok_or_else(|| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                &format!("Missing parameter {name}"),
            ))
        })
    }

    /// A comma-separated list, trimmed and lower-cased.
    pub(crate) fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a flag is `true`.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }
}
