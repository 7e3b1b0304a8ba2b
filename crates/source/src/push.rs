//! Writing back to the remote, for image automation: a commit on top of a fetched one that
//! replaces some files' contents, and a push of it over the same transports the fetch used.
//!
//! gix 0.90 writes objects but cannot push, so the push is ours on gix-transport: the
//! receive-pack handshake (protocol v1: the server advertises its refs), one command per ref,
//! and a pack of the new objects only. The remote has every other object, since the new commit's
//! parent is what was just fetched from it, so the pack needs neither deltas nor thin-pack
//! bases. Fast-forward is checked here, as `git push` does, because receive-pack accepts a
//! rewind unless the server's `receive.denyNonFastForwards` says otherwise.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};

use gix::bstr::ByteSlice;
use gix::objs::Write as _;
use gix::objs::tree::EntryKind;
use gix::protocol::transport::Protocol;
use gix::protocol::transport::client::blocking_io::Transport;
use gix::protocol::transport::client::{MessageKind, WriteMode};

use crate::clean_path;
use crate::error::{Error, Result};
use crate::fetch::{Fetched, GitSource};

/// Who makes a commit, and when.
#[derive(Debug, Clone)]
pub struct Signature {
    /// The name (may be empty, as Flux allows).
    pub name: String,
    /// The e-mail address.
    pub email: String,
    /// Seconds since the epoch (the time zone is always UTC).
    pub time: i64,
}

/// Turns an unsigned commit object into a signed one (see `crates/gitsign`).
pub type CommitSigner<'a> = &'a dyn Fn(&[u8]) -> std::result::Result<Vec<u8>, String>;

/// A commit written into the fetched repository, not yet pushed.
#[derive(Debug, Clone)]
pub struct NewCommit {
    /// The commit's id.
    pub id: gix::ObjectId,
    /// What it was made on (the fetched commit).
    pub parent: gix::ObjectId,
    /// Every object written for it (blobs, trees, the commit): what the remote lacks.
    objects: Vec<gix::ObjectId>,
}

/// One ref a push sets to the new commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    /// The full ref name on the remote (`refs/heads/main`).
    pub name: String,
    /// Overwrite whatever the remote has; otherwise only a ref that is absent or still at the
    /// commit's parent is updated.
    pub force: bool,
}

fn commit_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Commit(format!("{what}: {e}"))
}

