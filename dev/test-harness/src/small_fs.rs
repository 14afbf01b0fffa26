//! A small ext4 filesystem on a loop device, for tests of a full disk: made with `dd` and
//! `mkfs.ext4` in a temp dir and mounted with `mount -o loop` (needs root, as CI has).
//! [`SmallFs::fill`] takes every free block; [`SmallFs::free`] gives them back. Unmounted
//! (lazily, so a process still holding files cannot block it) and removed on drop.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// A mounted small filesystem.
pub struct SmallFs {
    // Field order matters: unmounted in `drop` before the temp dir (image, mount point) goes.
    mount: PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallFs {
    /// Makes and mounts a filesystem of `megabytes`, or says why it could not.
    pub fn mount(megabytes: u32) -> Result<SmallFs> {
        let dir = tempfile::Builder::new().prefix("tamebi-smallfs-").tempdir()?;
        let image = dir.path().join("fs.img");
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount)?;
        run(Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", image.display()))
            .arg("bs=1M")
            .arg(format!("count={megabytes}"))
            .arg("status=none"))?;
        // No reserved blocks: root (the tests' user) could otherwise write past "full".
        run(Command::new("mkfs.ext4").args(["-q", "-F", "-m", "0"]).arg(&image))?;
        run(Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mount))?;
        Ok(SmallFs { mount, _dir: dir })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mount
    }

    /// Writes a filler file until the filesystem has no free block left.
    pub fn fill(&self) -> Result<()> {
        // dd ends with "No space left on device" (a failure status) once it is full.
        let out = Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", self.filler().display()))
            .args(["bs=64k", "status=none"])
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.contains("No space left") {
            bail!("dd did not fill the filesystem: {stderr}");
        }
        Command::new("sync").status()?;
        Ok(())
    }

    /// Removes the filler: the space is free again.
    pub fn free(&self) -> Result<()> {
        std::fs::remove_file(self.filler()).context("remove the filler")?;
        Command::new("sync").status()?;
        Ok(())
    }

    fn filler(&self) -> PathBuf {
        self.mount.join("filler")
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}
