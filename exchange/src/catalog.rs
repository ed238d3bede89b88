//! The exchange's markets and assets, numbered once at start so the engine
//! and its events refer to them by small integers instead of names.

use rustc_hash::FxHashMap;

use crate::market::Market;

/// A market's number in the [`Catalog`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct MarketId(pub u16);

/// An asset's number in the [`Catalog`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AssetId(pub u16);

/// Markets in configuration order and the assets they trade, in order of
/// first appearance (each market's base, then its quote).
#[derive(Debug, Clone)]
pub struct Catalog {
    markets: Vec<Market>,
    pairs: Vec<(AssetId, AssetId)>,
    assets: Vec<String>,
    // Fixed at start and only looked up afterwards, so a client's names
    // cannot lengthen a probe: an unseeded fast hash serves.
    market_ids: FxHashMap<String, MarketId>,
    asset_ids: FxHashMap<String, AssetId>,
}

impl Catalog {
    /// Numbers `markets` (already validated, symbols unique).
    pub fn new(markets: Vec<Market>) -> Self {
        assert!(markets.len() < usize::from(u16::MAX), "too many markets");
        let mut assets: Vec<String> = Vec::new();
        let mut asset_ids = FxHashMap::default();
        let mut intern = |name: &str| {
            *asset_ids.entry(name.to_owned()).or_insert_with(|| {
                assets.push(name.to_owned());
                AssetId((assets.len() - 1) as u16)
            })
        };
        let pairs = markets
            .iter()
            .map(|m| (intern(&m.base), intern(&m.quote)))
            .collect();
        let market_ids = markets
            .iter()
            .enumerate()
            .map(|(i, m)| (m.symbol.clone(), MarketId(i as u16)))
            .collect();
        Self {
            markets,
            pairs,
            assets,
            market_ids,
            asset_ids,
        }
    }

    /// Every market with its number.
    pub fn markets(&self) -> impl Iterator<Item = (MarketId, &Market)> {
        self.markets
            .iter()
            .enumerate()
            .map(|(i, m)| (MarketId(i as u16), m))
    }

    /// The market numbered `id`.
    pub fn market(&self, id: MarketId) -> Option<&Market> {
        self.markets.get(usize::from(id.0))
    }

    /// The number of the market named `symbol`.
    pub fn market_id(&self, symbol: &str) -> Option<MarketId> {
        self.market_ids.get(symbol).copied()
    }

    /// Base and quote asset of market `id`.
    pub fn pair(&self, id: MarketId) -> Option<(AssetId, AssetId)> {
        self.pairs.get(usize::from(id.0)).copied()
    }

    /// Every asset with its number.
    pub fn assets(&self) -> impl Iterator<Item = (AssetId, &str)> {
        self.assets
            .iter()
            .enumerate()
            .map(|(i, name)| (AssetId(i as u16), name.as_str()))
    }

    /// How many assets there are.
    pub fn asset_count(&self) -> usize {
        self.assets.len()
    }

    /// The name of asset `id` (`"?"` for a number not in the catalog).
    pub fn asset(&self, id: AssetId) -> &str {
        self.assets
            .get(usize::from(id.0))
            .map_or("?", String::as_str)
    }

    /// The number of the asset named `name`.
    pub fn asset_id(&self, name: &str) -> Option<AssetId> {
        self.asset_ids.get(name).copied()
    }

    /// The symbol of market `id` (`"?"` for a number not in the catalog).
    pub fn symbol(&self, id: MarketId) -> &str {
        self.market(id).map_or("?", |m| m.symbol.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::tests_support::{eth_btc, eth_usdt};

    #[test]
    fn markets_and_assets_are_numbered_in_configuration_order() {
        let catalog = Catalog::new(vec![eth_usdt(), eth_btc()]);
        assert_eq!(catalog.market_id("ETHBTC"), Some(MarketId(1)));
        assert_eq!(catalog.market_id("BTCUSDT"), None);
        assert_eq!(
            catalog.assets().map(|(_, name)| name).collect::<Vec<_>>(),
            ["ETH", "USDT", "BTC"]
        );
        assert_eq!(catalog.pair(MarketId(1)), Some((AssetId(0), AssetId(2))));
        assert_eq!(catalog.asset_id("BTC"), Some(AssetId(2)));
        assert_eq!(catalog.symbol(MarketId(0)), "ETHUSDT");
        assert_eq!(catalog.asset(AssetId(9)), "?");
    }
}
