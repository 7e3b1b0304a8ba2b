//! What a file-backed cluster keeps next to its database so that it comes back as the same
//! server after a restart or a crash: its address, bearer token, CA and serving certificate.
//! Without it every restart would invalidate the kubeconfigs and the clients already holding
//! them, which a real API server (certificates on disk, a fixed address) never does.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::tls::Keys;

/// One cluster's identity as saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub address: SocketAddr,
    pub token: String,
    pub keys: Keys,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OnDisk {
    address: String,
    token: String,
    ca_pem: String,
    ca_der: String,
    cert_der: String,
    key_der: String,
}

/// `<database>.identity.json`, beside the database (`staging.db` → `staging.identity.json`).
pub fn path_for(database: &Path) -> PathBuf {
    database.with_extension("identity.json")
}

fn corrupt(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        path: path.display().to_string(),
        message: format!(
            "{message} (delete the file to give the cluster a new address, token and CA)"
        ),
    }
}

/// The saved identity, or `None` when the cluster has none yet.
pub fn load(path: &Path) -> Result<Option<Identity>, Error> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(corrupt(path, e)),
    };
    let disk: OnDisk = serde_json::from_slice(&text).map_err(|e| corrupt(path, e))?;
    let der = |field: &str, value: &str| {
        B64.decode(value)
            .map_err(|e| corrupt(path, format!("{field} is not base64: {e}")))
    };
    Ok(Some(Identity {
        address: disk
            .address
            .parse()
            .map_err(|e| corrupt(path, format!("address {:?}: {e}", disk.address)))?,
        token: disk.token,
        keys: Keys {
            ca_pem: disk.ca_pem,
            ca_der: der("caDer", &disk.ca_der)?,
            cert_der: der("certDer", &disk.cert_der)?,
            key_der: der("keyDer", &disk.key_der)?,
        },
    }))
}

/// Writes the identity readable by its owner only (it holds the token and the serving key),
/// through a temporary file renamed over the old one so that a crash never leaves half of it.
pub fn save(path: &Path, identity: &Identity) -> Result<(), Error> {
    let disk = OnDisk {
        address: identity.address.to_string(),
        token: identity.token.clone(),
        ca_pem: identity.keys.ca_pem.clone(),
        ca_der: B64.encode(&identity.keys.ca_der),
        cert_der: B64.encode(&identity.keys.cert_der),
        key_der: B64.encode(&identity.keys.key_der),
    };
    let write_err = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    let text = serde_json::to_vec_pretty(&disk)
        .map_err(|e| write_err(std::io::Error::other(e.to_string())))?;
    let tmp = path.with_extension("json.tmp");
    {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).map_err(write_err)?;
        file.write_all(&text).map_err(write_err)?;
        file.sync_all().map_err(write_err)?;
    }
    std::fs::rename(&tmp, path).map_err(write_err)
}
