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
    /// An invalid parameter (C ≤ 0, γ ≤ 0, an option the algorithm does not take, …).
    #[error("invalid parameter: {0}")]
    InvalidParam(#[from] ParamError),
    /// A model file that is not a LIBSVM/fwsvm model.
    #[error("{}{}: not a valid model file: {msg}", path.display(), at_line(*line))]
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
    /// Another rank of a distributed run failed (see [`crate::dist`]): its message, so that
    /// every rank ends with it.
    #[error("{msg} (on rank {rank})")]
    OnRank {
        /// The rank that failed first.
        rank: usize,
        /// True when that rank's error came from the input or parameters (exit code 2).
        user: bool,
        /// Its message.
        msg: String,
    },
    /// A run of several fits stopped on request ([`crate::interrupt`]); says what was kept.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

/// What is wrong with a setting: the payload of [`Error::InvalidParam`], typed where a caller
/// may want to tell the cases apart (which setting, which value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// A setting that must be a positive, finite number (C, γ, ε, a class weight).
    #[error("{name} must be a positive number, got {value}")]
    NotPositive {
        /// The setting, as the user names it.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A setting that must be finite (coef0).
    #[error("{name} must be finite, got {value}")]
    NotFinite {
        /// The setting.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A class weight that is not a positive number.
    #[error("the weight of class {label} must be a positive number, got {value}")]
    ClassWeight {
        /// The class.
        label: f64,
        /// The value given.
        value: f64,
    },
    /// Per-row weights with one that is not a positive number.
    #[error(
        "{name} must be positive numbers (leave rows of weight 0 out), got {value} for row {row}"
    )]
    RowWeight {
        /// "sample weights" or "row weights".
        name: &'static str,
        /// 1-based row.
        row: usize,
        /// The value given.
        value: f64,
    },
    /// Per-row values whose count is not the number of rows.
    #[error("{got} {what} for {rows} rows")]
    Length {
        /// What was given per row.
        what: &'static str,
        /// How many were given.
        got: usize,
        /// How many rows there are.
        rows: usize,
    },
    /// An option or mode the chosen algorithm does not take.
    #[error("{option} is for {supported}, not {algorithm}")]
    Unsupported {
        /// The option or mode (`sampled iterations (sample)`, `one-class training`, …).
        option: &'static str,
        /// The algorithms that take it.
        supported: &'static str,
        /// The algorithm chosen.
        algorithm: &'static str,
    },
    /// A mode that needs another kernel.
    #[error("{option} needs {needs}, not {kernel}")]
    Kernel {
        /// The option or mode.
        option: &'static str,
        /// The kernel it needs, and why.
        needs: &'static str,
        /// The kernel given (LIBSVM's name).
        kernel: &'static str,
    },
    /// Anything else, said in words.
    #[error("{0}")]
    Other(String),
}

impl ParamError {
    /// `Ok` when `value` is a positive, finite number; else [`ParamError::NotPositive`].
    pub fn positive(name: &'static str, value: f64) -> std::result::Result<(), ParamError> {
        if value > 0.0 && value.is_finite() {
            Ok(())
        } else {
            Err(ParamError::NotPositive { name, value })
        }
    }

    /// `Ok` when `value` is finite; else [`ParamError::NotFinite`].
    pub fn finite(name: &'static str, value: f64) -> std::result::Result<(), ParamError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(ParamError::NotFinite { name, value })
        }
    }
}

/// `:N` after a file's name for a 1-based line N; nothing for 0 (the file as a whole).
fn at_line(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

impl Error {
    /// An invalid parameter said in words ([`ParamError::Other`]).
    pub fn param(msg: String) -> Self {
        Error::InvalidParam(ParamError::Other(msg))
    }

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
            Error::OnRank { user, .. } => *user,
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
