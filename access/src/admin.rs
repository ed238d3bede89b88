//! The admin API: accounts and keys, on its own (loopback) listener, behind
//! a bearer token. JSON in, JSON out; errors are `{"error": "..."}`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;

use crate::{Access, KeyStoreError, NewKey};

struct AdminError(StatusCode, String);

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

impl From<KeyStoreError> for AdminError {
    fn from(error: KeyStoreError) -> Self {
        let status = match error {
            KeyStoreError::UnknownAccount(_) | KeyStoreError::UnknownKey => StatusCode::NOT_FOUND,
            KeyStoreError::Storage(_) | KeyStoreError::Sealing(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            // Refused whole: the cluster's table is where changes must land.
            KeyStoreError::Shared(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self(status, error.to_string())
    }
}

/// Runs a change of the key table off the runtime: in a cluster it waits
/// on Redis (at most `cluster.timeout_ms`), which must not stall requests.
async fn changing<T: Send + 'static>(
    access: Arc<Access>,
    change: impl FnOnce(&Access) -> Result<T, KeyStoreError> + Send + 'static,
) -> Result<T, AdminError> {
    tokio::task::spawn_blocking(move || change(&access))
        .await
        .map_err(|e| AdminError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(AdminError::from)
}

#[derive(Deserialize)]
struct NewAccount {
    #[serde(default)]
    label: String,
}

#[derive(Deserialize)]
struct ListKeys {
    account: Option<u64>,
}

#[derive(Deserialize, Default)]
struct Rotate {
    /// Seconds the old secret keeps working.
    #[serde(default)]
    grace_secs: u64,
}

async fn create_account(
    State(access): State<Arc<Access>>,
    Json(body): Json<NewAccount>,
) -> Result<Response, AdminError> {
    let account = changing(access, move |access| {
        access.keys.create_account(&body.label)
    })
    .await?;
    let body = serde_json::json!({ "id": account.id, "label": account.label, "created_ms": account.created_ms });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn list_accounts(State(access): State<Arc<Access>>) -> Result<Response, AdminError> {
    let accounts: Vec<_> = access
        .keys
        .accounts()?
        .into_iter()
        .map(|a| serde_json::json!({ "id": a.id, "label": a.label, "created_ms": a.created_ms }))
        .collect();
    Ok(Json(accounts).into_response())
}

async fn create_key(
    State(access): State<Arc<Access>>,
    Json(body): Json<NewKey>,
) -> Result<Response, AdminError> {
    let created = changing(access, move |access| access.keys.create_key(body)).await?;
    tracing::info!(key = %created.info.id, account = created.info.account, "API key created");
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

async fn list_keys(State(access): State<Arc<Access>>, Query(query): Query<ListKeys>) -> Response {
    Json(access.keys.list(query.account)).into_response()
}

async fn rotate_key(
    State(access): State<Arc<Access>>,
    Path(id): Path<String>,
    body: Option<Json<Rotate>>,
) -> Result<Response, AdminError> {
    let grace = Duration::from_secs(body.map(|b| b.0).unwrap_or_default().grace_secs);
    let key = id.clone();
    let rotated = changing(access, move |access| access.keys.rotate(&key, grace)).await?;
    tracing::info!(key = %id, ?grace, "API key rotated");
    Ok(Json(rotated).into_response())
}

async fn revoke_key(
    State(access): State<Arc<Access>>,
    Path(id): Path<String>,
) -> Result<Response, AdminError> {
    let key = id.clone();
    let revoked = changing(access, move |access| access.keys.revoke(&key)).await?;
    tracing::info!(key = %id, "API key revoked");
    Ok(Json(revoked).into_response())
}

async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let matches = token_matches(presented, &token);
    if !matches {
        return AdminError(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token".into(),
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether the presented bearer token is the admin token, in time that does
/// not depend on how much of it matches (only on its length).
pub fn token_matches(presented: Option<&str>, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    presented.is_some_and(|p| bool::from(p.as_bytes().ct_eq(token.as_bytes())))
}

/// The admin routes under `/admin`, plus `extra` routes of other parts
/// (the exchange's ledger transfers), all guarded by `token`.
pub fn router(access: Arc<Access>, token: &str, extra: Router) -> Router {
    Router::new()
        .route("/admin/accounts", post(create_account).get(list_accounts))
        .route("/admin/keys", post(create_key).get(list_keys))
        .route("/admin/keys/{id}/rotate", post(rotate_key))
        .route("/admin/keys/{id}/revoke", post(revoke_key))
        .with_state(access)
        .merge(extra)
        .layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_token,
        ))
}
