//! The library's error type: every variant says what the user must fix.

use std::path::PathBuf;

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in fwsvm, phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// File involved.
        path: PathBuf,
        /// Underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A malformed line in an input file.
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        /// File involved.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong and what was expected (includes the offending token).
        msg: String,
    },
    /// A compressed file that is corrupt or truncated.
    #[error("{}: corrupt or truncated {format} data: {msg}", path.display())]
    Decompress {
        /// File involved.
        path: PathBuf,
        /// Compression format detected from the magic bytes.
        format: &'static str,
        /// Decoder message.
        msg: String,
    },
    /// Input that is well-formed but unusable (empty file, one class, …).
    #[error("{}: {msg}", path.display())]
    InvalidData {
        /// File involved.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// An invalid parameter (C ≤ 0, γ ≤ 0, …).
    #[error("invalid parameter: {0}")]
    InvalidParam(String),
    /// A model file that is not a LIBSVM/fwsvm model.
    #[error("{}:{line}: not a valid model file: {msg}", path.display())]
    Model {
        /// File involved.
        path: PathBuf,
        /// 1-based line number (0 when the problem is the file as a whole).
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A failure of the compute backend.
    #[error("backend error: {0}")]
    Backend(String),
    /// `fwsvm check` found two backends disagreeing beyond its tolerances.
    #[error("check failed: {0}")]
    Mismatch(String),
    /// A run of several fits stopped on request ([`crate::interrupt`]); says what was kept.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl Error {
    /// True when the error comes from the user's input or parameters (exit code 2),
    /// false for runtime failures (exit code 1).
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::IsADirectory
            ),
            Error::Parse { .. }
            | Error::Decompress { .. }
            | Error::InvalidData { .. }
            | Error::InvalidParam(_)
            | Error::Model { .. } => true,
            Error::Backend(_) | Error::Mismatch(_) | Error::Interrupted(_) => false,
        }
    }

    /// Wraps an I/O error with the file it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
