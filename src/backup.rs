//! The admin route that takes a backup inside a running server (`POST
//! /admin/backup`): the server holds the database open, so a backup of a
//! serving data dir is taken there (`weiport backup` calls it).

use std::path::{Path, PathBuf};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use weiport_storage::Store;

/// The files beside the database that its secrets live in: the master key
/// that seals the HMAC secrets and the wallet, and the admin token.
pub fn secret_files(data_dir: &Path) -> Vec<PathBuf> {
    ["master.key", "admin.token"]
        .iter()
        .map(|name| data_dir.join(name))
        .collect()
}

/// `POST /admin/backup` body.
#[derive(Deserialize)]
struct BackupRequest {
    /// An absolute path on the server's machine, missing or empty.
    dir: PathBuf,
    /// Copy the master key and the admin token too.
    #[serde(default)]
    secrets: bool,
}

/// The admin route: a backup of the serving database into a directory of
/// the server's machine.
pub fn router(store: Store) -> Router {
    Router::new()
        .route("/admin/backup", post(take))
        .with_state(store)
}

async fn take(State(store): State<Store>, Json(request): Json<BackupRequest>) -> Response {
    if !request.dir.is_absolute() {
        let error = "dir must be an absolute path on the server's machine";
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
    }
    let secrets = if request.secrets {
        secret_files(store.path())
    } else {
        Vec::new()
    };
    let taken = tokio::task::spawn_blocking(move || store.backup(&request.dir, &secrets)).await;
    match taken {
        Ok(Ok(manifest)) => Json(manifest).into_response(),
        Ok(Err(error)) => {
            let error = error.to_string();
            (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response()
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
