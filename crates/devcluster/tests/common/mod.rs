//! What the devcluster's kubectl-driven test files share: the real `kubectl` pointed at a
//! cluster through a kubeconfig of its own.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use ferroflux_devcluster::RunningCluster;

pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
    _dir: tempfile::TempDir,
}

impl Kubectl {
    pub fn new(c: &RunningCluster) -> Kubectl {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[c], None).unwrap();
        let cache = dir.path().join("cache");
        Kubectl {
            kubeconfig,
            cache,
            _dir: dir,
        }
    }
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
    pub fn ok(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run(args, stdin);
        assert!(
            o.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
    pub fn fails(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run(args, stdin);
        assert!(
            !o.status.success(),
            "kubectl {args:?} should fail: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8(o.stderr).unwrap()
    }
}
