//! `ferroflux sops encrypt|decrypt`: manage sops-encrypted files with age keys, without the sops
//! binary. Output goes to stdout, like `sops encrypt` / `sops decrypt`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use ferroflux_sops::{AgeIdentities, Decryptor, EncryptOptions, Format, Selection};

/// Arguments of `ferroflux sops`.
#[derive(Args)]
pub struct SopsArgs {
    #[command(subcommand)]
    command: SopsCommand,
}

#[derive(Subcommand)]
enum SopsCommand {
    /// Encrypt a file for age recipients and print the sops-encrypted file.
    Encrypt(EncryptArgs),
    /// Decrypt a sops-encrypted file with age keys and print the plaintext (MAC verified).
    Decrypt(DecryptArgs),
}

#[derive(Args)]
struct EncryptArgs {
    /// age recipient (age1…) to encrypt for; repeat or separate with commas for several.
    #[arg(
        long = "age",
        value_name = "RECIPIENT",
        required = true,
        value_delimiter = ','
    )]
    age: Vec<String>,
    /// Format of the input: yaml, json, dotenv or binary (default: from the file extension).
    #[arg(long, value_name = "FORMAT")]
    input_type: Option<String>,
    /// Encrypt only values under keys matching this regex.
    #[arg(long, value_name = "REGEX")]
    encrypted_regex: Option<String>,
    /// Leave values under keys matching this regex in clear.
    #[arg(long, value_name = "REGEX")]
    unencrypted_regex: Option<String>,
    /// Encrypt only values under keys ending with this suffix.
    #[arg(long, value_name = "SUFFIX")]
    encrypted_suffix: Option<String>,
    /// Leave values under keys ending with this suffix in clear (default: _unencrypted).
    #[arg(long, value_name = "SUFFIX")]
    unencrypted_suffix: Option<String>,
    /// Encrypt only the key (with its whole value) or list item that follows a comment
    /// matching this regex (YAML, dotenv); the matching comment stays readable.
    #[arg(long, value_name = "REGEX")]
    encrypted_comment_regex: Option<String>,
    /// Leave in clear the key (with its whole value) or list item that follows a comment
    /// matching this regex (YAML, dotenv); everything else is encrypted.
    #[arg(long, value_name = "REGEX")]
    unencrypted_comment_regex: Option<String>,
    /// Hash only the encrypted values into the MAC.
    #[arg(long)]
    mac_only_encrypted: bool,
    /// The plaintext file.
    file: PathBuf,
}

#[derive(Args)]
struct DecryptArgs {
    /// age key file (lines of AGE-SECRET-KEY-1…); repeatable. SOPS_AGE_KEY_FILE, SOPS_AGE_KEY
    /// and ~/.config/sops/age/keys.txt are read too, as sops does.
    #[arg(long, value_name = "FILE")]
    age_key_file: Vec<PathBuf>,
    /// Format of the input: yaml, json, dotenv or binary (default: from the file extension).
    #[arg(long, value_name = "FORMAT")]
    input_type: Option<String>,
    /// Format of the output (default: the input format).
    #[arg(long, value_name = "FORMAT")]
    output_type: Option<String>,
    /// Do not verify the MAC (the file may have been changed after encryption).
    #[arg(long)]
    ignore_mac: bool,
    /// The sops-encrypted file.
    file: PathBuf,
}

/// Runs `ferroflux sops …`.
pub fn run(args: SopsArgs) -> anyhow::Result<ExitCode> {
    let out = match args.command {
        SopsCommand::Encrypt(a) => encrypt(a)?,
        SopsCommand::Decrypt(a) => decrypt(a)?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out).context("writing to stdout")?;
    stdout.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn format_for(path: &Path, name: Option<&str>) -> anyhow::Result<Format> {
    match name {
        Some(n) => Ok(Format::from_name(n).map_err(|e| anyhow::anyhow!("--input-type: {e}"))?),
        None => Ok(Format::from_path(&path.to_string_lossy())),
    }
}

/// Reads a file after checking its size, so an oversized file is refused without reading it.
fn read_limited(path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).with_context(|| format!("reading {shown}"))?;
    if meta.len() > limit {
        bail!(
            "{shown}: file is {} bytes, above the limit of {limit} bytes for sops files",
            meta.len()
        );
    }
    std::fs::read(path).with_context(|| format!("reading {shown}"))
}

