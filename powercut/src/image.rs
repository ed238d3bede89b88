//! The filesystem's two images: what the processes see (`live`) and what
//! would be found on the disk after the power went (`durable`), and the
//! rules that move the first into the second.
//!
//! The rules are those of a journaling filesystem such as ext4 or XFS:
//! - names, directories, links, renames, modes and truncations are metadata,
//!   journaled in order and committed all together by any `fsync` or
//!   `fdatasync` (of a file or a directory): after a commit the durable
//!   namespace is the live one;
//! - a file's contents are durable only once that file itself is synced (or
//!   written through a descriptor opened with `O_SYNC`/`O_DSYNC`): syncing
//!   one file never saves another's data.
//!
//! A power cut makes the durable image the live one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

/// The root directory's inode number, as FUSE names it.
pub(crate) const ROOT: u64 = 1;

/// Why an operation was refused, as an errno.
pub(crate) type Errno = i32;

/// What kind of node an inode is, with what only that kind holds.
#[derive(Clone, Debug)]
pub(crate) enum Content {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A directory's entries, by name.
    Directory(BTreeMap<OsString, u64>),
    /// A symbolic link's target.
    Symlink(OsString),
}

/// One inode.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) content: Content,
    pub(crate) perm: u16,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) nlink: u32,
    pub(crate) atime: SystemTime,
    pub(crate) mtime: SystemTime,
    pub(crate) ctime: SystemTime,
}

impl Node {
    fn new(content: Content, perm: u16, uid: u32, gid: u32) -> Self {
        let now = SystemTime::now();
        let nlink = if matches!(content, Content::Directory(_)) {
            2
        } else {
            1
        };
        Self {
            content,
            perm,
            uid,
            gid,
            nlink,
            atime: now,
            mtime: now,
            ctime: now,
        }
    }

    /// Bytes a file holds (0 for anything else).
    pub(crate) fn size(&self) -> u64 {
        match &self.content {
            Content::File(data) => data.len() as u64,
            Content::Symlink(target) => target.len() as u64,
            Content::Directory(_) => 0,
        }
    }

    /// The node without a file's bytes: what a metadata commit records of
    /// a file whose data was never synced.
    fn without_data(&self) -> Self {
        let mut node = self.clone();
        if let Content::File(data) = &mut node.content {
            data.clear();
        }
        node
    }
}

/// A file's bytes changed since its last sync: the range that covers them.
#[derive(Clone, Copy, Debug)]
struct Dirty {
    from: u64,
    to: u64,
}

/// Both images and what separates them.
#[derive(Clone, Debug)]
pub(crate) struct Images {
    live: HashMap<u64, Node>,
    durable: HashMap<u64, Node>,
    dirty: HashMap<u64, Dirty>,
    metadata_changed: bool,
    /// Descriptors open on each inode, so an unlinked file lives until closed.
    open: HashMap<u64, u32>,
    next_ino: u64,
}

impl Images {
    /// An empty filesystem, durable as it is.
    pub(crate) fn new(uid: u32, gid: u32) -> Self {
        let root = Node::new(Content::Directory(BTreeMap::new()), 0o755, uid, gid);
        let live = HashMap::from([(ROOT, root)]);
        Self {
            durable: live.clone(),
            live,
            dirty: HashMap::new(),
            metadata_changed: false,
            open: HashMap::new(),
            next_ino: ROOT + 1,
        }
    }

    /// The node `ino` as the processes see it.
    pub(crate) fn node(&self, ino: u64) -> Result<&Node, Errno> {
        self.live.get(&ino).ok_or(libc::ENOENT)
    }

