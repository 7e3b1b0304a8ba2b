//! SOPS for ferroflux: decrypts files written by sops 3.x with age X25519 identities, and
//! encrypts files that sops (and other sops implementations) can decrypt.
//!
//! This crate owns the sops file formats (YAML, JSON, dotenv, binary), the `ENC[AES256_GCM,…]`
//! value envelope, the MAC, key groups with Shamir's secret sharing, the encryption rules
//! (`encrypted_regex`, `encrypted_suffix`, `unencrypted_suffix`, `unencrypted_regex`,
//! `mac_only_encrypted`) and the decryption of Kubernetes objects held as `serde_json::Value`
//! (whole sops documents, and sops files inside Secret `data`).
//!
//! It must not touch the filesystem, the network, the Kubernetes API or any logging: callers
//! read files and key Secrets and pass bytes in. No error message ever contains a decrypted
//! value or a secret key.
//!
//! Not supported yet (each a clear `not supported yet: <method>` error): PGP, AWS/GCP/Azure/
//! Huawei KMS, HashiCorp Vault, age post-quantum and plugin recipients, ssh recipients, the INI
//! format, and `encrypted_comment_regex` / `unencrypted_comment_regex` (which need YAML comments,
//! which this crate does not keep).

mod cipher;
mod decrypt;
mod encrypt;
mod error;
mod format;
mod keys;
mod metadata;
mod shamir;
mod tree;

pub use decrypt::{
    DECRYPT_ANNOTATION, DEFAULT_MAX_SIZE, Decryptor, ObjectDecryption, decryption_disabled,
    is_encrypted_object, object_subject,
};
pub use encrypt::{EncryptOptions, Selection, encrypt};
pub use error::{Error, ErrorKind, Result};
pub use format::Format;
pub use keys::AgeIdentities;
pub use metadata::WRITTEN_VERSION;
