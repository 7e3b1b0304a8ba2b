//! A fresh certificate authority per cluster and a serving certificate for the loopback address.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;

/// The PEM of the CA (for kubeconfigs) and the rustls server configuration using it.
pub struct Tls {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub server: Arc<rustls::ServerConfig>,
}

fn cert_err(e: impl std::fmt::Display) -> Error {
    Error::Certificate(e.to_string())
}

pub fn generate(cluster: &str) -> Result<Tls, Error> {
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

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![leaf_cert.der().clone(), ca_cert.der().clone()];
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
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().to_vec(),
        server: Arc::new(server),
    })
}
