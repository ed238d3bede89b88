//! `weiport sandbox`: a dev node (anvil, started here unless `--node`), the
//! server on a data dir of its own, test accounts with keys and fictitious
//! funds, a market maker and a trickle of chain transfers; one screen and
//! `<data-dir>/sandbox.json` tell what runs where. SIGINT or SIGTERM stops
//! all of it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use weiport_access::{NewKey, Permission};
use weiport_exchange::engine::Command;
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, Catalog};
use weiport_sandbox::{ChainTraffic, MarketMaker, TakerFlow};

use crate::config::Config;
use crate::serve::{self, Server, ShutdownSignals};

/// `weiport sandbox` options.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// Data directory kept across runs (with the chain's state when anvil
    /// is started here); default: a throw-away one, removed on exit.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// JSON-RPC URL of a node to use instead of starting anvil.
    #[arg(long)]
    node: Option<String>,
    /// Wipe the data dir given with --data-dir first.
    #[arg(long, requires = "data_dir")]
    reset: bool,
    /// Run no market maker (the book stays as clients leave it).
    #[arg(long)]
    no_market_maker: bool,
    /// Test accounts to make on a new data dir (default: `sandbox.accounts`).
    #[arg(long)]
    accounts: Option<u32>,
}

/// What `sandbox.json` holds, and the screen shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Description {
    rest_url: String,
    ws_url: String,
    admin_url: String,
    admin_token_file: PathBuf,
    node_url: String,
    /// The anvil started here, if one was.
    node_pid: Option<u32>,
    data_dir: PathBuf,
    accounts: Vec<TestAccount>,
    read_key: KeyPair,
    market_makers: Vec<MakerAccounts>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TestAccount {
    account: u64,
    api_key: String,
    secret: String,
    permissions: Vec<Permission>,
    balances: std::collections::BTreeMap<String, Amount>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeyPair {
    account: u64,
    api_key: String,
    secret: String,
}

/// One market's built-in accounts, and a read-only key of the maker's to
/// watch it with.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MakerAccounts {
    symbol: String,
    account: u64,
    flow_account: u64,
    read_key: KeyPair,
    min_inventory: Amount,
    max_inventory: Amount,
}

const DESCRIPTION_FILE: &str = "sandbox.json";

/// Runs the sandbox until SIGINT or SIGTERM.
pub async fn run(mut config: Config, args: SandboxArgs) -> anyhow::Result<()> {
    let mut signals = ShutdownSignals::install()?;
    let data = DataDir::prepare(args.data_dir.as_deref(), args.reset)?;
    config.data_dir = data.path.clone();
    // A sandbox stops at once: nothing in flight is worth a long wait.
    config.server.shutdown_grace_secs = config.server.shutdown_grace_secs.min(2);
    check_names(&config)?;

    let mut anvil = match &args.node {
        Some(_) => None,
        None => Some(Anvil::start(&data).await?),
    };
    config.node.url = match (&args.node, &anvil) {
        (Some(url), _) => url.clone(),
        (None, Some(anvil)) => anvil.url.clone(),
        (None, None) => unreachable!("anvil starts when no node is given"),
    };
    let mut server = serve::start(&config).await?;
    let venue = Arc::new(Venue(server.exchange.clone()));
    let description = provision(&config, &server, &venue, &args, &data, anvil.as_ref()).await?;
    write_private(
        &data.path.join(DESCRIPTION_FILE),
        &serde_json::to_vec_pretty(&description)?,
    )?;
    print!("{}", screen(&description, &config, data.kept));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut activity = tokio::task::JoinSet::new();
    if !args.no_market_maker {
        for maker in &description.market_makers {
            let (maker, flow) = traders(&config, &server.exchange.catalog, maker)?;
            activity.spawn(weiport_sandbox::market_maker::run(
                venue.clone(),
                server.exchange.catalog.clone(),
                maker,
                flow,
                config.sandbox.market_maker.clone(),
                stop_rx.clone(),
            ));
        }
    }
    if config.sandbox.chain_transfer_ms > 0 {
        let node = weiport_indexer::NodeClient::new(&config.node.url, config.node.options())?;
        // The hot wallet signs its own transactions: traffic never uses its nonces.
        let reserved: Vec<_> = server
            .exchange
            .wallet
            .as_ref()
            .map(|wallet| wallet.hot_address())
            .into_iter()
            .collect();
        match ChainTraffic::prepare(node, &reserved).await {
            Ok(Some(traffic)) => {
                activity.spawn(weiport_sandbox::chain::run(
                    traffic,
                    Duration::from_millis(config.sandbox.chain_transfer_ms),
                    stop_rx.clone(),
                ));
            }
            Ok(None) => tracing::warn!("the node has no unlocked accounts: no chain transfers"),
            Err(error) => tracing::warn!(%error, "no chain transfers"),
        }
    }

    let outcome = tokio::select! {
        signal = signals.recv() => {
            tracing::info!(signal, "stopping the sandbox");
            Ok(())
        }
        error = server.failed() => Err(error),
        exited = async { match anvil.as_mut() { Some(a) => a.exited().await, None => std::future::pending().await } } => {
            Err(anyhow::anyhow!("anvil stopped on its own ({exited}); see {}", data.path.join("anvil.log").display()))
        }
    };
    let _ = stop_tx.send(true);
    while activity.join_next().await.is_some() {}
    drop(venue);
    server.stop().await?;
    if let Some(anvil) = anvil {
        anvil.stop().await;
    }
    drop(data);
    outcome
}

