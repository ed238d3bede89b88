//! `weiport serve`: opens the store, serves HTTP, shuts down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::http::StatusCode;
use tokio::net::TcpListener;
use weiport_exchange::sequencer::Role;
use weiport_exchange_api::reserves::{ReserveKeeper, Schedule};
use weiport_exchange_api::take_snapshots;
use weiport_storage::Store;

use crate::adapters::{EngineLedger, ExchangeMarkets, WalletFace};
use crate::chains::{ChainRun, IndexerJob, chain_runs, check_chain_ids, start_indexers};
use crate::config::Config;
use crate::telemetry;

/// The data dir's store, with families for every further chain configured.
pub fn open_store(config: &Config) -> anyhow::Result<Store> {
    let mut options = config.storage.options();
    options.further_chains = config.further_chain_ids();
    Store::open(&config.data_dir, &options)
        .with_context(|| format!("cannot open data_dir {}", config.data_dir.display()))
}

/// Keys (secrets opened with the master key), the shared limiter, proxies.
pub fn open_access(config: &Config, store: &Store) -> anyhow::Result<weiport_access::Access> {
    let from_env = std::env::var("WEIPORT_MASTER_KEY").ok();
    let master =
        weiport_access::MasterKey::load(from_env.as_deref(), &config.data_dir.join("master.key"))
            .context("loading the master key")?;
    let limiter = weiport_access::Limiter::new(config.access.limits());
    let keys = weiport_access::KeyStore::open(
        store.clone(),
        master,
        limiter.tiers(),
        config.access.default_tier.clone(),
    )
    .context("loading API keys")?;
    let access = weiport_access::Access::new(
        keys,
        limiter,
        config.access.trusted_proxies(),
        config.server.max_body_bytes,
    );
    let Some(cluster) = config.cluster.config(config.server.listen) else {
        return Ok(access);
    };
    let redis = weiport_access::cluster::Redis::new(cluster).context("cluster.redis_url")?;
    Ok(access.in_cluster(Arc::new(redis)))
}

/// The admin bearer token: from configuration, or kept in `<data_dir>/admin.token`.
pub fn admin_token(config: &Config) -> anyhow::Result<String> {
    if !config.admin.token.is_empty() {
        return Ok(config.admin.token.clone());
    }
    let path = config.data_dir.join("admin.token");
    match std::fs::read_to_string(&path) {
        Ok(token) if !token.trim().is_empty() => {
            // A file made by hand or by an older version may be readable by
            // others: the token is a password, so it is narrowed every start.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("restricting {} to its owner", path.display()))?;
            }
            Ok(token.trim().to_owned())
        }
        _ => {
            let token = weiport_access::keys::random_token();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            use std::io::Write;
            options
                .open(&path)
                .and_then(|mut f| f.write_all(token.as_bytes()))
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(token)
        }
    }
}

/// `weiport index`: indexes every chain in the foreground until `until`,
/// or until SIGINT/SIGTERM.
pub async fn index(config: Config, until: Option<u64>) -> anyhow::Result<()> {
    let mut signals = ShutdownSignals::install()?;
    telemetry::install_metrics()?;
    let store = open_store(&config)?;
    let mut runs = chain_runs(&config, &store)?;
    check_chain_ids(&config, &runs).await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let jobs = start_indexers(&config, &mut runs, until, &stop_rx)?;
    let all = futures::future::join_all(jobs);
    tokio::pin!(all);
    let results = tokio::select! {
        finished = &mut all => finished,
        signal = signals.recv() => {
            tracing::info!(signal, "stopping the indexers");
            let _ = stop_tx.send(true);
            all.await
        }
    };
    for result in results {
        result
            .context("indexer task failed")?
            .map_err(anyhow::Error::msg)
            .context("indexer stopped")?;
    }
    store.flush().context("flushing the database")?;
    Ok(())
}

/// Runs the server until SIGINT or SIGTERM, then drains and closes the store.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let mut signals = ShutdownSignals::install()?;
    let mut server = start(&config).await?;
    tokio::select! {
        signal = signals.recv() => {
            tracing::info!(signal, "shutting down: finishing in-flight requests");
        }
        error = server.failed() => return Err(error),
    }
    server.stop().await
}

