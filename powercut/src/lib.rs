//! A disk that can lose its power: a FUSE filesystem kept in memory that
//! passes every operation through, remembers what has been synced, and on
//! [`PowerCut::cut`] throws away every write that was not, as a machine
//! losing power would. A process killed with SIGKILL keeps its writes in
//! the kernel's page cache, so drills that only kill processes never see
//! what an unsynced acknowledgement costs; on this disk they do.
//!
//! What counts as synced follows a journaling filesystem (ext4, XFS):
//! metadata (names, renames, links, modes, truncations) is committed in
//! order by any `fsync`/`fdatasync`/directory sync; a file's bytes only by
//! a sync of that file or by writes through `O_SYNC`/`O_DSYNC`. FUSE is not
//! told of `sync_file_range`, which promises nothing durable anyway.
//!
//! Mounting needs `/dev/fuse` and root (or `fusermount3` from Debian's
//! `fuse3`).

#![warn(unreachable_pub)]

mod fs;
mod image;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fuser::{BackgroundSession, Config, MountOption};

/// A mounted power-cut filesystem; unmounted when dropped.
pub struct PowerCut {
    images: Arc<Mutex<image::Images>>,
    mountpoint: PathBuf,
    session: Option<BackgroundSession>,
}

impl PowerCut {
    /// Mounts an empty filesystem on `mountpoint` (an existing directory).
    pub fn mount(mountpoint: &Path) -> io::Result<Self> {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut disk = Self {
            images: Arc::new(Mutex::new(image::Images::new(uid, gid))),
            mountpoint: mountpoint.to_owned(),
            session: None,
        };
        disk.attach()?;
        Ok(disk)
    }

    fn attach(&mut self) -> io::Result<()> {
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("powercut".into()),
            MountOption::Subtype("powercut".into()),
        ];
        let filesystem = fs::PowerCutFs::new(self.images.clone());
        self.session = Some(fuser::spawn_mount(filesystem, &self.mountpoint, &config)?);
        Ok(())
    }

    fn detach(&mut self) -> io::Result<()> {
        if self.session.is_none() {
            return Ok(());
        }
        let unmounted = self.unmount_when_idle()?;
        let ended = match self.session.take() {
            // Its own unmount would find nothing mounted and fail.
            Some(session) if unmounted => session.join(),
            Some(session) => session.umount_and_join(),
            None => Ok(()),
        };
        match ended {
            // A request of a killed process was still being answered when
            // the kernel let go of the mount: the session ended all the same.
            Err(error) if error.kind() == io::ErrorKind::ConnectionAborted => Ok(()),
            other => other,
        }
    }

    /// Unmounts as root, waiting out the requests of killed processes that
    /// the kernel has not finished yet (the mount is busy until they are
    /// answered); false without root, where the session unmounts through
    /// fusermount.
    fn unmount_when_idle(&self) -> io::Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(self.mountpoint.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the mountpoint"))?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            // SAFETY: `path` is a NUL-terminated string that outlives the call.
            if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
                return Ok(true);
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EBUSY) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Some(libc::EPERM) => return Ok(false),
                _ => return Err(error),
            }
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// Bytes written to files and not yet synced: what a cut now would lose.
    pub fn unsynced_bytes(&self) -> u64 {
        self.images
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .unsynced_bytes()
    }

    /// The power goes and comes back: the filesystem is unmounted, every
    /// write not synced is discarded, and it is mounted again as the disk
    /// would be found. Every process using it must have been killed first
    /// (a machine losing power takes its processes with it); unmounting
    /// fails while one still holds a file open.
    pub fn cut(&mut self) -> io::Result<()> {
        self.detach()?;
        self.images
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .cut();
        self.attach()
    }
}

impl Drop for PowerCut {
    fn drop(&mut self) {
        let _ = self.detach();
    }
}
