//! `weiport keys …` and `weiport accounts …`: through the running server's
//! admin API when one answers, else directly on the data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};
use weiport_access::{KeyKind, NewKey, Permission};

use crate::config::Config;
use crate::serve::{admin_token, open_access};

/// `weiport keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; an HMAC secret is printed this once.
    Create {
        /// Owning account id.
        #[arg(long)]
        account: u64,
        /// Comma-separated: read, trade, withdraw.
        #[arg(long, value_delimiter = ',', default_value = "read")]
        permissions: Vec<String>,
        /// Allowed IP address or CIDR block (repeatable); none = any IP.
        #[arg(long = "ip")]
        ips: Vec<String>,
        /// Label.
        #[arg(long, default_value = "")]
        label: String,
        /// Rate-limit tier (default from configuration).
        #[arg(long)]
        tier: Option<String>,
        /// Register an Ed25519 key from this PEM public key file instead of an HMAC secret.
        #[arg(long)]
        ed25519_public_key: Option<PathBuf>,
    },
    /// List keys (never secrets).
    List {
        /// Only this account's keys.
        #[arg(long)]
        account: Option<u64>,
    },
    /// Give an HMAC key a new secret.
    Rotate {
        /// Key id.
        id: String,
        /// Seconds the old secret keeps working.
        #[arg(long, default_value_t = 0)]
        grace_secs: u64,
    },
    /// Revoke a key.
    Revoke {
        /// Key id.
        id: String,
    },
}

/// `weiport accounts …`.
#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Create an account.
    Create {
        /// Label.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List accounts.
    List,
    /// Credit an account's exchange balance.
    Credit {
        /// Account id.
        id: u64,
        /// Asset, e.g. USDT.
        asset: String,
        /// Amount, e.g. 1000.5.
        amount: String,
    },
}

/// One admin operation, as a method, path and JSON body.
struct Call {
    method: reqwest::Method,
    path: String,
    body: Option<Value>,
}

