//! The sandbox's accounts: test traders with keys and funds, and each
//! market's maker and taker flow, made once on a data dir and found again
//! in its `sandbox.json` on the next run.

use std::net::SocketAddr;
use std::path::PathBuf;

use weiport_access::{KeyStore, NewKey, Permission};
use weiport_exchange::engine::Command;
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, AssetId, Catalog};

use crate::DESCRIPTION_FILE;
use crate::data_dir::DataDir;
use crate::description::{ChainNode, Description, KeyPair, MakerAccounts, TestAccount};
use crate::error::SandboxError;
use crate::input::{SandboxSettings, Server};
use crate::market_maker::{MakerSettings, MarketMaker, TakerFlow};

/// The accounts and keys of a data dir's earlier run, if they still work;
/// else new ones, funded. Either way described as running now: on
/// `server`, over `node_url` (the anvil `node_pid` if started here).
pub(crate) async fn provision<V: AsRef<Sequencer>>(
    settings: &SandboxSettings,
    server: &Server<'_, V>,
    data: &DataDir,
    node_url: &str,
    node_pid: Option<u32>,
    chains: &[ChainNode],
) -> Result<Description, SandboxError> {
    let http = |addr: SocketAddr| format!("http://{addr}");
    let here = |mut d: Description| {
        d.rest_url = http(server.rest);
        d.ws_url = format!("ws://{}/ws", server.rest);
        d.admin_url = http(server.admin);
        d.admin_token_file = server.admin_token_file.clone();
        d.node_url = node_url.to_owned();
        d.node_pid = node_pid;
        d.chains = chains.to_vec();
        d.data_dir = data.path.clone();
        d
    };
    let earlier = Description::read(&data.path.join(DESCRIPTION_FILE)).filter(|d| {
        let keys = d.accounts.iter().map(|a| &a.api_key);
        keys.chain([&d.read_key.api_key])
            .all(|key| server.keys.get(key).is_some())
    });
    if let Some(earlier) = earlier {
        return Ok(here(earlier));
    }

    let keys = server.keys;
    let catalog = &settings.catalog;
    let sequencer: &Sequencer = (*server.venue).as_ref();
    // Every asset credited is a configured balance's (checked at prepare)
    // or a market's own.
    let asset = |name: &str| {
        catalog
            .asset_id(name)
            .expect("every credited asset is traded by a market")
    };

    let mut accounts = Vec::new();
    for n in 1..=settings.accounts.max(1) {
        let account = keys.create_account(&format!("sandbox trader {n}"))?.id;
        let permissions = vec![Permission::Read, Permission::Trade];
        let pair = key(keys, account, permissions.clone(), "sandbox")?;
        for (name, amount) in &settings.balances {
            credit(sequencer, account, asset(name), *amount).await?;
        }
        accounts.push(TestAccount {
            account,
            api_key: pair.api_key,
            secret: pair.secret,
            permissions,
            balances: settings.balances.clone(),
        });
    }
    let read_key = key(
        keys,
        accounts[0].account,
        vec![Permission::Read],
        "sandbox read-only",
    )?;

    let mut market_makers = Vec::new();
    for (symbol, reference) in &settings.reference_prices {
        let id = catalog
            .market_id(symbol)
            .expect("reference prices name markets (checked at prepare)");
        let market = catalog.market(id).expect("a market's id names it");
        let maker_settings = &settings.market_maker;
        let account = keys
            .create_account(&format!("sandbox market maker {symbol}"))?
            .id;
        let flow_account = keys
            .create_account(&format!("sandbox taker flow {symbol}"))?
            .id;
        let maker = MarketMaker::new(account, id, market, *reference, maker_settings);
        credit(
            sequencer,
            account,
            asset(&market.base),
            maker.starting_base(),
        )
        .await?;
        credit(
            sequencer,
            account,
            asset(&market.quote),
            maker_settings.inventory_quote,
        )
        .await?;
        let flow_base = flow_base(maker_settings, *reference);
        credit(sequencer, flow_account, asset(&market.base), flow_base).await?;
        credit(
            sequencer,
            flow_account,
            asset(&market.quote),
            flow_quote(maker_settings),
        )
        .await?;
        market_makers.push(MakerAccounts {
            symbol: symbol.clone(),
            account,
            flow_account,
            read_key: key(
                keys,
                account,
                vec![Permission::Read],
                "sandbox market maker",
            )?,
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
        chains: Vec::new(),
        data_dir: PathBuf::new(),
        accounts,
        read_key,
        market_makers,
    }))
}

/// The maker and flow of one market, as described.
pub(crate) fn traders(
    settings: &SandboxSettings,
    catalog: &Catalog,
    accounts: &MakerAccounts,
) -> Result<(MarketMaker, TakerFlow), SandboxError> {
    let id = catalog
        .market_id(&accounts.symbol)
        .ok_or_else(|| SandboxError::MarketGone(accounts.symbol.clone()))?;
    let market = catalog.market(id).expect("a market's id names it");
    let reference = settings
        .reference_prices
        .get(&accounts.symbol)
        .copied()
        .ok_or_else(|| SandboxError::NoReferencePrice(accounts.symbol.clone()))?;
    let mut maker = MarketMaker::new(
        accounts.account,
        id,
        market,
        reference,
        &settings.market_maker,
    );
    // A kept data dir keeps the band it was funded for.
    maker.min_inventory = accounts.min_inventory;
    maker.max_inventory = accounts.max_inventory;
    let flow = TakerFlow::new(
        accounts.flow_account,
        id,
        market,
        flow_base(&settings.market_maker, reference),
        &settings.market_maker,
    );
    Ok((maker, flow))
}

/// Credits `amount` of `asset` to `account` through the engine.
async fn credit(
    sequencer: &Sequencer,
    account: u64,
    asset: AssetId,
    amount: Amount,
) -> Result<(), SandboxError> {
    let outcome = sequencer
        .submit(Command::Credit {
            account,
            asset,
            amount,
        })
        .await?;
    if !outcome.accepted() {
        return Err(SandboxError::CreditRefused(account));
    }
    Ok(())
}

/// A new HMAC key of `account`'s.
fn key(
    keys: &KeyStore,
    account: u64,
    permissions: Vec<Permission>,
    label: &str,
) -> Result<KeyPair, SandboxError> {
    let created = keys.create_key(NewKey {
        account,
        permissions,
        label: label.into(),
        ..NewKey::default()
    })?;
    Ok(KeyPair {
        account,
        api_key: created.info.id,
        secret: created.secret.expect("an HMAC key has a secret"),
    })
}

/// The quote a taker flow holds: a hundred of its largest orders.
fn flow_quote(settings: &MakerSettings) -> Amount {
    Amount::from_units(settings.flow_quote.units().saturating_mul(100))
}

/// The base a taker flow holds: its quote's worth at `price`, so it can
/// sell as much as it buys.
fn flow_base(settings: &MakerSettings, price: Amount) -> Amount {
    let quote = flow_quote(settings);
    let units = u128::from(quote.units()) * 100_000_000 / u128::from(price.units().max(1));
    Amount::from_units(u64::try_from(units).unwrap_or(u64::MAX))
}