/// A server started by [`start`]: what it listens on and holds, and what stops it.
pub struct Server {
    /// The public listener's address.
    pub local: SocketAddr,
    /// The admin listener's address.
    pub admin_local: SocketAddr,
    /// The exchange (engine, history, streams).
    pub exchange: Arc<weiport_exchange_api::Exchange>,
    /// Keys and limits.
    pub access: Arc<weiport_access::Access>,
    store: Store,
    stop_tx: tokio::sync::watch::Sender<bool>,
    servers: tokio::task::JoinSet<std::io::Result<()>>,
    indexer_jobs: Vec<IndexerJob>,
    wallet_jobs: Vec<tokio::task::JoinHandle<()>>,
    grace: Duration,
}

/// Opens the store, starts the indexers (unless disabled), the access
/// layer, the exchange and both listeners.
pub async fn start(config: &Config) -> anyhow::Result<Server> {
    let metrics = telemetry::install_metrics()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let store = open_store(config)?;
    weiport_operator::watch_disk(config.data_dir.clone(), Duration::from_secs(10));
    let (runs, indexer_jobs) = open_chains(config, &store, &stop_rx).await?;
    let access = start_access(config, &store)?;
    let listeners = Listeners::bind(config).await?;
    let started = start_exchange(config, &store, &runs, &access, listeners.local, &stop_rx).await?;
    let operator = operator(&store, &runs, &access, &started, config, metrics);
    let public = operator
        .router()
        .merge(faces(config, &runs, &access, &started)?);
    let admin = admin(config, &store, &access, &started.exchange, &operator)?;
    let (local, admin_local) = (listeners.local, listeners.admin_local);
    let servers = listeners.serve(config, public, admin, &stop_rx);
    // Only now: the addresses were bound early (a taken port fails at once),
    // but a request sent before the command log is replayed would wait in the
    // listen backlog, its timestamp ageing past its recvWindow.
    tracing::info!(listen = %local, admin = %admin_local, data_dir = %config.data_dir.display(), "weiport serving");
    Ok(Server {
        local,
        admin_local,
        exchange: started.exchange,
        access,
        store,
        stop_tx,
        servers,
        indexer_jobs,
        wallet_jobs: started.wallet_jobs,
        grace: Duration::from_secs(config.server.shutdown_grace_secs),
    })
}

