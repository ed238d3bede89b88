//! Which CoinGecko ids and vs-currencies name which of our assets.

use std::collections::BTreeMap;

use weiport_exchange::{Amount, Catalog};

/// Well-known CoinGecko ids: (id, asset, name).
const KNOWN_COINS: &[(&str, &str, &str)] = &[
    ("bitcoin", "BTC", "Bitcoin"),
    ("ethereum", "ETH", "Ethereum"),
    ("tether", "USDT", "Tether"),
    ("usd-coin", "USDC", "USDC"),
    ("binancecoin", "BNB", "BNB"),
    ("solana", "SOL", "Solana"),
    ("ripple", "XRP", "XRP"),
    ("cardano", "ADA", "Cardano"),
    ("dogecoin", "DOGE", "Dogecoin"),
    ("tron", "TRX", "TRON"),
    ("polkadot", "DOT", "Polkadot"),
    ("litecoin", "LTC", "Litecoin"),
    ("chainlink", "LINK", "Chainlink"),
    ("avalanche-2", "AVAX", "Avalanche"),
    ("uniswap", "UNI", "Uniswap"),
    ("shiba-inu", "SHIB", "Shiba Inu"),
    ("dai", "DAI", "Dai"),
    ("weth", "WETH", "WETH"),
    ("wrapped-bitcoin", "WBTC", "Wrapped Bitcoin"),
    ("matic-network", "MATIC", "Polygon"),
];

/// CoinGecko vs-currencies and the asset each is priced in.
const KNOWN_VS_CURRENCIES: &[(&str, &str)] = &[
    ("usd", "USDT"),
    ("usdt", "USDT"),
    ("usdc", "USDC"),
    ("btc", "BTC"),
    ("eth", "ETH"),
    ("bnb", "BNB"),
    ("sol", "SOL"),
    ("dai", "DAI"),
];

/// One coin as CoinGecko lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coin {
    /// CoinGecko id (`ethereum`).
    pub id: String,
    /// Our asset (`ETH`).
    pub asset: String,
    /// Display name.
    pub name: String,
    /// Circulating supply, where configured: market caps need it.
    pub supply: Option<Amount>,
}

/// The coins and vs-currencies this server prices: the built-in tables,
/// changed by configuration, kept to assets some market trades.
#[derive(Debug, Clone, Default)]
pub struct CoinTable {
    coins: BTreeMap<String, Coin>,
    vs_currencies: BTreeMap<String, String>,
    /// (platform, contract address in lower case) → coin id.
    contracts: BTreeMap<(String, String), String>,
}

/// Configuration of the price face: extra or replaced ids and
/// vs-currencies (name → asset), and circulating supplies (id → amount).
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoinConfig {
    /// CoinGecko id → asset, added to or replacing the built-in ids.
    pub ids: BTreeMap<String, String>,
    /// vs-currency → asset, added to or replacing the built-in ones.
    pub vs_currencies: BTreeMap<String, String>,
    /// CoinGecko id → circulating supply (a decimal string), for market caps.
    pub supply: BTreeMap<String, String>,
    /// Asset platform (`ethereum`) → token contract address → CoinGecko id,
    /// for `/simple/token_price/{platform}` and `/coins/{platform}/contract/{address}`.
    pub contracts: BTreeMap<String, BTreeMap<String, String>>,
}

/// A configuration entry that names nothing usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCoinConfig(pub String);

impl std::fmt::Display for BadCoinConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadCoinConfig {}

impl CoinTable {
    /// The built-in tables with `config` applied, for the assets of `catalog`.
    pub fn new(catalog: &Catalog, config: &CoinConfig) -> Result<Self, BadCoinConfig> {
        let traded = |asset: &str| catalog.asset_id(asset).is_some();
        let mut coins: BTreeMap<String, Coin> = KNOWN_COINS
            .iter()
            .map(|(id, asset, name)| {
                let coin = Coin {
                    id: (*id).into(),
                    asset: (*asset).into(),
                    name: (*name).into(),
                    supply: None,
                };
                ((*id).to_owned(), coin)
            })
            .collect();
        for (id, asset) in &config.ids {
            let name = asset.clone();
            coins.insert(
                id.clone(),
                Coin {
                    id: id.clone(),
                    asset: asset.clone(),
                    name,
                    supply: None,
                },
            );
        }
        for (id, supply) in &config.supply {
            let coin = coins
                .get_mut(id)
                .ok_or_else(|| BadCoinConfig(format!("supply for unknown coin id {id:?}")))?;
            coin.supply = Some(supply.parse().map_err(|_| {
                BadCoinConfig(format!("supply of {id:?} is not an amount: {supply:?}"))
            })?);
        }
        coins.retain(|_, coin| traded(&coin.asset));
        let mut vs_currencies: BTreeMap<String, String> = KNOWN_VS_CURRENCIES
            .iter()
            .map(|(vs, asset)| ((*vs).to_owned(), (*asset).to_owned()))
            .collect();
        vs_currencies.extend(config.vs_currencies.clone());
        vs_currencies.retain(|_, asset| traded(asset));
        let mut contracts = BTreeMap::new();
        for (platform, tokens) in &config.contracts {
            for (address, id) in tokens {
                let valid = address.len() == 42
                    && address.starts_with("0x")
                    && address[2..].bytes().all(|b| b.is_ascii_hexdigit());
                if !valid {
                    return Err(BadCoinConfig(format!(
                        "contract {address:?} of {platform:?} is not a 20-byte 0x address"
                    )));
                }
                contracts.insert((platform.clone(), address.to_ascii_lowercase()), id.clone());
            }
        }
        Ok(Self {
            coins,
            vs_currencies,
            contracts,
        })
    }

    /// The coin id token contract `address` on `platform` is, if configured.
    pub fn coin_of_contract(&self, platform: &str, address: &str) -> Option<&str> {
        self.contracts
            .get(&(platform.to_owned(), address.to_ascii_lowercase()))
            .map(String::as_str)
    }

    /// Every (platform, contract) coin `id` is a token of.
    pub fn contracts_of(&self, id: &str) -> Vec<(String, String)> {
        self.contracts
            .iter()
            .filter(|(_, coin)| *coin == id)
            .map(|((platform, address), _)| (platform.clone(), address.clone()))
            .collect()
    }

    /// The first coin (by id) whose symbol is `symbol`, in any case.
    pub fn coin_of_symbol(&self, symbol: &str) -> Option<&Coin> {
        self.coins
            .values()
            .find(|c| c.asset.eq_ignore_ascii_case(symbol))
    }

    /// The coin of a CoinGecko id.
    pub fn coin(&self, id: &str) -> Option<&Coin> {
        self.coins.get(id)
    }

    /// Every coin, by id.
    pub fn coins(&self) -> impl Iterator<Item = &Coin> {
        self.coins.values()
    }

    /// The asset a vs-currency (lower case) is priced in.
    pub fn vs_asset(&self, vs: &str) -> Option<&str> {
        self.vs_currencies.get(vs).map(String::as_str)
    }

    /// Every vs-currency.
    pub fn vs_currencies(&self) -> impl Iterator<Item = &str> {
        self.vs_currencies.keys().map(String::as_str)
    }
}
