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
//! # Use from the Kustomization controller (`spec.decryption`)
//!
//! 1. Read the Secret named by `spec.decryption.secretRef` and build the identities from its
//!    `*.agekey` entries: [`AgeIdentities::from_secret_entries`] (an error when it has none).
//! 2. `let d = Decryptor::new(ids).verify_mac(false);` (a build legitimately changes objects).
//! 3. Before the build, for each `secretGenerator`/`configMapGenerator` `files` entry (format
//!    from the key name, [`Format::from_path`]), `envs` entry (format from the path, binary
//!    meaning dotenv) and local `patches` path (format from the path), call
//!    [`Decryptor::decrypt_generator_input`] on the file's bytes and, when it returns
//!    `Some(plain)`, build from `plain` instead (never write it where it could be served).
//! 4. After the build, for each object not annotated `kustomize.toolkit.fluxcd.io/decrypt:
//!    disabled`, call [`Decryptor::decrypt_object`]: it decrypts whole sops objects and sops
//!    files inside Secret `data`, and leaves the object untouched when it fails.
//! 5. Report errors with their `Display`: they name the object (or entry) and the reason, e.g.
//!    the recipients no identity matched, and never contain plaintext.
//!
//! # Output guarantees
//!
//! Decryption keeps every document's key order and value types. Dotenv and binary plaintext comes
//! back byte for byte. JSON comes back as JSON indented with tabs (like sops). YAML comes back as
//! equivalent YAML with this crate's own quoting and indentation, so it is not byte-identical to
//! the file that was encrypted. YAML comments are kept where sops keeps them (before the key they
//! precede, an end-of-line comment moved before its key, or at the end of their mapping) and
//! encrypted with their mapping's path; comments between the plain items of a sequence are not
//! kept ([`unkept_yaml_comments`] counts them so callers can say so).
//!
//! Not supported yet (each a clear `not supported yet: <method>` error): PGP, AWS/GCP/Azure/
//! Huawei KMS, HashiCorp Vault, age post-quantum and plugin recipients, ssh recipients, the INI
//! format, and `encrypted_comment_regex` / `unencrypted_comment_regex`.

mod cipher;
mod comments;
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
pub use format::{Format, unkept_yaml_comments};
pub use keys::AgeIdentities;
pub use metadata::WRITTEN_VERSION;