impl Fetched {
    /// The regular files below `dir` (relative to the repository root; `""` or `./` for the
    /// root) whose path relative to `dir` `keep` accepts, with their contents. Symlinks and
    /// submodules are left out: a rewrite must never follow a link out of the tree. A `dir`
    /// that does not exist gives no files.
    pub fn files_under(
        &self,
        dir: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let mut tree = self.tree;
        for part in clean_path(dir) {
            let found = self
                .repo
                .find_tree(tree)
                .map_err(|e| commit_err("reading a tree", e))?
                .iter()
                .find_map(|e| {
                    let e = e.ok()?;
                    (e.filename() == part.as_bytes() && e.mode().kind() == EntryKind::Tree)
                        .then(|| e.oid().to_owned())
                });
            match found {
                Some(t) => tree = t,
                None => return Ok(Vec::new()),
            }
        }
        let mut out = Vec::new();
        let mut pending = vec![(String::new(), tree)];
        while let Some((prefix, tree)) = pending.pop() {
            let tree = self
                .repo
                .find_tree(tree)
                .map_err(|e| commit_err("reading a tree", e))?;
            for entry in tree.iter() {
                let entry = entry.map_err(|e| commit_err("decoding a tree", e))?;
                let name = entry.filename().to_str_lossy();
                let path = if prefix.is_empty() {
                    name.into_owned()
                } else {
                    format!("{prefix}/{name}")
                };
                match entry.mode().kind() {
                    EntryKind::Tree => pending.push((path, entry.oid().to_owned())),
                    EntryKind::Blob | EntryKind::BlobExecutable if keep(&path) => {
                        let blob = self
                            .repo
                            .find_object(entry.oid())
                            .map_err(|e| commit_err("reading a file", e))?;
                        out.push((path, blob.data.clone()));
                    }
                    _ => {}
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The fetched commit's object as Git stores it (what its signature covers, with the
    /// signature header in).
    pub fn commit_object(&self) -> Result<Vec<u8>> {
        let id: gix::ObjectId = self
            .resolved
            .commit
            .parse()
            .map_err(|e| commit_err("the fetched commit's id", e))?;
        let object = self
            .repo
            .find_object(id)
            .map_err(|e| commit_err("reading the fetched commit", e))?;
        Ok(object.data.clone())
    }

    /// The annotated tag the checkout went through, when it was a tag: its name, its object's
    /// id and the object as Git stores it. `None` for a lightweight tag or another ref.
    pub fn referencing_tag(&self) -> Option<(String, String, Vec<u8>)> {
        let full = self.resolved.ref_name.as_deref()?;
        let name = full.strip_prefix("refs/tags/")?;
        let reference = self.repo.find_reference(full).ok()?;
        let id = reference.target().try_id()?.to_owned();
        let object = self.repo.find_object(id).ok()?;
        (object.kind == gix::object::Kind::Tag)
            .then(|| (name.to_string(), id.to_string(), object.data.clone()))
    }

    /// Writes a commit on top of the fetched one in which each `(path, contents)` of `files`
    /// (paths relative to the repository root, each an existing regular file) has the new
    /// contents. `None` when the tree comes out unchanged: there is nothing to commit.
    pub fn commit_files(
        &self,
        files: &[(String, Vec<u8>)],
        author: &Signature,
        message: &str,
        sign: Option<CommitSigner<'_>>,
    ) -> Result<Option<NewCommit>> {
        let parent: gix::ObjectId = self
            .resolved
            .commit
            .parse()
            .map_err(|e| commit_err("the fetched commit's id", e))?;
        let mut by_dir: BTreeMap<Vec<String>, Vec<(String, &[u8])>> = BTreeMap::new();
        for (path, contents) in files {
            let mut parts = clean_path(path);
            let Some(name) = parts.pop() else {
                return Err(Error::Commit(format!("'{path}' is not a file path")));
            };
            by_dir
                .entry(parts)
                .or_default()
                .push((name, contents.as_slice()));
        }
        let mut objects = Vec::new();
        let tree = self.rewrite_tree(self.tree, &[], &by_dir, &mut objects)?;
        if tree == self.tree {
            return Ok(None);
        }
        let text = commit_text(tree, parent, author, message);
        let bytes = match sign {
            Some(sign) => sign(&text).map_err(|e| commit_err("signing the commit", e))?,
            None => text,
        };
        let id = self
            .repo
            .objects
            .write_buf(gix::object::Kind::Commit, &bytes)
            .map_err(|e| commit_err("writing the commit", e))?;
        objects.push(id);
        let mut seen = HashSet::new();
        objects.retain(|o| seen.insert(*o));
        Ok(Some(NewCommit {
            id,
            parent,
            objects,
        }))
    }

    /// The tree `tree` (at `dir`) with the files of `changes` below it replaced; writes every
    /// tree and blob that changes and records them in `written`.
    fn rewrite_tree(
        &self,
        tree: gix::ObjectId,
        dir: &[String],
        changes: &BTreeMap<Vec<String>, Vec<(String, &[u8])>>,
        written: &mut Vec<gix::ObjectId>,
    ) -> Result<gix::ObjectId> {
        let found = self
            .repo
            .find_tree(tree)
            .map_err(|e| commit_err("reading a tree", e))?;
        let mut decoded: gix::objs::Tree = found
            .decode()
            .map_err(|e| commit_err("decoding a tree", e))?
            .into();
        let here = changes.get(dir);
        let mut changed = false;
        for (name, contents) in here.into_iter().flatten() {
            let entry = decoded
                .entries
                .iter_mut()
                .find(|e| e.filename == name.as_bytes())
                .filter(|e| e.mode.is_blob())
                .ok_or_else(|| {
                    let mut path = dir.join("/");
                    if !path.is_empty() {
                        path.push('/');
                    }
                    Error::Commit(format!("'{path}{name}' is not a file of the commit"))
                })?;
            let blob = self
                .repo
                .write_blob(contents)
                .map_err(|e| commit_err("writing a file", e))?
                .detach();
            if blob != entry.oid {
                entry.oid = blob;
                written.push(blob);
                changed = true;
            }
        }
        for entry in decoded.entries.iter_mut().filter(|e| e.mode.is_tree()) {
            let mut sub = dir.to_vec();
            sub.push(entry.filename.to_str_lossy().into_owned());
            if !changes.keys().any(|k| k.starts_with(&sub)) {
                continue;
            }
            let new = self.rewrite_tree(entry.oid, &sub, changes, written)?;
            if new != entry.oid {
                entry.oid = new;
                changed = true;
            }
        }
        for wanted in changes.keys() {
            // A directory named by a change must exist: catch it where it is missing.
            if wanted.len() > dir.len()
                && wanted.starts_with(dir)
                && !decoded
                    .entries
                    .iter()
                    .any(|e| e.mode.is_tree() && e.filename == wanted[dir.len()].as_bytes())
            {
                return Err(Error::Commit(format!(
                    "'{}' is not a directory of the commit",
                    wanted[..=dir.len()].join("/")
                )));
            }
        }
        if !changed {
            return Ok(tree);
        }
        let id = self
            .repo
            .write_object(&decoded)
            .map_err(|e| commit_err("writing a tree", e))?
            .detach();
        written.push(id);
        Ok(id)
    }
}

fn commit_text(
    tree: gix::ObjectId,
    parent: gix::ObjectId,
    author: &Signature,
    message: &str,
) -> Vec<u8> {
    let who = format!("{} <{}> {} +0000", author.name, author.email, author.time);
    format!("tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\n\n{message}").into_bytes()
}

/// A pack (version 2, no deltas) holding `objects` of `repo`.
fn pack(repo: &gix::Repository, objects: &[gix::ObjectId]) -> Result<Vec<u8>> {
    use flate2::{Compression, write::ZlibEncoder};
    let mut out = Vec::new();
    out.extend_from_slice(b"PACK");
    out.extend_from_slice(&2u32.to_be_bytes());
    let count =
        u32::try_from(objects.len()).map_err(|_| Error::Commit("too many objects".into()))?;
    out.extend_from_slice(&count.to_be_bytes());
    for id in objects {
        let object = repo
            .find_object(*id)
            .map_err(|e| commit_err("reading an object to push", e))?;
        let kind: u8 = match object.kind {
            gix::object::Kind::Commit => 1,
            gix::object::Kind::Tree => 2,
            gix::object::Kind::Blob => 3,
            gix::object::Kind::Tag => 4,
        };
        // Type and size: 3 bits of type and 4 of size, then 7 bits a byte, lowest first.
        let mut size = object.data.len();
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&object.data)
            .and_then(|_| z.finish())
            .map(|data| out.extend_from_slice(&data))
            .map_err(|e| commit_err("compressing an object", e))?;
    }
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
    hasher.update(&out);
    let digest = hasher
        .try_finalize()
        .map_err(|e| commit_err("hashing the pack", e))?;
    out.extend_from_slice(digest.as_slice());
    Ok(out)
}

/// What the remote answered for one ref.
fn ref_status(line: &str) -> Option<(&str, Option<&str>)> {
    if let Some(name) = line.strip_prefix("ok ") {
        return Some((name, None));
    }
    let rest = line.strip_prefix("ng ")?;
    let (name, reason) = rest.split_once(' ').unwrap_or((rest, "rejected"));
    Some((name, Some(reason)))
}

impl GitSource {
    fn push_err(&self, detail: impl std::fmt::Display) -> Error {
        Error::Push {
            url: self.url.display.clone(),
            detail: self.redact(&detail.to_string()),
        }
    }

    /// Pushes `commit` (written into `fetched` by [`Fetched::commit_files`]) to each ref of
    /// `updates`, sending `options` as push options. Every ref is checked against the remote's
    /// advertisement first; nothing is sent when one would not fast-forward without `force`.
    pub fn push(
        &self,
        fetched: &Fetched,
        commit: &NewCommit,
        updates: &[RefUpdate],
        options: &[String],
    ) -> Result<()> {
        let (mut transport, diag) = self.transport_for(Protocol::V1)?;
        let service = gix::protocol::transport::Service::ReceivePack;
        let (advertised, capabilities) = {
            let response = transport
                .handshake(service, &[])
                .map_err(|e| self.classify(&e, &diag))?;
            let mut advertised = BTreeMap::new();
            if let Some(mut refs) = response.refs {
                let mut line = String::new();
                loop {
                    line.clear();
                    let n = refs
                        .read_line(&mut line)
                        .map_err(|e| self.push_err(format!("reading the remote's refs: {e}")))?;
                    if n == 0 {
                        break;
                    }
                    if let Some((id, name)) = line.trim_end().split_once(' ') {
                        advertised.insert(name.to_string(), id.to_string());
                    }
                }
            }
            let caps: Vec<String> = response
                .capabilities
                .iter()
                .map(|c| c.name().to_str_lossy().into_owned())
                .collect();
            (advertised, caps)
        };
        let zero = gix::ObjectId::null(gix::hash::Kind::Sha1).to_string();
        let parent = commit.parent.to_string();
        let mut commands = Vec::new();
        for update in updates {
            let old = advertised
                .get(&update.name)
                .cloned()
                .unwrap_or(zero.clone());
            if !update.force && old != zero && old != parent {
                return Err(self.push_err(format!(
                    "non-fast-forward update of {}: the remote is at {old}, not at {parent} \
                     where the update was made",
                    update.name
                )));
            }
            commands.push(format!("{old} {} {}", commit.id, update.name));
        }
        let Some(first) = commands.first_mut() else {
            return Ok(());
        };
        let has = |c: &str| capabilities.iter().any(|x| x == c);
        let mut caps = vec!["report-status"];
        if !options.is_empty() {
            if !has("push-options") {
                return Err(self.push_err("the remote does not support push options"));
            }
            caps.push("push-options");
        }
        caps.push("agent=ferroflux");
        first.push('\0');
        first.push_str(&caps.join(" "));
        let pack = pack(&fetched.repo, &commit.objects)?;
        let mut writer = transport
            .request(WriteMode::Binary, MessageKind::Flush, false)
            .map_err(|e| self.classify(&e, &diag))?;
        let io = |e: std::io::Error| self.push_err(format!("sending the update: {e}"));
        for command in &commands {
            writer.write_all(command.as_bytes()).map_err(io)?;
        }
        writer.write_message(MessageKind::Flush).map_err(io)?;
        if !options.is_empty() {
            for option in options {
                writer.write_all(option.as_bytes()).map_err(io)?;
            }
            writer.write_message(MessageKind::Flush).map_err(io)?;
        }
        let (mut raw, mut reader) = writer.into_parts();
        raw.write_all(&pack).map_err(io)?;
        raw.flush().map_err(io)?;
        drop(raw);
        let mut report = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| self.push_err(format!("reading the remote's report: {e}")))?;
            if n == 0 {
                break;
            }
            report.push(line.trim_end().to_string());
        }
        let unpack = report.iter().find_map(|l| l.strip_prefix("unpack "));
        match unpack {
            Some("ok") => {}
            Some(problem) => {
                return Err(self.push_err(format!("the remote could not unpack: {problem}")));
            }
            None => {
                return Err(
                    self.push_err(format!("the remote sent no report ({})", report.join("; ")))
                );
            }
        }
        for update in updates {
            match report
                .iter()
                .find_map(|l| ref_status(l).filter(|s| s.0 == update.name))
            {
                Some((_, None)) => {}
                Some((_, Some(reason))) => {
                    return Err(self.push_err(format!("{} rejected: {reason}", update.name)));
                }
                None => {
                    return Err(
                        self.push_err(format!("the remote did not report on {}", update.name))
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_without_leaving_the_root() {
        assert_eq!(clean_path("./apps//prod/"), ["apps", "prod"]);
        assert_eq!(clean_path("../../etc"), ["etc"]);
        assert!(clean_path("./").is_empty());
        assert_eq!(clean_path("a/../b"), ["b"]);
    }

    #[test]
    fn report_lines_name_the_ref_and_the_reason() {
        assert_eq!(
            ref_status("ok refs/heads/main"),
            Some(("refs/heads/main", None))
        );
        assert_eq!(
            ref_status("ng refs/heads/main non-fast-forward"),
            Some(("refs/heads/main", Some("non-fast-forward")))
        );
        assert_eq!(ref_status("unpack ok"), None);
    }
}
