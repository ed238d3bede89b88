//! The images served over FUSE: each request turned into an operation on
//! the live image, each `fsync` into a commit.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::image::{Content, Images, Node};

/// Nothing is cached by the kernel: every lookup and attribute is asked
/// again, so what a process sees is always the live image.
const NO_CACHE: Duration = Duration::ZERO;

/// The filesystem FUSE calls: the images behind a lock, and the open
/// descriptors that write through (`O_SYNC`, `O_DSYNC`).
pub(crate) struct PowerCutFs {
    pub(crate) images: Arc<Mutex<Images>>,
    handles: Mutex<Handles>,
}

#[derive(Default)]
struct Handles {
    next: u64,
    /// Inode and write-through of each open descriptor.
    open: HashMap<u64, (u64, bool)>,
}

impl PowerCutFs {
    pub(crate) fn new(images: Arc<Mutex<Images>>) -> Self {
        Self {
            images,
            handles: Mutex::new(Handles::default()),
        }
    }

    fn images(&self) -> MutexGuard<'_, Images> {
        self.images
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn handles(&self) -> MutexGuard<'_, Handles> {
        self.handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open_handle(&self, ino: u64, flags: i32) -> FileHandle {
        let write_through = flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
        let mut handles = self.handles();
        handles.next += 1;
        let fh = handles.next;
        handles.open.insert(fh, (ino, write_through));
        FileHandle(fh)
    }

    /// Makes a node named `name` in `parent`, owned by the caller, and
    /// answers with its entry.
    fn make(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        content: Content,
        perm: u16,
        reply: ReplyEntry,
    ) {
        let result = self
            .images()
            .make(parent.0, name, content, perm, req.uid(), req.gid());
        self.reply_entry(result, reply);
    }

