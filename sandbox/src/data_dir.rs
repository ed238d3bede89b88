//! The sandbox's data directory.

use std::path::{Path, PathBuf};

use crate::DESCRIPTION_FILE;
use crate::error::SandboxError;

/// The sandbox's data directory: a named one (kept) or a throw-away one
/// (removed when this is dropped).
pub(crate) struct DataDir {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Whether it outlives the sandbox.
    pub(crate) kept: bool,
    _throwaway: Option<tempfile::TempDir>,
}

impl DataDir {
    /// `named` (wiped first with `reset`, if a sandbox made it), made and
    /// checked writable; a new throw-away directory without a name.
    pub(crate) fn prepare(named: Option<&Path>, reset: bool) -> Result<Self, SandboxError> {
        let Some(path) = named else {
            let dir = tempfile::Builder::new()
                .prefix("weiport-sandbox-")
                .tempdir()
                .map_err(SandboxError::TempDir)?;
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
                return Err(SandboxError::NotASandbox {
                    path: path.to_owned(),
                    file: DESCRIPTION_FILE,
                });
            }
            std::fs::remove_dir_all(path).map_err(|source| SandboxError::Reset {
                path: path.to_owned(),
                source,
            })?;
        }
        std::fs::create_dir_all(path)
            .and_then(|()| {
                let probe = path.join(".weiport-write-test");
                std::fs::write(&probe, b"")?;
                std::fs::remove_file(probe)
            })
            .map_err(|source| SandboxError::NotWritable {
                path: path.to_owned(),
                source,
            })?;
        Ok(Self {
            path: path.to_owned(),
            kept: true,
            _throwaway: None,
        })
    }
}
