//! Where a stack's spec comes from: exectl.yaml (`--config`, else ./exectl.yaml when present), the spec's
//! flags over it, and the images file over both. Read when a deploy begins; sweep reads it again at each
//! point, so an edit between points is seen.

use std::path::{Path, PathBuf};

use exectl_core::error::UsageError;
use exectl_core::spec::{self, SpecInput};

#[derive(Debug, Clone, Default)]
pub struct SpecSource {
    /// exectl.yaml's path (must exist). None: ./exectl.yaml when present, else nothing.
    pub config: Option<PathBuf>,
    /// The settings given besides the file (flags, or a program's), which override it.
    pub flags: SpecInput,
    /// The images file (service → image reference), read over both.
    pub images: Option<PathBuf>,
}

impl SpecSource {
    /// The spec input as the files are now, not resolved (sweep sets its variable on it first).
    pub fn read(&self) -> Result<SpecInput, UsageError> {
        self.over(read_spec_file(self.config.as_deref())?)
    }

    /// The flags and the images file over an exectl.yaml already read.
    pub fn over(&self, file: SpecInput) -> Result<SpecInput, UsageError> {
        let mut flags = self.flags.clone();
        if let Some(path) = &self.images {
            flags.images = read_images_file(path)?;
        }
        Ok(file.overridden_by(flags))
    }
}

/// Read exectl.yaml: the given path (must exist), else ./exectl.yaml if present, else nothing.
pub fn read_spec_file(explicit: Option<&Path>) -> Result<SpecInput, UsageError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from("exectl.yaml");
            if !p.exists() {
                return Ok(SpecInput::default());
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        UsageError::new(
            "--config",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable exectl.yaml",
        )
    })?;
    spec::parse_spec_file(&path, &text)
}

/// Read the images file of `--images FILE`.
fn read_images_file(path: &Path) -> Result<Vec<(String, spec::Raw)>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::new(
            "--images",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable images file",
        )
    })?;
    spec::parse_images_file(path, &text)
}
