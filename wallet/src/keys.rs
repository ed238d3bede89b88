//! The wallet's keys: an HD seed (BIP-32, sealed at rest like API secrets)
//! from which every account's deposit address is derived on the BIP-44
//! Ethereum path, and the hot wallet's key that pays withdrawals.

use alloy::signers::local::PrivateKeySigner;
use alloy_primitives::{Address, B256};
use weiport_access::MasterKey;
use weiport_storage::Store;

use crate::WalletError;

/// What a sealed seed is bound to: a sealed API secret cannot pass for it.
const SEED_CONTEXT: &[u8] = b"weiport wallet seed";

/// Bytes of a freshly made seed (BIP-32 allows 16 to 64).
const SEED_LEN: usize = 64;

/// Deposit address keys: `m/44'/60'/0'/0/<account>`.
pub(crate) struct DepositKeys {
    seed: Vec<u8>,
}

impl std::fmt::Debug for DepositKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DepositKeys(…)")
    }
}

impl DepositKeys {
    /// The store's seed opened with `master`, or a new random one sealed
    /// and stored first.
    pub(crate) fn load_or_create(store: &Store, master: &MasterKey) -> Result<Self, WalletError> {
        if let Some(sealed) = store.wallet_seed()? {
            let seed = master.open(&sealed, SEED_CONTEXT).map_err(|_| {
                WalletError::Seed("the stored seed does not open with this master key")
            })?;
            return Ok(Self { seed });
        }
        let mut seed = vec![0u8; SEED_LEN];
        rand::fill(&mut seed[..]);
        store.put_wallet_seed(&master.seal(&seed, SEED_CONTEXT))?;
        Ok(Self { seed })
    }

    /// The store's seed, sealed with `master` as it is stored (made and
    /// stored first if there is none): what this process offers when the
    /// processes of a cluster settle on one seed.
    pub(crate) fn sealed(store: &Store, master: &MasterKey) -> Result<Vec<u8>, WalletError> {
        Self::load_or_create(store, master)?;
        store
            .wallet_seed()?
            .ok_or(WalletError::Seed("the seed was stored and is gone"))
    }

    /// Makes the seed sealed in `settled` (the one every process of a
    /// cluster uses) this store's. A store that derived addresses from
    /// another seed is refused: deposits sent to them would be missed.
    pub(crate) fn adopt(
        store: &Store,
        master: &MasterKey,
        settled: &[u8],
    ) -> Result<(), WalletError> {
        let seed = master.open(settled, SEED_CONTEXT).map_err(|_| {
            WalletError::Seed("the cluster's seed does not open with this master key")
        })?;
        let own = Self::load_or_create(store, master)?;
        if own.seed == seed {
            return Ok(());
        }
        let issued = store.deposit_addresses()?;
        let theirs = Self { seed };
        for (account, address) in issued {
            if theirs.address(account)? != address {
                return Err(WalletError::Seed(
                    "this data dir handed out deposit addresses from a seed other than the cluster's",
                ));
            }
        }
        store.put_wallet_seed(settled)?;
        Ok(())
    }

    /// The signer of `account`'s deposit address.
    pub(crate) fn signer(&self, account: u64) -> Result<PrivateKeySigner, WalletError> {
        let index =
            u32::try_from(account)
                .ok()
                .filter(|i| *i < 1 << 31)
                .ok_or(WalletError::Seed(
                    "account id beyond the BIP-32 index range",
                ))?;
        let path: bip32::DerivationPath = format!("m/44'/60'/0'/0/{index}")
            .parse()
            .map_err(|_| WalletError::Seed("bad derivation path"))?;
        let child = bip32::XPrv::derive_from_path(&self.seed, &path)
            .map_err(|_| WalletError::Seed("derivation failed"))?;
        let bytes = B256::from_slice(&child.private_key().to_bytes());
        PrivateKeySigner::from_bytes(&bytes)
            .map_err(|_| WalletError::Seed("derived key is not a valid secp256k1 key"))
    }

