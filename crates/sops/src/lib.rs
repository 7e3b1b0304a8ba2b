//! SOPS for ferroflux: decrypts files written by sops 3.x with age X25519 identities, and
//! encrypts files that sops (and other sops implementations) can decrypt.
//!
//! This crate owns the sops file formats (YAML, JSON, dotenv, binary), the `ENC[AES256_GCM,…]`
//! value envelope, the MAC, key groups with Shamir's secret sharing, the encryption rules
//! (`encrypted_regex`, `encrypted_suffix`, `unencrypted_suffix`, `unencrypted_regex`,
//! `encrypted_comment_regex`, `unencrypted_comment_regex`, `mac_only_encrypted`) and the
//! decryption of Kubernetes objects held as `serde_json::Value` (whole sops documents, and sops
//! files inside Secret `data`).
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
//! the file that was encrypted. YAML comments are kept where sops keeps them (go-yaml v3's
//! placement): in a mapping before the key they precede (an end-of-line comment moved before
//! its key) or at its end; in a sequence before the item they precede or at its end, as
//! items of the sequence. They are encrypted with their holder's path and never hashed into
//! the MAC; encrypted, a sequence comment becomes a string item typed `comment` (as sops writes
//! it) and decrypts back into a comment. Comments before a line that closes several containers
//! go, as go-yaml reads them, the first run to the innermost container and later runs to the
//! container of their column; before encryption, comments ending the mappings around a closing
//! sequence are moved to that sequence's end, which is where sops reads them back from the
//! encrypted file (an encrypted comment ending a sequence is a list item, not a comment line).
//! Only comments inside a flow collection written over several lines are not kept
//! ([`unkept_yaml_comments`] counts them so callers can say so).
//!
//! # Comment markers
//!
//! With `encrypted_comment_regex` a value is encrypted only when an *active comment* matches
//! it; with `unencrypted_comment_regex` it is left clear when one does. The active comments of
//! a value are, for each mapping or sequence from the root down to it, those written since
//! that container's last non-comment item (a marker before a key covers its whole value). A
//! marker matching `encrypted_comment_regex` stays clear (comments after it are encrypted);
//! one matching `unencrypted_comment_regex` stays clear with what follows it, and that regex
//! must never match an encrypted comment (encryption refuses it, as sops does). Decryption
//! decides with the comments as written in the file (ciphertext once encrypted), as sops
//! does, so a removed or added marker changes what is read as encrypted and fails the MAC or
//! the value's decryption. One sops 3.11 defect is not reproduced: when it decrypts, an
//! encrypted sequence comment ends that sequence's active comments, so it cannot decrypt a
//! file where a marker between two list items is followed by another comment. Such files
//! decrypt here (by the rule they were encrypted with), and encryption refuses to write one.
//!
//! Not supported yet (each a clear `not supported yet: <method>` error): PGP, AWS/GCP/Azure/
//! Huawei KMS, HashiCorp Vault, age post-quantum and plugin recipients, ssh recipients and the
//! INI format. Encryption refuses what sops would silently turn into a file other than the one
//! asked for: any selector on a binary file (sops ignores them) and `encrypted_comment_regex` on
//! JSON (no comments, so nothing would be encrypted).

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