/// The engine, as the market maker sends to it.
struct Venue(Arc<weiport_exchange_api::Exchange>);

impl AsRef<Sequencer> for Venue {
    fn as_ref(&self) -> &Sequencer {
        &self.0.sequencer
    }
}

/// Every asset and market `[sandbox]` names exists, before anything starts.
fn check_names(config: &Config) -> anyhow::Result<()> {
    let catalog = Catalog::new(config.exchange.markets.clone());
    for asset in config.sandbox.balances.keys() {
        if catalog.asset_id(asset).is_none() {
            bail!("sandbox.balances names {asset}, which no market trades");
        }
    }
    for symbol in config.sandbox.reference_prices.keys() {
        if catalog.market_id(symbol).is_none() {
            bail!("sandbox.reference_prices names {symbol}, which is not a market");
        }
    }
    Ok(())
}

/// The sandbox's data directory: a named one (kept) or a throw-away one
/// (removed when this is dropped).
struct DataDir {
    path: PathBuf,
    kept: bool,
    _throwaway: Option<tempfile::TempDir>,
}

impl DataDir {
    fn prepare(named: Option<&Path>, reset: bool) -> anyhow::Result<Self> {
        let Some(path) = named else {
            let dir = tempfile::Builder::new()
                .prefix("weiport-sandbox-")
                .tempdir()
                .context("cannot make a throw-away data dir")?;
            return Ok(Self {
                path: dir.path().to_owned(),
                kept: false,
                _throwaway: Some(dir),
            });
        };
        if reset && path.exists() {
            // Only what a sandbox made is wiped: a mistyped path must not
            // cost someone a directory.
            let empty = std::fs::read_dir(path)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if !empty && !path.join(DESCRIPTION_FILE).exists() {
                bail!(
                    "refusing to reset {}: it holds no {DESCRIPTION_FILE}, so it is not a sandbox data dir",
                    path.display()
                );
            }
            std::fs::remove_dir_all(path)
                .with_context(|| format!("cannot reset data dir {}", path.display()))?;
        }
        std::fs::create_dir_all(path)
            .and_then(|()| {
                let probe = path.join(".weiport-write-test");
                std::fs::write(&probe, b"")?;
                std::fs::remove_file(probe)
            })
            .with_context(|| format!("data dir {} is not writable", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            kept: true,
            _throwaway: None,
        })
    }
}

/// An anvil process started for the sandbox, on a free loopback port.
struct Anvil {
    child: tokio::process::Child,
    url: String,
    pid: u32,
}

