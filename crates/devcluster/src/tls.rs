//! The cluster's certificate authority and serving certificate for the loopback address: fresh
//! for a new cluster, or the ones a file-backed cluster saved (see `identity`), so that clients
//! holding its kubeconfig keep trusting it across restarts, as they keep trusting a real API
//! server whose certificates live on disk.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;

/// The certificates and serving key of one cluster, as DER (and the CA as PEM for kubeconfigs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub cert_der: Vec<u8>,
    /// PKCS#8.
    pub key_der: Vec<u8>,
}

/// The PEM of the CA (for kubeconfigs) and the rustls server configuration using it.
pub struct Tls {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub server: Arc<rustls::ServerConfig>,
}

fn cert_err(e: impl std::fmt::Display) -> Error {
    Error::Certificate(e.to_string())
}

/// A new CA for `cluster` and a serving certificate for localhost, 127.0.0.1 and ::1 signed by it.
pub fn generate(cluster: &str) -> Result<Keys, Error> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(
        DnType::CommonName,
        format!("ferroflux devcluster {cluster} CA"),
    );
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(cert_err)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(cert_err)?;
    leaf.distinguished_name.push(
        DnType::CommonName,
        format!("ferroflux devcluster {cluster}"),
    );
    let leaf_key = KeyPair::generate().map_err(cert_err)?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(cert_err)?;
    Ok(Keys {
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().to_vec(),
        cert_der: leaf_cert.der().to_vec(),
        key_der: leaf_key.serialize_der(),
    })
}

/// The rustls server configuration that serves `keys` (HTTP/2 and HTTP/1.1).
pub fn server(keys: &Keys) -> Result<Tls, Error> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(keys.key_der.clone()));
    let chain: Vec<CertificateDer<'static>> = vec![
        CertificateDer::from(keys.cert_der.clone()),
        CertificateDer::from(keys.ca_der.clone()),
    ];
    let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(cert_err)?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(cert_err)?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: keys.ca_pem.clone(),
        ca_der: keys.ca_der.clone(),
        server: Arc::new(server),
    })
}
