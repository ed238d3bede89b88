//! The chains one process follows: each chain's store, node, indexer and
//! readiness, started side by side so one chain's node going away,
//! reorganising or lagging leaves the others as they are.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use weiport_indexer::{Indexer, NodeClient, NodeOptions, Progress};
use weiport_storage::Store;

use crate::config::{Chain, Config};

/// One chain as the process runs it.
#[derive(Clone)]
pub struct ChainRun {
    /// Its configuration, defaults filled in.
    pub chain: Chain,
    /// Its index (the data dir's own families for the first chain).
    pub store: Store,
    /// Its indexer's figures, when the indexer runs.
    pub indexer: Option<IndexerStatus>,
}

/// An indexer as `/readyz` and `chainlist` see it.
#[derive(Clone)]
pub struct IndexerStatus {
    /// Head, indexed block, lag.
    pub progress: Arc<Progress>,
    /// Why it stopped, once it has.
    pub failure: Arc<OnceLock<String>>,
    /// Largest lag still called ready.
    pub ready_max_lag: u64,
}

impl IndexerStatus {
    /// Why the chain is not ready, if it is not.
    pub fn problem(&self) -> Option<String> {
        let progress = &self.progress;
        if let Some(failure) = self.failure.get() {
            Some(format!("indexer stopped: {failure}"))
        } else if let Some(failure) = progress.node_failure() {
            Some(format!("node failing, retrying: {failure}"))
        } else if !progress.is_following() {
            Some("indexer starting".into())
        } else if progress.lag() > self.ready_max_lag {
            Some(format!("index lags the node by {} blocks", progress.lag()))
        } else {
            None
        }
    }
}

impl ChainRun {
    /// Etherscan's chainlist status: 1 ok, 2 degraded (behind or starting), 0 offline.
    pub fn chainlist_status(&self) -> u8 {
        match &self.indexer {
            None => 1,
            Some(status) if status.failure.get().is_some() => 0,
            Some(status) if status.problem().is_some() => 2,
            Some(_) => 1,
        }
    }

    /// Its chain id: configured, or as its index records it.
    pub fn chain_id(&self) -> Option<u64> {
        self.chain
            .id
            .or_else(|| self.store.chain_id().ok().flatten())
    }

    /// A client of its node.
    pub fn node(&self, options: NodeOptions) -> anyhow::Result<NodeClient> {
        NodeClient::new(&self.chain.url, options)
            .with_context(|| format!("the node URL of chain {}", self.chain.name))
    }
}

/// Every configured chain with its store: the first the data dir's own,
/// each further one its own families.
pub fn chain_runs(config: &Config, store: &Store) -> anyhow::Result<Vec<ChainRun>> {
    config
        .chains()
        .into_iter()
        .enumerate()
        .map(|(n, chain)| {
            let store = match (n, chain.id) {
                (0, _) | (_, None) => store.clone(),
                (_, Some(id)) => store
                    .chain(id)
                    .with_context(|| format!("chain {id} has no families in the store"))?,
            };
            Ok(ChainRun {
                chain,
                store,
                indexer: None,
            })
        })
        .collect()
}

/// Refuses to start when a configured chain's node answers another chain
/// id. A node that does not answer within a moment is left to its indexer,
/// which checks the same before it indexes anything.
pub async fn check_chain_ids(config: &Config, runs: &[ChainRun]) -> anyhow::Result<()> {
    let quick = NodeOptions {
        request_timeout: Duration::from_secs(2),
        max_retries: 0,
        ..config.node.options()
    };
    for run in runs {
        let Some(configured) = run.chain.id else {
            continue;
        };
        match run.node(quick.clone())?.chain_id().await {
            Ok(answered) if answered != configured => anyhow::bail!(
                "chain {} ({}) is configured as chain id {configured}, but its node answers chain id {answered}",
                run.chain.name,
                run.chain.url
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(
                chain = configured,
                %error,
                "the chain's node does not answer yet; its indexer checks its chain id once it does"
            ),
        }
    }
    Ok(())
}

/// A chain's indexer at work: why it stopped, if it did.
pub type IndexerJob = tokio::task::JoinHandle<Result<(), String>>;

/// Starts one indexer per chain (`until`: stop at that block); each run gets
/// its status, and the jobs are returned.
pub fn start_indexers(
    config: &Config,
    runs: &mut [ChainRun],
    until: Option<u64>,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Vec<IndexerJob>> {
    let mut jobs = Vec::new();
    for run in runs.iter_mut() {
        let mut settings = run.chain.indexer.config(until);
        settings.chain_id = run.chain.id;
        settings.label = run.chain.label();
        let indexer = Indexer::new(
            run.node(config.node.options())?,
            run.store.clone(),
            settings,
        );
        let status = IndexerStatus {
            progress: indexer.progress(),
            failure: Arc::new(OnceLock::new()),
            ready_max_lag: run.chain.indexer.ready_max_lag,
        };
        let failure = status.failure.clone();
        let stop = stop.clone();
        let label = run.chain.label();
        jobs.push(tokio::spawn(async move {
            indexer.run(stop).await.map_err(|error| {
                tracing::error!(chain = %label, %error, "indexer stopped");
                let _ = failure.set(error.to_string());
                error.to_string()
            })
        }));
        run.indexer = Some(status);
    }
    Ok(jobs)
}