impl Anvil {
    async fn start(data: &DataDir) -> anyhow::Result<Self> {
        let binary = anvil_binary()?;
        let port = free_port()?;
        let log_path = data.path.join("anvil.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("cannot write {}", log_path.display()))?;
        let mut command = tokio::process::Command::new(&binary);
        command
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a terminal's Ctrl-C reaches only
            // weiport, which stops the node after the indexer.
            .process_group(0)
            .kill_on_drop(true);
        if data.kept {
            // A kept data dir keeps its chain too, or the index would
            // describe blocks the next node never had.
            command
                .arg("--state")
                .arg(data.path.join("anvil-state.json"));
        }
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start anvil ({})", binary.display()))?;
        let pid = child.id().unwrap_or(0);
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "anvil exited at start ({status}); see {}",
                    log_path.display()
                );
            }
            let probe = client
                .post(&url)
                .json(
                    &serde_json::json!({"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}),
                )
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if probe.is_ok_and(|r| r.status().is_success()) {
                return Ok(Self { child, url, pid });
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "anvil did not answer on {url} within 30 s; see {}",
                    log_path.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Resolves when the process exits, with its status.
    async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(status) => status.to_string(),
            Err(error) => error.to_string(),
        }
    }

    /// SIGTERM (anvil writes its state and exits), SIGKILL after 5 s.
    async fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.pid) {
            // SAFETY: `kill` only sends a signal; the pid is our own child,
            // not yet reaped (we still hold it), so it names no other process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// `WEIPORT_ANVIL`, else the pinned anvil under `tools/` of the current
/// directory or of the source tree this binary was built from.
fn anvil_binary() -> anyhow::Result<PathBuf> {
    const PINNED: &str = "tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil";
    if let Some(path) = std::env::var_os("WEIPORT_ANVIL") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "WEIPORT_ANVIL = {} is not a file: run scripts/setup.sh (it installs the pinned anvil), or give --node URL",
                path.display()
            );
        }
        return Ok(path);
    }
    let roots = [
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    roots
        .into_iter()
        .flatten()
        .map(|root| root.join(PINNED))
        .find(|candidate| candidate.is_file())
        .with_context(|| {
            format!(
                "anvil is not installed ({PINNED} not found): run `npm ci --prefix tools` or scripts/setup.sh, set WEIPORT_ANVIL, or give --node URL"
            )
        })
}

/// A loopback port nothing listens on now.
fn free_port() -> anyhow::Result<u16> {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").context("no free loopback port")?;
    Ok(probe.local_addr()?.port())
}

