//! Every file fwsvm writes goes through here, so that nothing the user had is lost.
//!
//! * A regular file (or a new path) is written to a temporary file beside it, flushed to disk
//!   and renamed over it: a failed or interrupted write never leaves a partial file nor
//!   destroys the old one. A new file gets 0666 less the umask (as `open` would give it); a
//!   replaced file keeps its mode.
//! * A symbolic link is followed: the file it points to is replaced, not the link.
//! * `-`, a character or block device, a FIFO or a socket (`/dev/null`, `/dev/stdout`, a pipe)
//!   is written to directly, never replaced; `/dev/stdout` and the like go to this process's own
//!   standard output.
//! * [`RunFiles`] refuses, before any work, an output that is the same file as another file of
//!   the run (an input, or another output), compared by device and inode rather than by name.
//!
//! Temporary files in flight are registered so that [`abort`] (a second Ctrl-C) can remove
//! them before the process exits.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Temporary files being written now (removed by [`abort`]).
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Symbolic links followed at most (as the kernel's ELOOP limit).
const MAX_LINKS: usize = 40;

/// Where the bytes for a path go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This process's standard output (`-`, `/dev/stdout`, `/proc/self/fd/1`, …).
    Stdout,
    /// This process's standard error (`/dev/stderr`, …).
    Stderr,
    /// Written in place: a device, FIFO or socket, or another process's descriptor.
    Direct(PathBuf),
    /// Replaced atomically: the regular file (existing or not) at this resolved path.
    Replace(PathBuf),
}

/// Bytes free to this process on the file system a file written to `path` would land on: the
/// directory of a [`Target::Replace`] file (where its temporary is made); None for the other
/// targets, and where the system does not say (not unix, or `statvfs` failed).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let Ok(Target::Replace(dest)) = resolve(path) else {
        return None;
    };
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    statvfs_free(&dir)
}

