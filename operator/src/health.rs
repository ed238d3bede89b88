//! Liveness and readiness.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::Operator;

/// Liveness: the process answers.
pub(crate) async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers a read and every chain's index is close
/// to its node's head (`?chainid=N`: chain N's alone). The first chain's
/// figures stay at the top level; `chains` lists each.
pub(crate) async fn readyz(
    State(operator): State<Operator>,
    RawQuery(query): RawQuery,
) -> Response {
    let wanted = query.as_deref().and_then(|q| {
        weiport_access::params::lenient_value(q, "chainid").map(|id| id.into_owned())
    });
    let (status, body) = readiness(operator.figures.as_ref(), wanted.as_deref());
    (status, Json(body)).into_response()
}

/// `GET /admin/cluster`: this process's role, the primary, how far it applied.
pub(crate) fn cluster_router(operator: Operator) -> axum::Router {
    axum::Router::new()
        .route("/admin/cluster", axum::routing::get(cluster))
        .with_state(operator)
}

async fn cluster(State(operator): State<Operator>) -> Json<Value> {
    Json(cluster_report(operator.figures.as_ref()))
}

fn cluster_report(figures: &dyn crate::Figures) -> Value {
    let applied = figures.commands();
    match figures.cluster() {
        None => serde_json::json!({
            "role": "alone",
            "primary": null,
            "appliedSequence": applied,
        }),
        Some(cluster) => serde_json::json!({
            "node": cluster.node,
            "role": if cluster.leading { "primary" } else { "follower" },
            "primary": cluster.lease_holder,
            "appliedEntry": cluster.applied_entry,
            "appliedSequence": applied,
        }),
    }
}

fn readiness(figures: &dyn crate::Figures, wanted: Option<&str>) -> (StatusCode, Value) {
    let mut body = Map::new();
    let mut problem = None;
    match figures.database() {
        Ok(version) => {
            body.insert("schema_version".into(), version.into());
        }
        Err(error) => problem = Some(format!("database: {error}")),
    }
    let all = figures.chains();
    let mut chains = Vec::new();
    for (n, chain) in all.iter().enumerate() {
        if wanted.is_some_and(|w| chain.id.map(|id| id.to_string()).as_deref() != Some(w)) {
            continue;
        }
        let mut entry = Map::new();
        entry.insert("chainid".into(), chain.id.into());
        entry.insert("name".into(), chain.name.clone().into());
        if let Some(indexer) = &chain.indexer {
            entry.insert("head".into(), indexer.head.into());
            entry.insert("indexed".into(), indexer.indexed.into());
            entry.insert("lag".into(), indexer.lag.into());
            if n == 0 || wanted.is_some() {
                for key in ["head", "indexed", "lag"] {
                    body.insert(key.into(), entry[key].clone());
                }
            }
            if let Some(reason) = &indexer.problem {
                entry.insert("status".into(), "unavailable".into());
                problem.get_or_insert_with(|| match all.len() {
                    1 => reason.clone(),
                    _ => format!("chain {}: {reason}", chain.name),
                });
                entry.insert("reason".into(), reason.clone().into());
            } else {
                entry.insert("status".into(), "ready".into());
            }
        }
        chains.push(Value::Object(entry));
    }
    if wanted.is_some() && chains.is_empty() {
        problem = Some("no such chain".into());
    }
    body.insert("chains".into(), chains.into());
    let status = match problem {
        None => {
            body.insert("status".into(), "ready".into());
            StatusCode::OK
        }
        Some(reason) => {
            body.insert("status".into(), "unavailable".into());
            body.insert("reason".into(), reason.into());
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    (status, Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixed;
    use crate::{ChainFigures, IndexerFigures};

    fn chain(id: u64, name: &str, problem: Option<&str>) -> ChainFigures {
        ChainFigures {
            id: Some(id),
            name: name.into(),
            indexer: Some(IndexerFigures {
                head: 100,
                indexed: 90 + id,
                lag: 10 - id,
                following: true,
                problem: problem.map(str::to_owned),
            }),
        }
    }

    #[test]
    fn a_chain_behind_makes_the_process_unready_and_names_itself() {
        let figures = Fixed {
            chains: vec![chain(1, "One", None), chain(2, "Two", Some("lag 8 blocks"))],
            ..Fixed::default()
        };
        let (status, body) = readiness(&figures, None);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["reason"], "chain Two: lag 8 blocks");
        assert_eq!(body["indexed"], 91, "the first chain's figures on top");
        assert_eq!(body["chains"][1]["status"], "unavailable");

        let (status, body) = readiness(&figures, Some("1"));
        assert_eq!(
            (status, body["status"].clone()),
            (StatusCode::OK, "ready".into())
        );
        assert_eq!(body["chains"].as_array().unwrap().len(), 1);
        let (status, body) = readiness(&figures, Some("7"));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["reason"], "no such chain");
    }

    #[test]
    fn the_cluster_report_names_the_role_and_the_primary() {
        let alone = Fixed::default();
        assert_eq!(
            cluster_report(&alone),
            serde_json::json!({"role": "alone", "primary": null, "appliedSequence": null})
        );
        let following = Fixed {
            cluster: Some(crate::ClusterFigures {
                node: "b".into(),
                leading: false,
                lease_holder: Some("a".into()),
                applied_entry: 7,
                ..crate::ClusterFigures::default()
            }),
            exchange: Some(crate::ExchangeFigures {
                commands: 40,
                ..crate::ExchangeFigures::default()
            }),
            ..Fixed::default()
        };
        assert_eq!(
            cluster_report(&following),
            serde_json::json!({"node": "b", "role": "follower", "primary": "a", "appliedEntry": 7, "appliedSequence": 40})
        );
    }

    #[test]
    fn a_database_that_cannot_be_read_makes_the_process_unready() {
        let figures = Fixed {
            database: Err("closed".into()),
            ..Fixed::default()
        };
        let (status, body) = readiness(&figures, None);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["reason"], "database: closed");
    }
}
