//! The filesystem mounted for real (FUSE), written to with the standard
//! library as any process would, and its power cut.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use weiport_powercut::PowerCut;

fn mounted() -> (tempfile::TempDir, PowerCut) {
    let dir = tempfile::tempdir().unwrap();
    let disk = PowerCut::mount(dir.path())
        .expect("mounting a FUSE filesystem (needs /dev/fuse and root, or fuse3's fusermount3)");
    (dir, disk)
}

fn sync_dir(path: &std::path::Path) {
    File::open(path).unwrap().sync_all().unwrap();
}

#[test]
fn synced_data_survives_a_cut_and_unsynced_data_does_not() {
    let (_dir, mut disk) = mounted();
    let root = disk.path().to_owned();
    let mut lazy = File::create(root.join("lazy")).unwrap();
    let mut synced = File::create(root.join("synced")).unwrap();
    synced.write_all(b"acknowledged").unwrap();
    synced.sync_data().unwrap();
    synced.write_all(b" and then some").unwrap();
    lazy.write_all(b"in the page cache only").unwrap();
    fs::write(root.join("later"), b"created after the last sync").unwrap();
    assert_eq!(
        fs::read(root.join("synced")).unwrap(),
        b"acknowledged and then some"
    );
    assert_eq!(disk.unsynced_bytes(), 14 + 22 + 27);
    drop((synced, lazy));
    disk.cut().unwrap();
    assert_eq!(fs::read(root.join("synced")).unwrap(), b"acknowledged");
    // Its name was committed with the other file's sync; its bytes were not.
    assert_eq!(fs::read(root.join("lazy")).unwrap(), b"");
    // Created after every sync: gone, name and all.
    assert!(!root.join("later").exists());
    assert_eq!(disk.unsynced_bytes(), 0);
}

#[test]
fn writes_through_o_dsync_are_durable_each() {
    let (_dir, mut disk) = mounted();
    let path = disk.path().join("wal");
    let mut wal = OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_DSYNC)
        .open(&path)
        .unwrap();
    wal.write_all(b"one;").unwrap();
    wal.write_all(b"two;").unwrap();
    drop(wal);
    sync_dir(disk.path());
    disk.cut().unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"one;two;");
}

#[test]
fn a_new_file_is_gone_without_a_sync_and_kept_with_its_directory_synced() {
    let (_dir, mut disk) = mounted();
    let root = disk.path().to_owned();
    fs::create_dir(root.join("store")).unwrap();
    fs::write(root.join("store/forgotten"), b"x").unwrap();
    disk.cut().unwrap();
    assert!(!root.join("store").exists());

    fs::create_dir(root.join("store")).unwrap();
    let mut kept = File::create(root.join("store/kept")).unwrap();
    kept.write_all(b"block").unwrap();
    kept.sync_all().unwrap();
    sync_dir(&root.join("store"));
    drop(kept);
    disk.cut().unwrap();
    assert_eq!(fs::read(root.join("store/kept")).unwrap(), b"block");
}

#[test]
fn a_rename_follows_its_directory_sync() {
    let (_dir, mut disk) = mounted();
    let root = disk.path().to_owned();
    for (name, text) in [("CURRENT", "MANIFEST-1"), ("CURRENT.tmp", "MANIFEST-2")] {
        let mut file = File::create(root.join(name)).unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file.sync_all().unwrap();
    }
    fs::rename(root.join("CURRENT.tmp"), root.join("CURRENT")).unwrap();
    disk.cut().unwrap();
    assert_eq!(
        fs::read_to_string(root.join("CURRENT")).unwrap(),
        "MANIFEST-1"
    );
    assert!(root.join("CURRENT.tmp").exists());

    fs::rename(root.join("CURRENT.tmp"), root.join("CURRENT")).unwrap();
    sync_dir(&root);
    disk.cut().unwrap();
    assert_eq!(
        fs::read_to_string(root.join("CURRENT")).unwrap(),
        "MANIFEST-2"
    );
    assert!(!root.join("CURRENT.tmp").exists());
}

#[test]
fn a_truncation_follows_its_directory_sync() {
    let (_dir, mut disk) = mounted();
    let path = disk.path().join("log");
    let mut log = File::create(&path).unwrap();
    log.write_all(b"0123456789").unwrap();
    log.sync_all().unwrap();
    log.set_len(4).unwrap();
    drop(log);
    disk.cut().unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"0123456789");

    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4)
        .unwrap();
    sync_dir(disk.path());
    disk.cut().unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"0123");
}