    fn node_mut(&mut self, ino: u64) -> Result<&mut Node, Errno> {
        self.live.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn entries(&self, dir: u64) -> Result<&BTreeMap<OsString, u64>, Errno> {
        match &self.node(dir)?.content {
            Content::Directory(entries) => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<OsString, u64>, Errno> {
        let node = self.node_mut(dir)?;
        node.mtime = SystemTime::now();
        node.ctime = node.mtime;
        match &mut node.content {
            Content::Directory(entries) => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// The inode named `name` in `dir`.
    pub(crate) fn lookup(&self, dir: u64, name: &OsStr) -> Result<u64, Errno> {
        self.entries(dir)?.get(name).copied().ok_or(libc::ENOENT)
    }

    /// A directory's entries in name order.
    pub(crate) fn list(&self, dir: u64) -> Result<Vec<(OsString, u64)>, Errno> {
        Ok(self
            .entries(dir)?
            .iter()
            .map(|(name, ino)| (name.clone(), *ino))
            .collect())
    }

    /// Makes a new node named `name` in `dir`.
    pub(crate) fn make(
        &mut self,
        dir: u64,
        name: &OsStr,
        content: Content,
        perm: u16,
        uid: u32,
        gid: u32,
    ) -> Result<u64, Errno> {
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let is_directory = matches!(content, Content::Directory(_));
        let ino = self.next_ino;
        self.next_ino += 1;
        self.live.insert(ino, Node::new(content, perm, uid, gid));
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        if is_directory {
            self.node_mut(dir)?.nlink += 1;
        }
        self.metadata_changed = true;
        Ok(ino)
    }

    /// Another name for the file `ino`.
    pub(crate) fn link(&mut self, ino: u64, dir: u64, name: &OsStr) -> Result<(), Errno> {
        if matches!(self.node(ino)?.content, Content::Directory(_)) {
            return Err(libc::EPERM);
        }
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        let node = self.node_mut(ino)?;
        node.nlink += 1;
        node.ctime = SystemTime::now();
        self.metadata_changed = true;
        Ok(())
    }

    /// Removes the name `name` from `dir`; `directory` says which kind the
    /// caller means to remove (`rmdir` or `unlink`).
    pub(crate) fn remove(&mut self, dir: u64, name: &OsStr, directory: bool) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        match (&self.node(ino)?.content, directory) {
            (Content::Directory(entries), true) if !entries.is_empty() => {
                return Err(libc::ENOTEMPTY);
            }
            (Content::Directory(_), false) => return Err(libc::EISDIR),
            (Content::File(_) | Content::Symlink(_), true) => return Err(libc::ENOTDIR),
            _ => {}
        }
        self.entries_mut(dir)?.remove(name);
        if directory {
            self.node_mut(dir)?.nlink -= 1;
        }
        self.unlinked(ino, directory);
        self.metadata_changed = true;
        Ok(())
    }

    /// One name fewer for `ino`: gone once it has none and none has it open.
    fn unlinked(&mut self, ino: u64, directory: bool) {
        let Some(node) = self.live.get_mut(&ino) else {
            return;
        };
        node.nlink = if directory {
            0
        } else {
            node.nlink.saturating_sub(1)
        };
        node.ctime = SystemTime::now();
        if node.nlink == 0 && !self.open.contains_key(&ino) {
            self.live.remove(&ino);
            self.dirty.remove(&ino);
        }
    }

    /// Moves `name` in `dir` to `new_name` in `new_dir`, replacing what was
    /// there (`no_replace`: refusing to).
    pub(crate) fn rename(
        &mut self,
        dir: u64,
        name: &OsStr,
        new_dir: u64,
        new_name: &OsStr,
        no_replace: bool,
    ) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        let moving_directory = matches!(self.node(ino)?.content, Content::Directory(_));
        if moving_directory && (ino == new_dir || self.is_ancestor(ino, new_dir)) {
            return Err(libc::EINVAL);
        }
        if let Ok(replaced) = self.lookup(new_dir, new_name) {
            if replaced == ino {
                return Ok(());
            }
            if no_replace {
                return Err(libc::EEXIST);
            }
            let replaced_directory = matches!(self.node(replaced)?.content, Content::Directory(_));
            match (moving_directory, replaced_directory) {
                (true, false) => return Err(libc::ENOTDIR),
                (false, true) => return Err(libc::EISDIR),
                _ => {}
            }
            self.remove(new_dir, new_name, replaced_directory)?;
        }
        self.entries_mut(dir)?.remove(name);
        self.entries_mut(new_dir)?.insert(new_name.to_owned(), ino);
        if moving_directory && dir != new_dir {
            self.node_mut(dir)?.nlink -= 1;
            self.node_mut(new_dir)?.nlink += 1;
        }
        self.node_mut(ino)?.ctime = SystemTime::now();
        self.metadata_changed = true;
        Ok(())
    }

    fn is_ancestor(&self, ancestor: u64, mut ino: u64) -> bool {
        // Directories have one parent; find it by search (the trees are small).
        while ino != ROOT {
            let parent = self
                .live
                .iter()
                .find_map(|(parent, node)| match &node.content {
                    Content::Directory(entries) if entries.values().any(|child| *child == ino) => {
                        Some(*parent)
                    }
                    _ => None,
                });
            match parent {
                Some(parent) if parent == ancestor => return true,
                Some(parent) => ino = parent,
                None => return false,
            }
        }
        false
    }

    /// A descriptor opened on `ino`.
    pub(crate) fn opened(&mut self, ino: u64) -> Result<(), Errno> {
        self.node(ino)?;
        *self.open.entry(ino).or_default() += 1;
        Ok(())
    }

    /// A descriptor on `ino` closed.
    pub(crate) fn closed(&mut self, ino: u64) {
        if let Some(count) = self.open.get_mut(&ino) {
            *count -= 1;
            if *count == 0 {
                self.open.remove(&ino);
                if self.live.get(&ino).is_some_and(|node| node.nlink == 0) {
                    self.live.remove(&ino);
                    self.dirty.remove(&ino);
                }
            }
        }
    }

    fn data_mut(&mut self, ino: u64) -> Result<&mut Vec<u8>, Errno> {
        let node = self.node_mut(ino)?;
        node.mtime = SystemTime::now();
        node.ctime = node.mtime;
        match &mut node.content {
            Content::File(data) => Ok(data),
            Content::Directory(_) => Err(libc::EISDIR),
            Content::Symlink(_) => Err(libc::EINVAL),
        }
    }

    fn mark_dirty(&mut self, ino: u64, from: u64, to: u64) {
        self.dirty
            .entry(ino)
            .and_modify(|dirty| {
                dirty.from = dirty.from.min(from);
                dirty.to = dirty.to.max(to);
            })
            .or_insert(Dirty { from, to });
    }

    /// Writes `bytes` at `offset` of the file `ino` (not durable until synced).
    pub(crate) fn write(&mut self, ino: u64, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let data = self.data_mut(ino)?;
        let start = usize::try_from(offset).map_err(|_| libc::EFBIG)?;
        let end = start.checked_add(bytes.len()).ok_or(libc::EFBIG)?;
        if data.len() < end {
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(bytes);
        self.mark_dirty(ino, offset, end as u64);
        Ok(())
    }

    /// Up to `length` bytes of the file `ino` from `offset`.
    pub(crate) fn read(&self, ino: u64, offset: u64, length: usize) -> Result<&[u8], Errno> {
        match &self.node(ino)?.content {
            Content::File(data) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(length).min(data.len());
                Ok(&data[start..end])
            }
            Content::Directory(_) => Err(libc::EISDIR),
            Content::Symlink(_) => Err(libc::EINVAL),
        }
    }

    /// Sets the file's length: shortening is metadata (durable with the next
    /// commit), lengthening writes zeros (durable when the file is synced).
    pub(crate) fn set_length(&mut self, ino: u64, length: u64) -> Result<(), Errno> {
        let new = usize::try_from(length).map_err(|_| libc::EFBIG)?;
        let data = self.data_mut(ino)?;
        let old = data.len();
        data.resize(new, 0);
        if new < old {
            self.metadata_changed = true;
        } else if new > old {
            self.mark_dirty(ino, old as u64, length);
        }
        Ok(())
    }

    /// Changes an inode's mode, owner or times (metadata).
    pub(crate) fn set_attributes(
        &mut self,
        ino: u64,
        perm: Option<u16>,
        uid: Option<u32>,
        gid: Option<u32>,
        atime: Option<SystemTime>,
        mtime: Option<SystemTime>,
    ) -> Result<(), Errno> {
        let node = self.node_mut(ino)?;
        if let Some(perm) = perm {
            node.perm = perm;
        }
        if let Some(uid) = uid {
            node.uid = uid;
        }
        if let Some(gid) = gid {
            node.gid = gid;
        }
        if let Some(atime) = atime {
            node.atime = atime;
        }
        if let Some(mtime) = mtime {
            node.mtime = mtime;
        }
        node.ctime = SystemTime::now();
        self.metadata_changed = true;
        Ok(())
    }

    /// `fsync`/`fdatasync` of `ino`: commits the metadata journal, then the
    /// file's own bytes.
    pub(crate) fn sync(&mut self, ino: u64) {
        self.commit_metadata();
        let Some(dirty) = self.dirty.remove(&ino) else {
            return;
        };
        let (Some(live), Some(durable)) = (self.live.get(&ino), self.durable.get_mut(&ino)) else {
            return;
        };
        if let (Content::File(live), Content::File(durable)) = (&live.content, &mut durable.content)
        {
            durable.resize(live.len(), 0);
            let from = (dirty.from as usize).min(live.len());
            let to = (dirty.to as usize).min(live.len());
            durable[from..to].copy_from_slice(&live[from..to]);
        }
    }

    /// Makes the durable namespace the live one: every node reachable from
    /// the root, its attributes and entries; files keep their durable bytes
    /// (cut to a shortened live length), new files start empty.
    fn commit_metadata(&mut self) {
        if !self.metadata_changed {
            return;
        }
        self.metadata_changed = false;
        let mut committed = HashMap::with_capacity(self.live.len());
        let mut seen = HashSet::new();
        let mut pending = vec![ROOT];
        while let Some(ino) = pending.pop() {
            if !seen.insert(ino) {
                continue;
            }
            let Some(live) = self.live.get(&ino) else {
                continue;
            };
            if let Content::Directory(entries) = &live.content {
                pending.extend(entries.values().copied());
            }
            let mut node = live.without_data();
            if let (
                Content::File(bytes),
                Some(Node {
                    content: Content::File(durable),
                    ..
                }),
            ) = (&mut node.content, self.durable.get_mut(&ino))
            {
                let kept = durable.len().min(live.size() as usize);
                durable.truncate(kept);
                *bytes = std::mem::take(durable);
            }
            committed.insert(ino, node);
        }
        self.durable = committed;
    }

    /// Bytes written and not synced, over every file.
    pub(crate) fn unsynced_bytes(&self) -> u64 {
        self.dirty.values().map(|dirty| dirty.to - dirty.from).sum()
    }

    /// The power goes: what was not durable is gone.
    pub(crate) fn cut(&mut self) {
        self.live = self.durable.clone();
        self.dirty.clear();
        self.open.clear();
        self.metadata_changed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(images: &mut Images, dir: u64, name: &str) -> u64 {
        images
            .make(
                dir,
                OsStr::new(name),
                Content::File(Vec::new()),
                0o644,
                0,
                0,
            )
            .unwrap()
    }

    fn directory(images: &mut Images, parent: u64, name: &str) -> u64 {
        let entries = Content::Directory(BTreeMap::new());
        images
            .make(parent, OsStr::new(name), entries, 0o755, 0, 0)
            .unwrap()
    }

    fn bytes(images: &Images, dir: u64, name: &str) -> Option<Vec<u8>> {
        let ino = images.lookup(dir, OsStr::new(name)).ok()?;
        Some(images.read(ino, 0, usize::MAX).unwrap().to_vec())
    }

    #[test]
    fn a_synced_file_keeps_its_bytes_and_others_lose_theirs() {
        let mut images = Images::new(0, 0);
        let synced = file(&mut images, ROOT, "synced");
        let unsynced = file(&mut images, ROOT, "unsynced");
        images.write(synced, 0, b"kept").unwrap();
        images.write(unsynced, 0, b"lost").unwrap();
        images.sync(synced);
        images.write(synced, 4, b" and lost").unwrap();
        assert_eq!(images.unsynced_bytes(), 4 + 9);
        images.cut();
        assert_eq!(bytes(&images, ROOT, "synced").unwrap(), b"kept");
        // Its name was committed with the other file's sync, its bytes not.
        assert_eq!(bytes(&images, ROOT, "unsynced").unwrap(), b"");
    }

    #[test]
    fn names_wait_for_a_commit() {
        let mut images = Images::new(0, 0);
        let dir = directory(&mut images, ROOT, "d");
        images.sync(dir);
        let a = file(&mut images, dir, "a");
        images.write(a, 0, b"x").unwrap();
        images.cut();
        assert!(images.lookup(dir, OsStr::new("a")).is_err());
    }

    #[test]
    fn a_rename_follows_the_next_commit() {
        let mut images = Images::new(0, 0);
        let old = file(&mut images, ROOT, "CURRENT");
        images.write(old, 0, b"one").unwrap();
        images.sync(old);
        let new = file(&mut images, ROOT, "CURRENT.tmp");
        images.write(new, 0, b"two").unwrap();
        images.sync(new);
        images
            .rename(
                ROOT,
                OsStr::new("CURRENT.tmp"),
                ROOT,
                OsStr::new("CURRENT"),
                false,
            )
            .unwrap();
        let mut uncommitted = images.clone();
        uncommitted.cut();
        assert_eq!(bytes(&uncommitted, ROOT, "CURRENT").unwrap(), b"one");
        assert_eq!(bytes(&uncommitted, ROOT, "CURRENT.tmp").unwrap(), b"two");
        images.sync(ROOT);
        images.cut();
        assert_eq!(bytes(&images, ROOT, "CURRENT").unwrap(), b"two");
        assert!(images.lookup(ROOT, OsStr::new("CURRENT.tmp")).is_err());
    }

    #[test]
    fn a_truncation_is_metadata_and_a_lengthening_is_data() {
        let mut images = Images::new(0, 0);
        let log = file(&mut images, ROOT, "log");
        images.write(log, 0, b"0123456789").unwrap();
        images.sync(log);
        images.set_length(log, 4).unwrap();
        images.cut();
        assert_eq!(bytes(&images, ROOT, "log").unwrap(), b"0123456789");
        images.set_length(log, 4).unwrap();
        images.sync(ROOT);
        images.set_length(log, 8).unwrap();
        images.cut();
        assert_eq!(bytes(&images, ROOT, "log").unwrap(), b"0123");
    }

    #[test]
    fn an_unlinked_open_file_lives_until_closed() {
        let mut images = Images::new(0, 0);
        let ino = file(&mut images, ROOT, "f");
        images.opened(ino).unwrap();
        images.remove(ROOT, OsStr::new("f"), false).unwrap();
        images.write(ino, 0, b"still").unwrap();
        assert_eq!(images.read(ino, 0, 10).unwrap(), b"still");
        images.closed(ino);
        assert!(images.node(ino).is_err());
    }

    #[test]
    fn directories_refuse_what_posix_refuses() {
        let mut images = Images::new(0, 0);
        let dir = directory(&mut images, ROOT, "d");
        file(&mut images, dir, "f");
        assert_eq!(
            images.remove(ROOT, OsStr::new("d"), true),
            Err(libc::ENOTEMPTY)
        );
        assert_eq!(
            images.remove(ROOT, OsStr::new("d"), false),
            Err(libc::EISDIR)
        );
        assert_eq!(
            images.rename(ROOT, OsStr::new("d"), dir, OsStr::new("inside"), false),
            Err(libc::EINVAL)
        );
        assert_eq!(images.node(ROOT).unwrap().nlink, 3);
    }
}