fn encrypt(a: EncryptArgs) -> anyhow::Result<Vec<u8>> {
    let format = format_for(&a.file, a.input_type.as_deref())?;
    let data = read_limited(&a.file, ferroflux_sops::DEFAULT_MAX_SIZE)?;
    if format == Format::Yaml {
        warn_unkept_comments(
            &a.file,
            &data,
            "not kept in the encrypted file (the others are kept where sops keeps them)",
        );
    }
    let options = EncryptOptions {
        selection: Selection {
            unencrypted_suffix: a.unencrypted_suffix,
            encrypted_suffix: a.encrypted_suffix,
            unencrypted_regex: a.unencrypted_regex,
            encrypted_regex: a.encrypted_regex,
            unencrypted_comment_regex: a.unencrypted_comment_regex,
            encrypted_comment_regex: a.encrypted_comment_regex,
            mac_only_encrypted: a.mac_only_encrypted,
        },
        ..EncryptOptions::for_recipients(a.age)
    };
    Ok(ferroflux_sops::encrypt(
        &a.file.display().to_string(),
        &data,
        format,
        &options,
    )?)
}

/// Collects identities from the places sops reads them: explicit key files, `SOPS_AGE_KEY_FILE`,
/// `SOPS_AGE_KEY`, then the user's sops key file if it exists.
fn load_identities(files: &[PathBuf]) -> anyhow::Result<AgeIdentities> {
    let mut ids = AgeIdentities::new();
    let add_file = |ids: &mut AgeIdentities, path: &Path, origin: &str| -> anyhow::Result<()> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading age key file {shown} ({origin})"))?;
        ids.add(&shown, &text)?;
        Ok(())
    };
    for f in files {
        add_file(&mut ids, f, "--age-key-file")?;
    }
    if let Some(f) = std::env::var_os("SOPS_AGE_KEY_FILE").filter(|v| !v.is_empty()) {
        add_file(&mut ids, Path::new(&f), "SOPS_AGE_KEY_FILE")?;
    }
    if let Ok(key) = std::env::var("SOPS_AGE_KEY")
        && !key.is_empty()
    {
        ids.add("SOPS_AGE_KEY", &key)?;
    }
    let config_dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(dir) = config_dir {
        let default = dir.join("sops/age/keys.txt");
        if default.is_file() {
            add_file(&mut ids, &default, "default sops key file")?;
        }
    }
    Ok(ids)
}

fn decrypt(a: DecryptArgs) -> anyhow::Result<Vec<u8>> {
    let input = format_for(&a.file, a.input_type.as_deref())?;
    let output = match a.output_type.as_deref() {
        Some(n) => Format::from_name(n).map_err(|e| anyhow::anyhow!("--output-type: {e}"))?,
        None => input,
    };
    let ids = load_identities(&a.age_key_file)?;
    let no_keys = ids.is_empty();
    let decryptor = Decryptor::new(ids).verify_mac(!a.ignore_mac);
    let data = read_limited(&a.file, decryptor.size_limit())?;
    if input == Format::Yaml {
        warn_unkept_comments(
            &a.file,
            &data,
            "left out of the output (the values and other comments are all there)",
        );
    }
    let result = decryptor.decrypt_as(&a.file.display().to_string(), &data, input, output);
    match result {
        Ok(plain) => {
            if matches!(output, Format::Yaml | Format::Dotenv) {
                warn_undecrypted_comments(&a.file, &plain);
            }
            Ok(plain)
        }
        Err(e) if no_keys => Err(anyhow::Error::new(e).context(
            "no age key given: pass --age-key-file FILE, or set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Comments are outside the MAC and one that does not decrypt is kept as written (files from
/// old sops versions hold clear comments; sops 3.11 itself writes some it cannot read back, such
/// as one ending a mapping after a nested one at the end of a file): says so, as sops does.
fn warn_undecrypted_comments(file: &Path, plain: &[u8]) {
    let count = String::from_utf8_lossy(plain)
        .lines()
        .filter(|l| l.trim_start().starts_with("#ENC[AES256_GCM,"))
        .count();
    if count > 0 {
        eprintln!(
            "warning: {}: {count} comment(s) did not decrypt and are left as written",
            file.display()
        );
    }
}

/// Says on stderr how many YAML comments of `data` cannot be kept, and what becomes of them.
fn warn_unkept_comments(file: &Path, data: &[u8], fate: &str) {
    let comments = ferroflux_sops::unkept_yaml_comments(data);
    if comments > 0 {
        eprintln!(
            "warning: {}: {comments} YAML comment(s) have no mapping or list to hold them (inside a flow collection written over several lines) and are {fate}",
            file.display()
        );
    }
}