#[cfg(unix)]
fn statvfs_free(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` a buffer of the struct statvfs fills.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // The fields' types differ across systems (u32 or u64).
    #[allow(clippy::unnecessary_cast)]
    (st.f_bavail as u64).checked_mul(st.f_frsize as u64)
}

#[cfg(not(unix))]
fn statvfs_free(_dir: &Path) -> Option<u64> {
    None
}

/// `/proc/self/fd/N`, `/proc/<pid>/fd/N` or `/dev/fd/N` → N (for N of this process).
fn own_descriptor(p: &Path) -> Option<u32> {
    let parts: Vec<&std::ffi::OsStr> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s),
            _ => None,
        })
        .collect();
    let fd = |s: &std::ffi::OsStr| s.to_str()?.parse::<u32>().ok();
    match parts[..] {
        [a, b, n] if a == "dev" && b == "fd" => fd(n),
        [a, pid, f, n] if a == "proc" && f == "fd" => {
            let own = pid == "self" || pid.to_str() == Some(&std::process::id().to_string());
            if own { fd(n) } else { None }
        }
        _ => None,
    }
}

/// Follows symbolic links (a dangling last link included) without requiring the final file to
/// exist; returns where the bytes must go.
pub fn resolve(path: &Path) -> Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match own_descriptor(&p) {
            Some(1) => return Ok(Target::Stdout),
            Some(2) => return Ok(Target::Stderr),
            Some(_) => return Ok(Target::Direct(path.to_path_buf())),
            None => {}
        }
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Target::Replace(p));
            }
            Err(e) => return Err(Error::io(path, e)),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let to = std::fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
            p = if to.is_absolute() {
                to
            } else {
                p.parent().unwrap_or(Path::new(".")).join(to)
            };
            continue;
        }
        if ft.is_file() {
            return Ok(Target::Replace(p));
        }
        if ft.is_dir() {
            return Err(Error::InvalidData {
                path: path.to_path_buf(),
                msg: "is a directory; give a file name for the output".into(),
            });
        }
        // Character or block device, FIFO, socket.
        return Ok(Target::Direct(path.to_path_buf()));
    }
    Err(Error::InvalidData {
        path: path.to_path_buf(),
        msg: format!("more than {MAX_LINKS} levels of symbolic links"),
    })
}

enum Sink {
    Stdout(std::io::Stdout),
    Stderr(std::io::Stderr),
    Direct(File),
    Temp {
        tmp: tempfile::NamedTempFile,
        dest: PathBuf,
        /// The replaced file's mode, kept.
        #[cfg(unix)]
        mode: Option<u32>,
    },
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(s) => s.write(buf),
            Sink::Stderr(s) => s.write(buf),
            Sink::Direct(f) => f.write(buf),
            Sink::Temp { tmp, .. } => tmp.as_file_mut().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(s) => s.flush(),
            Sink::Stderr(s) => s.flush(),
            Sink::Direct(f) => f.flush(),
            Sink::Temp { tmp, .. } => tmp.as_file_mut().flush(),
        }
    }
}

/// An output being written: buffered; [`OutputFile::commit`] puts it in place. Dropped without
/// a commit, a replaced file stays as it was and the temporary file is removed.
pub struct OutputFile {
    out: BufWriter<Sink>,
    path: PathBuf,
    temp: Option<PathBuf>,
}

impl OutputFile {
    /// Opens `path` for writing (see the module documentation for what goes where).
    pub fn create(path: &Path) -> Result<OutputFile> {
        let sink = match resolve(path)? {
            Target::Stdout => Sink::Stdout(std::io::stdout()),
            Target::Stderr => Sink::Stderr(std::io::stderr()),
            Target::Direct(p) => Sink::Direct(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .map_err(|e| Error::io(path, e))?,
            ),
            Target::Replace(dest) => {
                #[cfg(unix)]
                let mode = {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::metadata(&dest)
                        .ok()
                        .map(|m| m.permissions().mode())
                };
                let dir = match dest.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let mut b = tempfile::Builder::new();
                b.prefix(".fwsvm-").suffix(".tmp");
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    // 0666 less the umask, applied by open(2) itself.
                    b.permissions(std::fs::Permissions::from_mode(0o666));
                }
                let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
                let tmp = b.tempfile_in(&dir).map_err(|e| Error::io(&dir, e))?;
                pending.push(tmp.path().to_path_buf());
                Sink::Temp {
                    tmp,
                    dest,
                    #[cfg(unix)]
                    mode,
                }
            }
        };
        let temp = match &sink {
            Sink::Temp { tmp, .. } => Some(tmp.path().to_path_buf()),
            _ => None,
        };
        Ok(OutputFile {
            out: BufWriter::with_capacity(1 << 16, sink),
            path: path.to_path_buf(),
            temp,
        })
    }

    /// The path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the bytes go to this process's standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.out.get_ref(), Sink::Stdout(_))
    }

    /// Flushes and puts the file in place (rename over the destination, or nothing more for a
    /// direct write).
    pub fn commit(mut self) -> Result<()> {
        let path = self.path.clone();
        self.out.flush().map_err(|e| Error::io(&path, e))?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let (out, _) = std::mem::replace(
            &mut self.out,
            BufWriter::new(Sink::Stdout(std::io::stdout())),
        )
        .into_parts();
        let Sink::Temp {
            tmp,
            dest,
            #[cfg(unix)]
            mode,
        } = out
        else {
            return Ok(());
        };
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io(&path, e))?;
        }
        tmp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|p| *p != temp);
        tmp.persist(&dest).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            // The NamedTempFile inside removes the file itself.
            let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
            pending.retain(|p| *p != temp);
        }
    }
}

/// Writes `path` in one go through [`OutputFile`].
pub fn write_output(
    path: &Path,
    body: impl FnOnce(&mut OutputFile) -> std::io::Result<()>,
) -> Result<()> {
    let mut f = OutputFile::create(path)?;
    body(&mut f).map_err(|e| Error::io(path, e))?;
    f.commit()
}

/// Writes lines 0..n to `w` in order, line i appended to a buffer by `line(i, buf)`: the lines
/// are formatted in parallel by chunks of `chunk`, a batch of four chunks per thread at a
/// time, and each batch written before the next is formatted (a model file's support vectors,
/// a dataset's rows).
pub(crate) fn write_lines_in_order<W: Write + ?Sized>(
    w: &mut W,
    n: usize,
    chunk: usize,
    line: impl Fn(usize, &mut Vec<u8>) + Sync,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    let chunk = chunk.max(1);
    let mut start = 0;
    while start < n {
        let end = n.min(start + chunk * rayon::current_num_threads().max(1) * 4);
        let texts: Vec<Vec<u8>> = (start..end)
            .step_by(chunk)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|r0| {
                let mut text = Vec::new();
                for i in r0..end.min(r0 + chunk) {
                    line(i, &mut text);
                }
                text
            })
            .collect();
        for t in texts {
            w.write_all(&t)?;
        }
        start = end;
    }
    Ok(())
}

/// Removes every temporary file in flight and exits with `code` at once, holding the registry
/// so no new one can appear: what a second Ctrl-C does. Files already in place stay as they
/// are; files being replaced are left as they were before.
pub fn abort(code: i32) -> ! {
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for p in pending.iter() {
        let _ = std::fs::remove_file(p);
    }
    std::process::exit(code)
}

/// What a file of a run is for, as the messages name it ("training data", "model file", …).
#[derive(Debug, Clone)]
struct Entry {
    role: String,
    path: PathBuf,
    output: bool,
    key: Option<FileKey>,
}

/// A file's identity: (device, inode) of an existing file, or of a new file's nearest existing
/// directory plus the path below it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileKey {
    Inode(u64, u64),
    New(u64, u64, std::ffi::OsString),
}

#[cfg(unix)]
fn file_key(path: &Path) -> Result<Option<FileKey>> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let target = match resolve(path) {
        Ok(Target::Replace(p)) => p,
        // Standard streams, devices and FIFOs may well be named twice (`/dev/null`).
        Ok(_) => return Ok(None),
        Err(e) => return Err(e),
    };
    match std::fs::metadata(&target) {
        Ok(m) => {
            let ft = m.file_type();
            if ft.is_char_device() || ft.is_block_device() || ft.is_fifo() || ft.is_socket() {
                return Ok(None);
            }
            Ok(Some(FileKey::Inode(m.dev(), m.ino())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A new file, perhaps in directories still to be made (`bench --out new/dir`):
            // keyed by its nearest existing ancestor and the path below it.
            let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
            let mut dir = target.as_path();
            loop {
                let Some(name) = dir.file_name() else {
                    return Ok(None);
                };
                rest.push(name);
                dir = match dir.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                match std::fs::metadata(dir) {
                    Ok(m) => {
                        let below: PathBuf = rest.iter().rev().collect();
                        return Ok(Some(FileKey::New(m.dev(), m.ino(), below.into_os_string())));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io(dir, e)),
                }
            }
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(not(unix))]
fn file_key(path: &Path) -> Result<Option<FileKey>> {
    let _ = path;
    Ok(None)
}

/// The files of one run, checked before any work: no output may be the same file as an input
/// or as another output.
#[derive(Debug, Default)]
pub struct RunFiles {
    entries: Vec<Entry>,
}

impl RunFiles {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A file the run reads (`role` names it in messages: "training data", "model", …).
    pub fn input(&mut self, role: &str, path: &Path) -> &mut Self {
        self.push(role, path, false)
    }

    /// A file the run writes.
    pub fn output(&mut self, role: &str, path: &Path) -> &mut Self {
        self.push(role, path, true)
    }

    /// An optional input.
    pub fn input_opt(&mut self, role: &str, path: Option<&Path>) -> &mut Self {
        if let Some(p) = path {
            self.input(role, p);
        }
        self
    }

    /// An optional output.
    pub fn output_opt(&mut self, role: &str, path: Option<&Path>) -> &mut Self {
        if let Some(p) = path {
            self.output(role, p);
        }
        self
    }

    fn push(&mut self, role: &str, path: &Path, output: bool) -> &mut Self {
        self.entries.push(Entry {
            role: role.to_string(),
            path: path.to_path_buf(),
            output,
            key: None,
        });
        self
    }

    /// Fails (a usage error, exit code 2) when an output is the same file as any other file of
    /// the run; also when an output path is a directory.
    pub fn check(&mut self) -> Result<()> {
        for e in &mut self.entries {
            e.key = if e.output {
                file_key(&e.path)?
            } else {
                // An input that cannot be read is reported by its reader, with its own message.
                file_key(&e.path).ok().flatten()
            };
        }
        for (i, a) in self.entries.iter().enumerate() {
            for b in &self.entries[i + 1..] {
                if !(a.output || b.output) {
                    continue;
                }
                if let (Some(ka), Some(kb)) = (&a.key, &b.key)
                    && ka == kb
                {
                    let (out, other) = if b.output { (b, a) } else { (a, b) };
                    return Err(Error::param(format!(
                        "the {} `{}` is the same file as the {} `{}`; refusing to overwrite it \
                         (choose another output path)",
                        out.role,
                        out.path.display(),
                        other.role,
                        other.path.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn new_file_follows_the_umask_and_replaced_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.txt");
        write_output(&p, |w| w.write_all(b"a\n")).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // What open(2) gives a new file under this process's umask (File::create asks 0666).
        let probe = dir.path().join("probe");
        File::create(&probe).unwrap();
        let expected = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, expected);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_output(&p, |w| w.write_all(b"b\n")).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(read(&p), "b\n");
    }

    #[test]
    fn symlink_target_is_replaced_not_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.txt");
        symlink("real.txt", &link).unwrap();
        write_output(&link, |w| w.write_all(b"new")).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(read(&target), "new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling");
        symlink("made.txt", &dangling).unwrap();
        write_output(&dangling, |w| w.write_all(b"x")).unwrap();
        assert_eq!(read(&dir.path().join("made.txt")), "x");
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn devices_and_descriptors_are_written_in_place() {
        assert_eq!(resolve(Path::new("-")).unwrap(), Target::Stdout);
        assert_eq!(resolve(Path::new("/dev/stdout")).unwrap(), Target::Stdout);
        assert_eq!(
            resolve(Path::new("/proc/self/fd/2")).unwrap(),
            Target::Stderr
        );
        assert_eq!(
            resolve(Path::new("/dev/null")).unwrap(),
            Target::Direct(PathBuf::from("/dev/null"))
        );
        write_output(Path::new("/dev/null"), |w| w.write_all(b"gone")).unwrap();
        assert!(
            !std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_file()
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(resolve(dir.path()).is_err());
    }

    /// Free space is that of a replaced file's directory; devices and descriptors have none.
    #[test]
    fn free_bytes_are_the_directory_s_for_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(&dir.path().join("new.txt")).expect("statvfs on a temporary dir");
        assert!(free > 0);
        assert_eq!(free_bytes(Path::new("-")), None);
        assert_eq!(free_bytes(Path::new("/dev/null")), None);
    }

    #[test]
    fn failed_body_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("keep.txt");
        std::fs::write(&p, "precious").unwrap();
        let r = write_output(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk on fire"))
        });
        assert!(r.is_err());
        assert_eq!(read(&p), "precious");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let pending = PENDING.lock().unwrap();
        assert!(!pending.iter().any(|t| t.starts_with(dir.path())));
    }

    #[test]
    fn same_file_is_refused_by_inode_not_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.txt");
        std::fs::write(&data, "1 1:1\n").unwrap();
        let other = dir.path().join("sub/../data.txt");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let link = dir.path().join("alias");
        symlink(&data, &link).unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&data, &hard).unwrap();
        for out in [&data, &other, &link, &hard] {
            let e = RunFiles::new()
                .input("training data", &data)
                .output("model file", out)
                .check()
                .unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("model file") && msg.contains("training data"),
                "{msg}"
            );
            assert!(e.is_user_error());
        }
        // Two new outputs spelled differently.
        let a = dir.path().join("m.model");
        let b = dir.path().join("sub/../m.model");
        assert!(
            RunFiles::new()
                .output("model file", &a)
                .output("trace", &b)
                .check()
                .is_err()
        );
        // Outputs in directories that do not exist yet (made by the run).
        let deep = dir.path().join("new/dir/table.md");
        RunFiles::new()
            .input("training data", &data)
            .output("table", &deep)
            .output("plot", &dir.path().join("new/dir/plot.svg"))
            .check()
            .unwrap();
        assert!(
            RunFiles::new()
                .output("table", &deep)
                .output("plot", &dir.path().join("sub/../new/dir/table.md"))
                .check()
                .is_err()
        );
        // Distinct files, devices named twice, and inputs named twice are fine.
        RunFiles::new()
            .input("training data", &data)
            .input("test data", &data)
            .output("model file", &a)
            .output("trace", Path::new("/dev/null"))
            .output("predictions", Path::new("/dev/null"))
            .check()
            .unwrap();
    }
}