/// The accounts and keys of a data dir's earlier run, if they still work;
/// else new ones, funded.
async fn provision(
    config: &Config,
    server: &Server,
    venue: &Venue,
    args: &SandboxArgs,
    data: &DataDir,
    anvil: Option<&Anvil>,
) -> anyhow::Result<Description> {
    let http = |addr: SocketAddr| format!("http://{addr}");
    let here = |mut d: Description| {
        d.rest_url = http(server.local);
        d.ws_url = format!("ws://{}/ws", server.local);
        d.admin_url = http(server.admin_local);
        d.admin_token_file = data.path.join("admin.token");
        d.node_url = config.node.url.clone();
        d.node_pid = anvil.map(|a| a.pid);
        d.data_dir = data.path.clone();
        d
    };
    let earlier = std::fs::read(data.path.join(DESCRIPTION_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Description>(&bytes).ok())
        .filter(|d| {
            let keys = d.accounts.iter().map(|a| &a.api_key);
            keys.chain([&d.read_key.api_key])
                .all(|key| server.access.keys.get(key).is_some())
        });
    if let Some(earlier) = earlier {
        return Ok(here(earlier));
    }

    let keys = &server.access.keys;
    let catalog = &server.exchange.catalog;
    let credit = |account: u64, asset: &str, amount: Amount| {
        let asset = catalog.asset_id(asset);
        async move {
            let asset = asset.context("an asset no market trades")?;
            let outcome = venue
                .0
                .sequencer
                .submit(Command::Credit {
                    account,
                    asset,
                    amount,
                })
                .await?;
            anyhow::ensure!(
                outcome.accepted(),
                "crediting account {account} was refused"
            );
            anyhow::Ok(())
        }
    };
    let key = |account: u64, permissions: Vec<Permission>, label: &str| {
        let created = keys.create_key(NewKey {
            account,
            permissions: permissions.clone(),
            label: label.into(),
            ..NewKey::default()
        })?;
        anyhow::Ok(KeyPair {
            account,
            api_key: created.info.id,
            secret: created.secret.context("an HMAC key has a secret")?,
        })
    };

    let mut accounts = Vec::new();
    for n in 1..=args.accounts.unwrap_or(config.sandbox.accounts).max(1) {
        let account = keys.create_account(&format!("sandbox trader {n}"))?.id;
        let permissions = vec![Permission::Read, Permission::Trade];
        let pair = key(account, permissions.clone(), "sandbox")?;
        for (asset, amount) in &config.sandbox.balances {
            credit(account, asset, *amount).await?;
        }
        accounts.push(TestAccount {
            account,
            api_key: pair.api_key,
            secret: pair.secret,
            permissions,
            balances: config.sandbox.balances.clone(),
        });
    }
    let read_key = key(
        accounts[0].account,
        vec![Permission::Read],
        "sandbox read-only",
    )?;

    let mut market_makers = Vec::new();
    for (symbol, reference) in &config.sandbox.reference_prices {
        let id = catalog.market_id(symbol).context("a market")?;
        let market = catalog.market(id).context("a market")?;
        let settings = &config.sandbox.market_maker;
        let account = keys
            .create_account(&format!("sandbox market maker {symbol}"))?
            .id;
        let flow_account = keys
            .create_account(&format!("sandbox taker flow {symbol}"))?
            .id;
        let maker = MarketMaker::new(account, id, market, *reference, settings);
        credit(account, &market.base, maker.starting_base()).await?;
        credit(account, &market.quote, settings.inventory_quote).await?;
        // The flow holds a hundred of its largest orders on each side.
        let flow_quote = Amount::from_units(settings.flow_quote.units().saturating_mul(100));
        let flow_base = flow_base(flow_quote, *reference);
        credit(flow_account, &market.base, flow_base).await?;
        credit(flow_account, &market.quote, flow_quote).await?;
        market_makers.push(MakerAccounts {
            symbol: symbol.clone(),
            account,
            flow_account,
            read_key: key(account, vec![Permission::Read], "sandbox market maker")?,
            min_inventory: maker.min_inventory,
            max_inventory: maker.max_inventory,
        });
    }
    Ok(here(Description {
        rest_url: String::new(),
        ws_url: String::new(),
        admin_url: String::new(),
        admin_token_file: PathBuf::new(),
        node_url: String::new(),
        node_pid: None,
        data_dir: PathBuf::new(),
        accounts,
        read_key,
        market_makers,
    }))
}

/// The base worth `quote` at `price`.
fn flow_base(quote: Amount, price: Amount) -> Amount {
    let units = u128::from(quote.units()) * 100_000_000 / u128::from(price.units().max(1));
    Amount::from_units(u64::try_from(units).unwrap_or(u64::MAX))
}

/// The maker and flow of one market, as described.
fn traders(
    config: &Config,
    catalog: &Catalog,
    accounts: &MakerAccounts,
) -> anyhow::Result<(MarketMaker, TakerFlow)> {
    let id = catalog
        .market_id(&accounts.symbol)
        .with_context(|| format!("market {} is gone from the configuration", accounts.symbol))?;
    let market = catalog.market(id).context("a market")?;
    let settings = &config.sandbox.market_maker;
    let reference = config
        .sandbox
        .reference_prices
        .get(&accounts.symbol)
        .copied()
        .with_context(|| format!("no sandbox.reference_prices for {}", accounts.symbol))?;
    let mut maker = MarketMaker::new(accounts.account, id, market, reference, settings);
    // A kept data dir keeps the band it was funded for.
    maker.min_inventory = accounts.min_inventory;
    maker.max_inventory = accounts.max_inventory;
    let flow_quote = Amount::from_units(settings.flow_quote.units().saturating_mul(100));
    let flow = TakerFlow::new(
        accounts.flow_account,
        id,
        market,
        flow_base(flow_quote, reference),
        settings,
    );
    Ok((maker, flow))
}

/// Writes `bytes` to `path`, readable by its owner only (it holds secrets).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The one screen a newcomer reads: what runs where, the keys, and
/// examples to paste.
fn screen(d: &Description, config: &Config, kept: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let first = &d.accounts[0];
    let symbol = d.market_makers.first().map_or_else(
        || config.exchange.markets[0].symbol.clone(),
        |m| m.symbol.clone(),
    );
    let price = config
        .sandbox
        .reference_prices
        .get(&symbol)
        .map_or_else(|| "1".to_owned(), |p| plain(*p));
    let node = match d.node_pid {
        Some(pid) => format!("{} (anvil, pid {pid})", d.node_url),
        None => d.node_url.clone(),
    };
    let dir = if kept {
        format!("{} (kept)", d.data_dir.display())
    } else {
        format!("{} (removed on exit)", d.data_dir.display())
    };
    let _ = writeln!(out, "weiport sandbox");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  REST       {}   (Binance /api/v3, Etherscan /api, CoinGecko /api/v3/simple)",
        d.rest_url
    );
    let _ = writeln!(
        out,
        "  WebSocket  {}   (/ws/<stream>, /stream?streams=, /ws-api/v3)",
        d.ws_url
    );
    let _ = writeln!(
        out,
        "  Admin      {}   (bearer token in {})",
        d.admin_url,
        d.admin_token_file.display()
    );
    let _ = writeln!(out, "  Node       {node}");
    let _ = writeln!(out, "  Data dir   {dir}");
    let _ = writeln!(
        out,
        "  Described  {}",
        d.data_dir.join(DESCRIPTION_FILE).display()
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "Test accounts (HMAC keys: API key, then secret)");
    for a in &d.accounts {
        let perms: Vec<String> = a
            .permissions
            .iter()
            .map(|p| format!("{p:?}").to_lowercase())
            .collect();
        let funds: Vec<String> = a
            .balances
            .iter()
            .map(|(k, v)| format!("{} {k}", plain(*v)))
            .collect();
        let _ = writeln!(
            out,
            "  #{:<4} {}  {}  {}  {}",
            a.account,
            a.api_key,
            a.secret,
            perms.join("+"),
            funds.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  read-only key of #{}: {}  {}",
        d.read_key.account, d.read_key.api_key, d.read_key.secret
    );
    for m in &d.market_makers {
        let _ = writeln!(
            out,
            "  market maker on {} (account #{}, taker flow #{}), inventory kept within {}..{}",
            m.symbol,
            m.account,
            m.flow_account,
            plain(m.min_inventory),
            plain(m.max_inventory)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "A signed order with curl and openssl:");
    let _ = writeln!(
        out,
        "  q=\"symbol={symbol}&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price={price}&timestamp=$(date +%s000)\""
    );
    let _ = writeln!(
        out,
        "  sig=$(printf '%s' \"$q\" | openssl dgst -sha256 -hmac '{}' | sed 's/^.* //')",
        first.secret
    );
    let _ = writeln!(
        out,
        "  curl -s -H 'X-MBX-APIKEY: {}' -X POST \"{}/api/v3/order?$q&signature=$sig\"",
        first.api_key, d.rest_url
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "python-binance:");
    let _ = writeln!(out, "  from binance.client import Client");
    let _ = writeln!(
        out,
        "  client = Client('{}', '{}', base_endpoint='', ping=False)",
        first.api_key, first.secret
    );
    let _ = writeln!(out, "  client.API_URL = '{}/api'", d.rest_url);
    let _ = writeln!(
        out,
        "  print(client.get_symbol_ticker(symbol='{symbol}'), client.get_account()['balances'])"
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "ccxt:");
    let _ = writeln!(out, "  import ccxt");
    let _ = writeln!(
        out,
        "  ex = ccxt.binance({{'apiKey': '{}', 'secret': '{}', 'options': {{'fetchMarkets': {{'types': ['spot']}}}}}})",
        first.api_key, first.secret
    );
    let _ = writeln!(
        out,
        "  ex.urls['api'] = {{k: v.replace('https://api.binance.com', '{}') for k, v in ex.urls['api'].items() if isinstance(v, str)}}",
        d.rest_url
    );
    let _ = writeln!(
        out,
        "  print(ex.fetch_ticker('{}'))",
        ccxt_symbol(config, &symbol)
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Etherscan balance (any key works as apikey, read-only included):"
    );
    let _ = writeln!(
        out,
        "  curl -s '{}/api?module=account&action=balance&address=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266&tag=latest&apikey={}'",
        d.rest_url, d.read_key.api_key
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "CoinGecko simple price:");
    let _ = writeln!(
        out,
        "  curl -s '{}/api/v3/simple/price?ids=ethereum&vs_currencies=usd&include_24hr_change=true'",
        d.rest_url
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Trades as they happen:  websocat {}/{}@trade",
        d.ws_url,
        symbol.to_lowercase()
    );
    let _ = writeln!(out, "Ctrl-C stops everything.");
    out
}

/// An amount without trailing zeros: `100`, `0.5`.
fn plain(amount: Amount) -> String {
    let text = amount.to_string();
    match text.split_once('.') {
        Some((whole, fraction)) => match fraction.trim_end_matches('0') {
            "" => whole.to_owned(),
            fraction => format!("{whole}.{fraction}"),
        },
        None => text,
    }
}

/// `ETH/USDT` for `ETHUSDT`.
fn ccxt_symbol(config: &Config, symbol: &str) -> String {
    config
        .exchange
        .markets
        .iter()
        .find(|m| m.symbol == symbol)
        .map_or_else(|| symbol.to_owned(), |m| format!("{}/{}", m.base, m.quote))
}
