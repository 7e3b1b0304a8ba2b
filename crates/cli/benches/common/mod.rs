//! What the benchmarks `fleet` and `fleetcmds` share: the binary they run, the machine's load
//! average they record beside each figure, and writing a fleet repository's files.

use std::path::{Path, PathBuf};

/// The `ferroflux` binary measured: `FERROFLUX_BIN`, else the release build of the target
/// directory.
pub fn ferroflux_bin() -> PathBuf {
    if let Some(b) = std::env::var_os("FERROFLUX_BIN") {
        return PathBuf::from(b);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("release/ferroflux")
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `text` to `path`, creating its folders.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).unwrap();
    std::fs::write(path, text).unwrap();
}