/// Every chain with its store, checked against its node, each indexer
/// started (unless indexing is off).
async fn open_chains(
    config: &Config,
    store: &Store,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<(Arc<Vec<ChainRun>>, Vec<IndexerJob>)> {
    let mut runs = chain_runs(config, store)?;
    check_chain_ids(config, &runs).await?;
    let jobs = match config.indexer.enabled {
        true => start_indexers(config, &mut runs, None, stop)?,
        false => Vec::new(),
    };
    Ok((Arc::new(runs), jobs))
}

/// Keys and limits, their housekeeping and (in a cluster) their change feed.
fn start_access(config: &Config, store: &Store) -> anyhow::Result<Arc<weiport_access::Access>> {
    let access = Arc::new(open_access(config, store)?);
    access.spawn_housekeeping(Duration::from_secs(30));
    access.follow_cluster();
    Ok(access)
}

/// Both listeners, bound before anything slow so a taken port fails at once.
struct Listeners {
    public: TcpListener,
    admin: TcpListener,
    local: SocketAddr,
    admin_local: SocketAddr,
}

impl Listeners {
    async fn bind(config: &Config) -> anyhow::Result<Self> {
        let (public, admin) = (config.server.listen, config.admin.listen);
        let public = TcpListener::bind(public)
            .await
            .with_context(|| format!("cannot listen on server.listen = {public}"))?;
        let admin = TcpListener::bind(admin)
            .await
            .with_context(|| format!("cannot listen on admin.listen = {admin}"))?;
        let (local, admin_local) = (public.local_addr()?, admin.local_addr()?);
        Ok(Self {
            public,
            admin,
            local,
            admin_local,
        })
    }

    /// Serves `public` and `admin` until `stop`, with the configured caps
    /// and deadlines.
    fn serve(
        self,
        config: &Config,
        public: Router,
        admin: Router,
        stop: &tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinSet<std::io::Result<()>> {
        let limits = weiport_listener::ConnectionLimits {
            header_read_timeout: Duration::from_secs(config.server.header_read_timeout_secs),
            body_read_timeout: Duration::from_secs(config.server.body_read_timeout_secs),
            keep_alive_idle: Duration::from_secs(config.server.keep_alive_idle_secs),
            max_connections: config.server.max_connections,
            max_connections_per_ip: config.server.max_connections_per_ip,
            uncapped: config.access.trusted_proxies(),
            ipv6_prefix: config.access.ipv6_prefix,
        };
        // Unmatched paths are counted too, as 404s.
        let public = public.fallback_service(weiport_access::telemetry::tracked(
            axum::routing::any(|| async { StatusCode::NOT_FOUND }),
        ));
        let mut servers = tokio::task::JoinSet::new();
        for (listener, app) in [(self.public, public), (self.admin, admin)] {
            servers.spawn(weiport_listener::serve(
                listener,
                app,
                limits.clone(),
                stop.clone(),
            ));
        }
        servers
    }
}

/// The exchange as started: the engine with its read side and streams,
/// this process's part in a cluster, and the wallets at work.
struct StartedExchange {
    exchange: Arc<weiport_exchange_api::Exchange>,
    cluster: Option<Arc<weiport_replication::ClusterStatus>>,
    wallet_jobs: Vec<tokio::task::JoinHandle<()>>,
}

/// Joins the cluster (when replicated), opens the wallets, replays the
/// command log into the engine, plays this process's part and sets the
/// wallets and the ticker pushes going.
async fn start_exchange(
    config: &Config,
    store: &Store,
    runs: &[ChainRun],
    access: &Arc<weiport_access::Access>,
    local: SocketAddr,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<StartedExchange> {
    let catalog = Arc::new(weiport_exchange::Catalog::new(
        config.exchange.markets.clone(),
    ));
    let joined = join_replicated(config, store, local).await?;
    let wallets = open_wallets(config, store, runs, &catalog, joined.as_ref()).await?;
    let role = role_at_start(joined.as_ref());
    let exchange = Arc::new(open_exchange(
        config, store, access, catalog, &wallets, role,
    )?);
    let cluster = joined.map(|joined| play_part(joined, &exchange, access));
    let wallet_jobs = run_wallets(wallets, &exchange, cluster.as_deref(), stop);
    tokio::spawn(weiport_exchange_api::push_tickers(Arc::downgrade(
        &exchange,
    )));
    if config.reserves.enabled {
        let secret = access.keys.reserves_secret();
        let keeper = ReserveKeeper::new(secret, config.exchange.fee_account, config.reserves.keep);
        exchange.keep_reserves(Arc::new(keeper));
        let schedule = Schedule::every(config.reserves.every_secs, config.reserves.every_blocks);
        tokio::spawn(take_snapshots(Arc::downgrade(&exchange), schedule));
    }
    Ok(StartedExchange {
        exchange,
        cluster,
        wallet_jobs,
    })
}

/// Alone, leading through the journal, or following it.
fn role_at_start(joined: Option<&weiport_replication::Joined>) -> Role {
    match joined {
        None => Role::Alone,
        Some(joined) if joined.status.following() => Role::Follows,
        Some(joined) => Role::Leads(Box::new(weiport_replication::JournalReplication::new(
            joined,
            tokio::runtime::Handle::current(),
        ))),
    }
}

/// This process's part in the cluster, played until it stops: the role,
/// forwarding to the primary, and the observer the metrics read.
fn play_part(
    joined: weiport_replication::Joined,
    exchange: &Arc<weiport_exchange_api::Exchange>,
    access: &weiport_access::Access,
) -> Arc<weiport_replication::ClusterStatus> {
    let status = joined.status.clone();
    status.observe(joined.journal.clone(), Duration::from_secs(2));
    let forward =
        weiport_replication::ForwardToPrimary::new(status.clone(), access.keys.cluster_token());
    exchange.link_to_primary(Arc::new(crate::adapters::PrimaryOf(forward)));
    tokio::spawn(weiport_replication::play_role(
        joined.journal,
        exchange.sequencer.clone(),
        status.clone(),
        joined.writer,
    ));
    status
}

/// Each wallet at work: it signs, sweeps and credits only where the
/// exchange is sequenced (always alone, and while leading in a cluster).
fn run_wallets(
    wallets: Vec<Arc<weiport_wallet::Wallet>>,
    exchange: &Arc<weiport_exchange_api::Exchange>,
    cluster: Option<&weiport_replication::ClusterStatus>,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    wallets
        .into_iter()
        .map(|wallet| {
            let ledger = Arc::new(EngineLedger(exchange.sequencer.clone()));
            let leading = match cluster {
                Some(status) => status.leading(),
                None => tokio::sync::watch::channel(true).1,
            };
            tokio::spawn(wallet.run(ledger, leading, stop.clone()))
        })
        .collect()
}

/// The public API faces: Etherscan, Binance (with the cluster's internal
/// routes), CoinGecko; every exchange route answers 503 on a process that
/// does not serve the exchange.
fn faces(
    config: &Config,
    runs: &[ChainRun],
    access: &Arc<weiport_access::Access>,
    started: &StartedExchange,
) -> anyhow::Result<Router> {
    let exchange = &started.exchange;
    let coins = weiport_coingecko_api::CoinTable::new(&exchange.catalog, &config.coingecko)
        .context("the [coingecko] configuration")?;
    let prices =
        weiport_coingecko_api::router(Arc::new(ExchangeMarkets(exchange.clone())), coins, access);
    let mut exchange_app = weiport_exchange_api::router(exchange.clone()).merge(prices);
    if started.cluster.is_some() {
        let token = access.keys.cluster_token();
        exchange_app = exchange_app.merge(weiport_exchange_api::internal_router(
            exchange.clone(),
            token,
        ));
    }
    if !config.exchange.enabled {
        exchange_app = exchange_app.layer(axum::middleware::from_fn(
            weiport_exchange_api::served_elsewhere,
        ));
    }
    Ok(query_face(config, runs, access, exchange)?.merge(exchange_app))
}

/// The Etherscan face over every chain's index and node.
fn query_face(
    config: &Config,
    runs: &[ChainRun],
    access: &Arc<weiport_access::Access>,
    exchange: &Arc<weiport_exchange_api::Exchange>,
) -> anyhow::Result<Router> {
    let mut chains = Vec::new();
    for run in runs {
        let status = run.clone();
        chains.push(weiport_query_api::ChainIndex {
            chain_id: run.chain.id,
            name: run.chain.name.clone(),
            store: run.store.clone(),
            node: Some(Arc::new(crate::adapters::ProxiedNode(
                run.node(config.node.options())?,
            ))),
            status: Arc::new(move || status.chainlist_status()),
        });
    }
    // A process that does not serve the exchange prices nothing.
    let prices = config.exchange.enabled.then(|| {
        Arc::new(crate::adapters::CoinPricesOf {
            exchange: exchange.clone(),
            coin: runs[0].chain.coin.clone(),
        }) as Arc<dyn weiport_query_api::CoinPrices>
    });
    let settings = weiport_query_api::QueryConfig {
        http_200_errors: config.query.http_200_errors,
        prices,
        proxy_cache_entries: config.query.proxy_cache_entries,
        proxy_final_depth: config.query.proxy_final_depth,
    };
    Ok(weiport_query_api::router(chains, access.clone(), settings))
}

/// The operator's endpoints over what this process wired.
fn operator(
    store: &Store,
    runs: &Arc<Vec<ChainRun>>,
    access: &Arc<weiport_access::Access>,
    started: &StartedExchange,
    config: &Config,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
) -> weiport_operator::Operator {
    let figures = crate::adapters::OperatorFigures {
        store: store.clone(),
        chains: runs.clone(),
        exchange: config.exchange.enabled.then(|| started.exchange.clone()),
        cluster: started.cluster.clone(),
        access: access.clone(),
    };
    let build = weiport_operator::Build {
        version: env!("CARGO_PKG_VERSION"),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    };
    weiport_operator::Operator::new(Arc::new(figures), metrics, build)
}

/// The admin listener's routes behind the admin token: keys and accounts,
/// the exchange's admin, backups, the status page and the cluster report.
fn admin(
    config: &Config,
    store: &Store,
    access: &Arc<weiport_access::Access>,
    exchange: &Arc<weiport_exchange_api::Exchange>,
    operator: &weiport_operator::Operator,
) -> anyhow::Result<Router> {
    let mut exchange_admin = weiport_exchange_api::admin_router(exchange.clone());
    if !config.exchange.enabled {
        exchange_admin = exchange_admin.layer(axum::middleware::from_fn(
            weiport_exchange_api::served_elsewhere,
        ));
    }
    let routes = exchange_admin
        .merge(crate::backup::router(store.clone()))
        .merge(operator.admin_router());
    let token = admin_token(config)?;
    Ok(weiport_access::admin::router(
        access.clone(),
        &token,
        routes,
    ))
}

impl Server {
    /// Resolves only if a listener stops on its own, with why.
    pub async fn failed(&mut self) -> anyhow::Error {
        match self.servers.join_next().await {
            Some(Ok(Err(error))) => anyhow::Error::from(error).context("server failed"),
            Some(Err(error)) => anyhow::Error::from(error).context("server task failed"),
            Some(Ok(Ok(()))) => anyhow::anyhow!("a listener stopped unexpectedly"),
            None => std::future::pending().await,
        }
    }

    /// Stops accepting, gives in-flight requests the grace period, stops
    /// the indexer and the engine, and flushes the store.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = self.stop_tx.send(true);
        let grace = self.grace;
        let drained = tokio::time::timeout(grace, async {
            while let Some(finished) = self.servers.join_next().await {
                finished
                    .context("server task failed")?
                    .context("server failed")?;
            }
            anyhow::Ok(())
        })
        .await;
        match drained {
            Ok(result) => result?,
            Err(_) => {
                tracing::warn!(?grace, "grace period over: closing remaining connections");
                self.servers.abort_all();
            }
        }
        self.access.leave_cluster().await;
        for job in self.indexer_jobs {
            let _ = job.await;
        }
        for job in self.wallet_jobs {
            let _ = job.await;
        }
        // The engine thread finishes its queue when the last handle goes.
        drop(self.exchange);
        self.store
            .flush()
            .context("flushing the database on shutdown")?;
        drop(self.store);
        tracing::info!("stopped");
        Ok(())
    }
}

/// Opens the on-chain wallet on every chain (unless disabled, or without
/// the indexers it reads deposits from); each runs once the exchange is open.
async fn open_wallets(
    config: &Config,
    store: &Store,
    runs: &[ChainRun],
    catalog: &weiport_exchange::Catalog,
    cluster: Option<&weiport_replication::Joined>,
) -> anyhow::Result<Vec<Arc<weiport_wallet::Wallet>>> {
    if !config.wallet.enabled || !config.indexer.enabled || !config.exchange.enabled {
        return Ok(Vec::new());
    }
    let from_env = std::env::var("WEIPORT_MASTER_KEY").ok();
    let master =
        weiport_access::MasterKey::load(from_env.as_deref(), &config.data_dir.join("master.key"))
            .context("loading the master key")?;
    if let Some(cluster) = cluster {
        // Every process derives the same deposit addresses: the first
        // seed offered to the journal is everyone's.
        let offered =
            weiport_wallet::Wallet::sealed_seed(store, &master).context("the wallet seed")?;
        let settled = cluster
            .journal
            .settle("wallet-seed", offered.into())
            .await
            .context("settling the cluster's wallet seed")?;
        weiport_wallet::Wallet::adopt_seed(store, &master, &settled)
            .context("adopting the cluster's wallet seed")?;
    }
    let mut wallets = Vec::new();
    for run in runs {
        let chain = &run.chain;
        let settings = config.wallet.config(catalog, chain).with_context(|| {
            format!(
                "the coin {} of chain {} is no asset of the exchange",
                chain.coin, chain.name
            )
        })?;
        let hot = match chain.hot_wallet_key.as_str() {
            "" => None,
            key => Some(
                weiport_wallet::hot_wallet(key)
                    .with_context(|| format!("the hot wallet key of chain {}", chain.name))?,
            ),
        };
        let node = run.node(config.node.options())?;
        let wallet = weiport_wallet::Wallet::open(run.store.clone(), node, &master, hot, settings)
            .context("opening the wallet")?;
        wallets.push(Arc::new(wallet));
    }
    Ok(wallets)
}

/// With `exchange.durability = "replicated"`: the journal opened, this data
/// dir's command log caught up with it, and this process's role (the
/// primary's lease taken, or followed).
async fn join_replicated(
    config: &Config,
    store: &Store,
    local: SocketAddr,
) -> anyhow::Result<Option<weiport_replication::Joined>> {
    use weiport_exchange::Durability;
    if !config.exchange.enabled || config.exchange.durability != Durability::Replicated {
        return Ok(None);
    }
    anyhow::ensure!(
        !config.cluster.nats_urls.is_empty(),
        "exchange.durability = \"replicated\" needs cluster.nats_urls"
    );
    let node = match config.cluster.node_name.as_str() {
        "" => config.server.listen.to_string(),
        name => name.to_owned(),
    };
    let settings = weiport_replication::JoinSettings {
        urls: config.cluster.nats_urls.clone(),
        timeout: Duration::from_millis(config.cluster.timeout_ms.max(1000)),
        writer: format!("{node}-{}", &weiport_access::keys::random_token()[..12]),
        node,
        lease: Duration::from_millis(config.cluster.lease_ms.max(100)),
        address: match config.cluster.advertise_url.as_str() {
            "" => format!("http://{local}"),
            url => url.trim_end_matches('/').to_owned(),
        },
        patience: Duration::from_secs(60),
    };
    let joined = weiport_replication::join_with_retries(&settings, store)
        .await
        .context("joining the replicated exchange (cluster.nats_urls)")?;
    if config.cluster.redis_url.is_empty() {
        // Keys, limits and account ids are shared only through Redis: a
        // second process without it would know none of the first's keys.
        let (primary, _) = joined.status.observed();
        let primary = primary.unwrap_or_default();
        anyhow::ensure!(
            !joined.status.following(),
            "another process ({primary}) leads this replicated exchange, and API keys, limits and account ids are shared only through Redis: set cluster.redis_url (the one {primary} uses)"
        );
        tracing::warn!(
            "cluster.redis_url is not set: this process leads the replicated exchange alone; a process that joins it needs the keys in a shared Redis, so set cluster.redis_url before adding one"
        );
    }
    Ok(Some(joined))
}

/// Replays the exchange's command log and starts its engine thread, the
/// capital endpoints answering from `wallet` when there is one.
fn open_exchange(
    config: &Config,
    store: &Store,
    access: &Arc<weiport_access::Access>,
    catalog: Arc<weiport_exchange::Catalog>,
    wallets: &[Arc<weiport_wallet::Wallet>],
    role: Role,
) -> anyhow::Result<weiport_exchange_api::Exchange> {
    let started = std::time::Instant::now();
    let wallet_faces = wallets
        .iter()
        .map(|wallet| {
            Arc::new(WalletFace::new(wallet.clone())) as Arc<dyn weiport_exchange_api::ChainWallet>
        })
        .collect();
    let exchange = weiport_exchange_api::Exchange::open(
        store.clone(),
        catalog,
        weiport_exchange::sequencer::EngineSettings {
            fee_account: config.exchange.fee_account,
            capacity: config.exchange.queue_capacity,
            snapshot_every: config.exchange.snapshot_every,
        },
        access.clone(),
        wallet_faces,
        role,
    )
    .context("starting the exchange engine")?;
    tracing::info!(
        commands = exchange.sequencer.view().sequence,
        from_snapshot = exchange.sequencer.started_from(),
        elapsed = ?started.elapsed(),
        "exchange state rebuilt from the command log"
    );
    Ok(exchange)
}

/// SIGINT and SIGTERM handlers, installed before the process reports itself
/// ready, so a signal that arrives early is caught rather than fatal.
pub struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    /// Installs both handlers.
    pub fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
            terminate: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
        })
    }

    /// Resolves with the signal's name on SIGINT or SIGTERM.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}