    fn reply_entry(&self, result: Result<u64, i32>, reply: ReplyEntry) {
        let images = self.images();
        match result.and_then(|ino| Ok((ino, images.node(ino)?))) {
            Ok((ino, node)) => reply.entry(&NO_CACHE, &attributes(ino, node), Generation(0)),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }
}

fn attributes(ino: u64, node: &Node) -> FileAttr {
    let kind = match node.content {
        Content::File(_) => FileType::RegularFile,
        Content::Directory(_) => FileType::Directory,
        Content::Symlink(_) => FileType::Symlink,
    };
    let size = node.size();
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: node.atime,
        mtime: node.mtime,
        ctime: node.ctime,
        crtime: node.ctime,
        kind,
        perm: node.perm,
        nlink: node.nlink,
        uid: node.uid,
        gid: node.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn time(value: TimeOrNow) -> SystemTime {
    match value {
        TimeOrNow::SpecificTime(time) => time,
        TimeOrNow::Now => SystemTime::now(),
    }
}

fn empty(result: Result<(), i32>, reply: ReplyEmpty) {
    match result {
        Ok(()) => reply.ok(),
        Err(errno) => reply.error(Errno::from_i32(errno)),
    }
}

fn permissions(mode: u32, umask: u32) -> u16 {
    (mode & !umask & 0o7777) as u16
}

impl Filesystem for PowerCutFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = self.images().lookup(parent.0, name);
        self.reply_entry(result, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.images().node(ino.0) {
            Ok(node) => reply.attr(&NO_CACHE, &attributes(ino.0, node)),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut images = self.images();
        let result = (|| {
            if let Some(size) = size {
                images.set_length(ino.0, size)?;
            }
            if mode.is_some()
                || uid.is_some()
                || gid.is_some()
                || atime.is_some()
                || mtime.is_some()
            {
                images.set_attributes(
                    ino.0,
                    mode.map(|mode| (mode & 0o7777) as u16),
                    uid,
                    gid,
                    atime.map(time),
                    mtime.map(time),
                )?;
            }
            images.node(ino.0).map(|node| attributes(ino.0, node))
        })();
        match result {
            Ok(attr) => reply.attr(&NO_CACHE, &attr),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.images().node(ino.0).map(|node| &node.content) {
            Ok(Content::Symlink(target)) => {
                reply.data(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()))
            }
            Ok(_) => reply.error(Errno::EINVAL),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG && mode & libc::S_IFMT != 0 {
            reply.error(Errno::EPERM);
            return;
        }
        let perm = permissions(mode, umask);
        self.make(req, parent, name, Content::File(Vec::new()), perm, reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let perm = permissions(mode, umask);
        self.make(
            req,
            parent,
            name,
            Content::Directory(BTreeMap::new()),
            perm,
            reply,
        );
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(self.images().remove(parent.0, name, false), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(self.images().remove(parent.0, name, true), reply);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let target = Content::Symlink(target.as_os_str().to_owned());
        self.make(req, parent, link_name, target, 0o777, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            reply.error(Errno::EINVAL);
            return;
        }
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        empty(
            self.images()
                .rename(parent.0, name, newparent.0, newname, no_replace),
            reply,
        );
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let result = self
            .images()
            .link(ino.0, newparent.0, newname)
            .map(|()| ino.0);
        self.reply_entry(result, reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if let Err(errno) = self.images().opened(ino.0) {
            reply.error(Errno::from_i32(errno));
            return;
        }
        // Direct I/O: every write reaches this filesystem at once, none
        // waits in the kernel's page cache (whose contents a power cut
        // here must not outlive).
        reply.opened(
            self.open_handle(ino.0, flags.0),
            FopenFlags::FOPEN_DIRECT_IO,
        );
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.images().read(ino.0, offset, size as usize) {
            Ok(bytes) => reply.data(bytes),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let write_through = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0
            || self
                .handles()
                .open
                .get(&fh.0)
                .is_some_and(|(_, through)| *through);
        let mut images = self.images();
        match images.write(ino.0, offset, data) {
            Ok(()) => {
                if write_through {
                    images.sync(ino.0);
                }
                reply.written(data.len() as u32);
            }
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close() is not a sync: nothing becomes durable here.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.handles().open.remove(&fh.0);
        self.images().closed(ino.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.images().sync(ino.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.images().list(ino.0) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(errno) => reply.error(Errno::from_i32(errno)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let images = self.images();
        let entries = match images.list(ino.0) {
            Ok(entries) => entries,
            Err(errno) => {
                reply.error(Errno::from_i32(errno));
                return;
            }
        };
        let mut all = vec![
            (OsStr::new(".").to_owned(), ino.0),
            (OsStr::new("..").to_owned(), ino.0),
        ];
        all.extend(entries);
        for (index, (name, child)) in all.into_iter().enumerate().skip(offset as usize) {
            let kind = match images.node(child).map(|node| &node.content) {
                Ok(Content::Directory(_)) => FileType::Directory,
                Ok(Content::Symlink(_)) => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            if reply.add(INodeNo(child), index as u64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        // A directory's sync commits the metadata journal, as any sync does.
        self.fsync(req, ino, fh, datasync, reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Room enough that no server sizes its store down for lack of it.
        let blocks = 64 << 20; // of 4 KiB: 256 GiB
        reply.statfs(blocks, blocks, blocks, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        empty(self.images().node(ino.0).map(|_| ()), reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut images = self.images();
        let made = images.make(
            parent.0,
            name,
            Content::File(Vec::new()),
            permissions(mode, umask),
            req.uid(),
            req.gid(),
        );
        let ino = match made.and_then(|ino| images.opened(ino).map(|()| ino)) {
            Ok(ino) => ino,
            Err(errno) => {
                reply.error(Errno::from_i32(errno));
                return;
            }
        };
        let attr = attributes(ino, images.node(ino).expect("just made"));
        drop(images);
        let fh = self.open_handle(ino, flags);
        reply.created(
            &NO_CACHE,
            &attr,
            Generation(0),
            fh,
            FopenFlags::FOPEN_DIRECT_IO,
        );
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let mut images = self.images();
        let result = match mode {
            // Reserving space without changing the length: nothing to keep.
            libc::FALLOC_FL_KEEP_SIZE => images.node(ino.0).map(|_| ()),
            0 => images.node(ino.0).map(Node::size).and_then(|size| {
                let end = offset.saturating_add(length);
                if end > size {
                    images.set_length(ino.0, end)
                } else {
                    Ok(())
                }
            }),
            _ => Err(libc::EOPNOTSUPP),
        };
        empty(result, reply);
    }
}