fn keys_call(command: &KeysCommand) -> anyhow::Result<Call> {
    Ok(match command {
        KeysCommand::Create {
            account,
            permissions,
            ips,
            label,
            tier,
            ed25519_public_key,
        } => {
            let permissions = permissions
                .iter()
                .map(|p| {
                    serde_json::from_value::<Permission>(json!(p.trim()))
                        .with_context(|| format!("unknown permission {p:?}"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let public_key = match ed25519_public_key {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .with_context(|| format!("reading {}", path.display()))?,
                ),
                None => None,
            };
            let kind = if public_key.is_some() {
                KeyKind::Ed25519
            } else {
                KeyKind::Hmac
            };
            let body = json!({
                "account": account, "kind": kind, "public_key": public_key, "permissions": permissions,
                "allowed_ips": ips, "label": label, "tier": tier,
            });
            Call {
                method: reqwest::Method::POST,
                path: "/admin/keys".into(),
                body: Some(body),
            }
        }
        KeysCommand::List { account } => Call {
            method: reqwest::Method::GET,
            path: account.map_or("/admin/keys".into(), |a| format!("/admin/keys?account={a}")),
            body: None,
        },
        KeysCommand::Rotate { id, grace_secs } => Call {
            method: reqwest::Method::POST,
            path: format!("/admin/keys/{id}/rotate"),
            body: Some(json!({ "grace_secs": grace_secs })),
        },
        KeysCommand::Revoke { id } => Call {
            method: reqwest::Method::POST,
            path: format!("/admin/keys/{id}/revoke"),
            body: None,
        },
    })
}

fn accounts_call(command: &AccountsCommand) -> Call {
    match command {
        AccountsCommand::Create { label } => Call {
            method: reqwest::Method::POST,
            path: "/admin/accounts".into(),
            body: Some(json!({ "label": label })),
        },
        AccountsCommand::List => Call {
            method: reqwest::Method::GET,
            path: "/admin/accounts".into(),
            body: None,
        },
        AccountsCommand::Credit { id, asset, amount } => Call {
            method: reqwest::Method::POST,
            path: format!("/admin/accounts/{id}/credit"),
            body: Some(json!({ "asset": asset, "amount": amount })),
        },
    }
}

/// Runs a `keys` command and prints its JSON answer.
pub fn keys(config: &Config, command: KeysCommand) -> anyhow::Result<()> {
    let call = keys_call(&command)?;
    run(config, call, |access| {
        let keys = &access.keys;
        Ok(match command {
            KeysCommand::Create { .. } => {
                let body = keys_call(&command)?.body.expect("create has a body");
                serde_json::to_value(keys.create_key(serde_json::from_value::<NewKey>(body)?)?)?
            }
            KeysCommand::List { account } => serde_json::to_value(keys.list(account))?,
            KeysCommand::Rotate { id, grace_secs } => {
                serde_json::to_value(keys.rotate(&id, Duration::from_secs(grace_secs))?)?
            }
            KeysCommand::Revoke { id } => serde_json::to_value(keys.revoke(&id)?)?,
        })
    })
}

/// Runs an `accounts` command and prints its JSON answer.
pub fn accounts(config: &Config, command: AccountsCommand) -> anyhow::Result<()> {
    run(config, accounts_call(&command), |access| {
        Ok(match command {
            AccountsCommand::Create { label } => {
                let account = access.keys.create_account(&label)?;
                json!({ "id": account.id, "label": account.label, "created_ms": account.created_ms })
            }
            AccountsCommand::List => Value::Array(
                access
                    .keys
                    .accounts()?
                    .into_iter()
                    .map(|a| json!({ "id": a.id, "label": a.label, "created_ms": a.created_ms }))
                    .collect(),
            ),
            AccountsCommand::Credit { .. } => {
                bail!("crediting needs the exchange ledger, which this server does not run")
            }
        })
    })
}

fn run(
    config: &Config,
    call: Call,
    offline: impl FnOnce(&weiport_access::Access) -> anyhow::Result<Value>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let answer = match runtime.block_on(online(config, &call))? {
        Some(answer) => answer,
        None => {
            let store = weiport_storage::Store::open(&config.data_dir, &config.storage.options())
                .with_context(|| {
                format!(
                    "no server answers on {} and data_dir {} cannot be opened",
                    config.admin.listen,
                    config.data_dir.display()
                )
            })?;
            offline(&open_access(config, &store)?)?
        }
    };
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}

/// `None` when no server listens; the server's error otherwise.
async fn online(config: &Config, call: &Call) -> anyhow::Result<Option<Value>> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let url = format!("http://{}{}", config.admin.listen, call.path);
    let mut request = client.request(call.method.clone(), &url);
    if let Some(body) = &call.body {
        request = request.json(body);
    }
    let response = match request.bearer_auth(admin_token(config)?).send().await {
        Ok(response) => response,
        Err(error) if error.is_connect() => return Ok(None),
        Err(error) => return Err(error).context("admin API"),
    };
    let status = response.status();
    let body: Value = response.json().await.context("admin API answer")?;
    if !status.is_success() {
        bail!(
            "admin API refused ({status}): {}",
            body["error"].as_str().unwrap_or("?")
        );
    }
    Ok(Some(body))
}

/// `weiport backup DIR`: through the running server's admin API, or, when
/// none answers, straight from the data dir.
pub fn backup(config: &Config, dir: &Path, secrets: bool) -> anyhow::Result<()> {
    let dir = std::path::absolute(dir).context("the backup directory")?;
    let call = Call {
        method: reqwest::Method::POST,
        path: "/admin/backup".into(),
        body: Some(json!({ "dir": dir, "secrets": secrets })),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let manifest: Value = match runtime.block_on(online(config, &call))? {
        Some(manifest) => manifest,
        None => {
            let store =
                weiport_storage::Store::open(&config.data_dir, &config.storage.options())
                    .with_context(|| format!("opening data_dir {}", config.data_dir.display()))?;
            let files = if secrets {
                crate::backup::secret_files(&config.data_dir)
            } else {
                Vec::new()
            };
            serde_json::to_value(store.backup(&dir, &files)?)?
        }
    };
    println!("{}", serde_json::to_string_pretty(&manifest)?);
    Ok(())
}

/// `weiport restore DIR`: the backup in DIR into the configured data dir,
/// which must be empty or missing.
pub fn restore(config: &Config, dir: &Path) -> anyhow::Result<()> {
    let manifest = weiport_storage::backup::restore(dir, &config.data_dir).with_context(|| {
        format!(
            "restoring {} into {}",
            dir.display(),
            config.data_dir.display()
        )
    })?;
    println!("{}", serde_json::to_string_pretty(&manifest)?);
    Ok(())
}