    /// `account`'s deposit address.
    pub(crate) fn address(&self, account: u64) -> Result<Address, WalletError> {
        Ok(self.signer(account)?.address())
    }
}

/// anvil's tenth dev account (index 9 of its default mnemonic): the hot
/// wallet on a dev node when none is configured. Well known, so only ever
/// used on chain id 31337.
pub const DEV_HOT_WALLET_KEY: &str =
    "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6";

/// The chain id of anvil and Hardhat dev nodes.
pub const DEV_CHAIN_ID: u64 = 31337;

/// The hot wallet's signer from a hex private key.
pub fn hot_wallet(key_hex: &str) -> Result<PrivateKeySigner, WalletError> {
    let key: B256 = key_hex
        .trim()
        .parse()
        .map_err(|_| WalletError::Seed("the hot wallet key is not 32 bytes of hex"))?;
    PrivateKeySigner::from_bytes(&key)
        .map_err(|_| WalletError::Seed("the hot wallet key is not a valid secp256k1 key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_is_sealed_kept_and_derives_stable_distinct_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        let master = MasterKey::from_bytes(&[7; 32]);
        let keys = DepositKeys::load_or_create(&store, &master).unwrap();
        let (a, b) = (keys.address(1).unwrap(), keys.address(2).unwrap());
        assert_ne!(a, b);
        let sealed = store.wallet_seed().unwrap().unwrap();
        assert!(
            !sealed
                .windows(16)
                .any(|w| keys.seed.windows(16).any(|s| s == w))
        );
        let again = DepositKeys::load_or_create(&store, &master).unwrap();
        assert_eq!(again.address(1).unwrap(), a);
        let wrong = MasterKey::from_bytes(&[8; 32]);
        assert!(DepositKeys::load_or_create(&store, &wrong).is_err());
        assert!(keys.address(1 << 31).is_err());
    }

    #[test]
    fn a_cluster_settles_on_one_seed_and_a_store_with_other_addresses_is_refused() {
        let master = MasterKey::from_bytes(&[7; 32]);
        let stores: Vec<_> = (0..3)
            .map(|_| {
                let dir = tempfile::tempdir().unwrap();
                (Store::open(dir.path(), &Default::default()).unwrap(), dir)
            })
            .collect();
        let settled = DepositKeys::sealed(&stores[0].0, &master).unwrap();
        DepositKeys::adopt(&stores[1].0, &master, &settled).unwrap();
        let (a, b) = (&stores[0].0, &stores[1].0);
        let derive = |store| {
            DepositKeys::load_or_create(store, &master)
                .unwrap()
                .address(5)
        };
        assert_eq!(derive(a).unwrap(), derive(b).unwrap());

        let other = &stores[2].0;
        let own = DepositKeys::load_or_create(other, &master).unwrap();
        other
            .put_deposit_address(5, &own.address(5).unwrap())
            .unwrap();
        assert!(DepositKeys::adopt(other, &master, &settled).is_err());
        assert_ne!(derive(other).unwrap(), derive(a).unwrap());
    }

    #[test]
    fn a_known_seed_derives_the_standard_path() {
        // The BIP-39 seed of anvil's mnemonic ("test test … junk"): on the
        // standard path it derives anvil's dev accounts 0 and 9, the second
        // being the dev hot wallet.
        let seed = alloy_primitives::hex::decode(
            "9dfc3c64c2f8bede1533b6a79f8570e5943e0b8fd1cf77107adf7b72cef42185\
             d564a3aee24cab43f80e3c4538087d70fc824eabbad596a23c97b6ee8322ccc0",
        )
        .unwrap();
        let keys = DepositKeys { seed };
        let address = |text: &str| text.parse::<Address>().unwrap();
        assert_eq!(
            keys.address(0).unwrap(),
            address("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")
        );
        let dev = hot_wallet(DEV_HOT_WALLET_KEY).unwrap();
        assert_eq!(keys.address(9).unwrap(), dev.address());
        assert_eq!(
            dev.address(),
            address("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720")
        );
    }
}
